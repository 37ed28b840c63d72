import { describe, expect, it } from 'vitest';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { HarnessMemoryError } from '../core/errors.js';
import { DEFAULT_OBSERVATION_CONFIG } from '../core/observation.js';
import { acceptOutput, createModelObserver } from './model-observer.js';

const CAP = 64 * 1024;

function refusalOf(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('model output: a degenerate reflection', () => {
  it('refuses a reflection that is one line repeated, as invalid model output', () => {
    const text = `SUMMARY:\n${'The user likes tabs.\n'.repeat(3000)}`;
    expect(text.length).toBeLessThan(CAP);
    const error = refusalOf(() => acceptOutput('reflector', { text, finishReason: 'stop' } as never, CAP));
    expect(HarnessMemoryError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'MODEL_OUTPUT_INVALID', data: { role: 'reflector', reason: 'repetitive' } });
  });

  it('refuses a few lines cycled many times', () => {
    const text = `SUMMARY:\n${'- tabs\n- spaces\n- Go 1.22\n'.repeat(40)}SUPERSESSIONS:\nCONTRADICTIONS:\n`;
    expect(() => acceptOutput('reflector', { text, finishReason: 'stop' } as never, CAP)).toThrow(/repeat/);
  });

  it('accepts a reflection with some repeated lines, and a short one', () => {
    const lines = Array.from({ length: 30 }, (_, index) => `- fact ${index}`);
    const text = `SUMMARY:\n${lines.join('\n')}\n- none\n- none\n- none\nSUPERSESSIONS:\n- none\nCONTRADICTIONS:\n- none`;
    expect(acceptOutput('reflector', { text, finishReason: 'stop' } as never, CAP)).toBe(text);
    const short = 'SUMMARY:\n- none\n- none\n- none\n- none';
    expect(acceptOutput('reflector', { text: short, finishReason: 'stop' } as never, CAP)).toBe(short);
  });
});

describe('model observer: an answer with no observation in it', () => {
  const observeWith = (answer: string): Promise<unknown> =>
    createModelObserver(createMockLanguageModel(answer)).observe({
      scope: { tenantId: 't1', conversationId: 'c1', agentId: 'a1' },
      config: DEFAULT_OBSERVATION_CONFIG,
      messages: [{ seq: 1, role: 'user', content: 'We build with pnpm.' }],
      reflection: null,
      unreflected: [],
    });

  // Once "observer returned empty output", although the model had answered.
  it('says the answer held no observation in a known format, and how it began', async () => {
    const error = await observeWith('Here are the observations:\n\n---').catch((caught: unknown) => caught);
    expect(HarnessMemoryError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'MODEL_OUTPUT_INVALID', data: { role: 'observer', reason: 'empty' } });
    expect((error as Error).message).toContain(
      'observer answered without any observation in a known format (it began "Here are the observations:\\n\\n---")',
    );
    expect((error as Error).message).not.toContain('empty output');
  });

  it('shows at most 80 characters of the answer, with secrets and invisible characters removed', async () => {
    const key = `sk-proj-${'Ab3_'.repeat(8)}`;
    const error = await observeWith(`## Observations for\u202e ${key}\n\n${'#'.repeat(3)} ${'x'.repeat(200)}`).catch(
      (caught: unknown) => caught,
    );
    const message = (error as Error).message;
    expect(message).toContain('[REDACTED:');
    expect(message).not.toContain(key);
    expect(message).not.toContain('\u202e');
    expect(message).toContain('…"');
    expect(message).not.toContain('x'.repeat(81));
  });
});
