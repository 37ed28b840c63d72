import { describe, expect, it } from 'vitest';
import { evalMemorySettings } from '../../test/support/eval-memory-settings.js';
import { resolveScope } from '../core/scope.js';
import type { LanguageModel, LanguageModelCallOptions, LanguageModelResult } from '../llm/language-model.js';
import { rememberConversation } from './_conversation-memory.js';
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

const settings = (model: LanguageModel) => evalMemorySettings(model, { keep: true });

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
