import { describe, expect, it } from 'vitest';
import { resolveScope } from '../core/scope.js';
import { RUNE_TOKEN_ESTIMATOR } from '../core/token-estimator.js';
import type { LanguageModel, LanguageModelCallOptions, LanguageModelResult } from '../llm/language-model.js';
import { createWorkingMemory } from '../memory/working-memory.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { rememberConversation } from './_conversation-memory.js';
import type { MemoryBaselineSettings } from './_conversation-memory.js';
import type { EvalConversation } from './eval-dataset.js';

const scope = resolveScope({ tenantId: 'eval-test', conversationId: '1-c1', agentId: 'eval' });

const conversation: EvalConversation = {
  id: 'c1',
  index: 0,
  sessions: [
    {
      id: 's1',
      date: null,
      timestamp: null,
      messages: [
        { id: 'm1', role: 'user', content: 'We adopted a greyhound called Biscuit.' },
        { id: 'm2', role: 'assistant', content: 'Congratulations on Biscuit!' },
      ],
    },
  ],
  questions: [],
};

/** A model whose calls never answer; `started` resolves at the first call, which it records. */
function hangingModel(options: { readonly honoursAbort: boolean }) {
  const calls: LanguageModelCallOptions[] = [];
  let callMade: () => void = () => {};
  const started = new Promise<void>((resolve) => (callMade = resolve));
  const model: LanguageModel = {
    specificationVersion: 'v1',
    provider: 'mock',
    modelId: 'hanging',
    doGenerate(call) {
      calls.push(call);
      callMade();
      return new Promise<LanguageModelResult>((_, reject) => {
        if (options.honoursAbort)
          call.abortSignal?.addEventListener('abort', () => reject(call.abortSignal?.reason), { once: true });
      });
    },
  };
  return { model, calls, started };
}

function settings(model: LanguageModel): MemoryBaselineSettings {
  const store = createInMemoryStore();
  return {
    model,
    store,
    workingMemory: createWorkingMemory({ store }),
    runStore: undefined,
    historyMaxTokens: 0,
    thresholds: { observeMinTokens: 1, snippetMaxTokens: 900, reflectThresholdTokens: 4000 },
    redactSecrets: true,
    toolImportanceCap: undefined,
    leaseMs: 300_000,
    retryDelayMs: 1,
    keep: true,
    estimator: RUNE_TOKEN_ESTIMATOR,
  };
}

describe('eval conversation memory: a stop during the observer call', () => {
  it('stops at once even when the model call in flight does not end', async () => {
    const { model, started } = hangingModel({ honoursAbort: false });
    const controller = new AbortController();
    const remembering = rememberConversation(settings(model), scope, conversation, controller.signal);
    await started;
    controller.abort(new Error('stopped by the user'));
    await expect(remembering).rejects.toThrow('stopped by the user');
  });

  it('aborts the model call in flight, so nothing is left waiting for its answer', async () => {
    const { model, calls, started } = hangingModel({ honoursAbort: true });
    const controller = new AbortController();
    const remembering = rememberConversation(settings(model), scope, conversation, controller.signal);
    await started;
    controller.abort(new Error('stopped by the user'));
    await expect(remembering).rejects.toThrow('stopped by the user');
    expect(calls[0]?.abortSignal?.aborted).toBe(true);
  });
});
