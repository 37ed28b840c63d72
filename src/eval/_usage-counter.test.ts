import { describe, expect, it } from 'vitest';
import { RUNE_TOKEN_ESTIMATOR } from '../core/token-estimator.js';
import type { LanguageModel, LanguageModelResult } from '../llm/language-model.js';
import { withUsageCounter } from './_usage-counter.js';
import type { TokenUsage } from './_usage-counter.js';

function modelReporting(usage: LanguageModelResult['usage'], text: string): LanguageModel {
  return {
    specificationVersion: 'v1',
    provider: 'test',
    modelId: 'm',
    doGenerate: async () => ({ text, toolCalls: [], finishReason: 'stop', usage }),
  };
}

describe('eval usage counter', () => {
  it('sums the usage the server reports over calls', async () => {
    const usage: TokenUsage = { inputTokens: 0, outputTokens: 0 };
    const model = withUsageCounter(
      modelReporting({ inputTokens: 120, outputTokens: 30 }, 'ok'),
      usage,
      RUNE_TOKEN_ESTIMATOR,
    );
    await model.doGenerate({ messages: [{ role: 'user', content: 'hi' }] });
    await model.doGenerate({ messages: [{ role: 'user', content: 'hi' }] });
    expect(usage).toEqual({ inputTokens: 240, outputTokens: 60 });
    expect(model).toMatchObject({ provider: 'test', modelId: 'm' });
  });

  it('estimates the prompt and the answer when the server reports no usage', async () => {
    const usage: TokenUsage = { inputTokens: 0, outputTokens: 0 };
    const model = withUsageCounter(
      modelReporting({ inputTokens: 0, outputTokens: 0 }, 'twelve chars'),
      usage,
      RUNE_TOKEN_ESTIMATOR,
    );
    await model.doGenerate({
      messages: [
        { role: 'system', content: 'x'.repeat(40) },
        { role: 'user', content: 'y'.repeat(20) },
      ],
    });
    expect(usage).toEqual({ inputTokens: 15, outputTokens: 3 });
  });

  it('counts nothing for a call that fails', async () => {
    const usage: TokenUsage = { inputTokens: 0, outputTokens: 0 };
    const failing: LanguageModel = {
      specificationVersion: 'v1',
      provider: 'test',
      modelId: 'm',
      doGenerate: () => Promise.reject(new Error('down')),
    };
    await expect(withUsageCounter(failing, usage, RUNE_TOKEN_ESTIMATOR).doGenerate({ messages: [] })).rejects.toThrow(
      'down',
    );
    expect(usage).toEqual({ inputTokens: 0, outputTokens: 0 });
  });
});
