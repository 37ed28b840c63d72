import { describe, expect, it } from 'vitest';
import { evalMemorySettings } from '../../test/support/eval-memory-settings.js';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { ModelCallError } from '../core/errors.js';
import { memoryIdOf, resolveScope } from '../core/scope.js';
import type { LanguageModelCallOptions } from '../llm/language-model.js';
import { createInMemoryRunStore } from '../storage/in-memory-run-store.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { datedContent, fullContextMemory, noMemory, rememberConversation, stepsOf } from './_conversation-memory.js';
import type { EvalConversation, EvalMessage } from './eval-dataset.js';

const scope = resolveScope({ tenantId: 'eval-test', conversationId: '1-c1', agentId: 'eval' });

const conversation: EvalConversation = {
  id: 'c1',
  index: 0,
  sessions: [
    {
      id: 'early',
      date: '2023/05/02 (Tue) 09:10',
      timestamp: Date.UTC(2023, 4, 2, 9, 10),
      messages: [
        { id: 's1m1', role: 'user', content: 'We adopted a greyhound called Biscuit.' },
        { id: 's1m2', role: 'assistant', content: 'Congratulations on Biscuit!' },
      ],
    },
    {
      id: 'late',
      date: '2023/05/14 (Sun) 18:40',
      timestamp: Date.UTC(2023, 4, 14, 18, 40),
      messages: [
        { id: 's2m1', role: 'user', content: 'Biscuit now weighs 31 kg.' },
        { id: 's2m2', role: 'assistant', content: 'A healthy weight for a greyhound.' },
      ],
    },
  ],
  questions: [],
};

function userPrompt(options: LanguageModelCallOptions): string {
  return options.messages.at(-1)?.content ?? '';
}

/** An observer model that writes one observation per call, naming the call. */
function observingModel() {
  return createMockLanguageModel((options) =>
    userPrompt(options).includes('observational memory processor')
      ? { text: 'IMPORTANCE:0.9\nThe user adopted Biscuit.' }
      : { text: 'SUMMARY:\nBiscuit.' },
  );
}

const settings = evalMemorySettings;

describe('eval conversation memory: replaying sessions', () => {
  it("groups a session into the runner's steps: each user message with the replies after it", () => {
    const message = (id: string, role: EvalMessage['role']): EvalMessage => ({ id, role, content: id });
    const steps = stepsOf([
      message('a1', 'assistant'),
      message('u1', 'user'),
      message('a2', 'assistant'),
      message('a3', 'assistant'),
      message('u2', 'user'),
      message('u3', 'user'),
    ]);
    expect(steps.map((step) => step.map((item) => item.id))).toEqual([['a1'], ['u1', 'a2', 'a3'], ['u2'], ['u3']]);
  });

  it('puts the session date on the first line of every message, and nothing when the session has none', () => {
    expect(datedContent({ date: '2023/05/02 (Tue) 09:10' }, { content: 'Hello' })).toBe(
      '(session date: 2023/05/02 (Tue) 09:10)\nHello',
    );
    expect(datedContent({ date: null }, { content: 'Hello' })).toBe('Hello');
  });

  it(
    'observes after each step, showing the observer each message with its session date, and injects what ' +
      'prepareTurn builds',
    async () => {
      const model = observingModel();
      const memory = await rememberConversation(settings(model), scope, conversation);
      const observerPrompts = model.calls
        .map(userPrompt)
        .filter((prompt) => prompt.includes('observational memory processor'));
      expect(observerPrompts).toHaveLength(2);
      expect(observerPrompts[0]).toContain(
        '[1] user: (session date: 2023/05/02 (Tue) 09:10)\n    We adopted a greyhound called Biscuit.',
      );
      expect(observerPrompts[1]).toContain(
        'user: (session date: 2023/05/14 (Sun) 18:40)\n    Biscuit now weighs 31 kg.',
      );
      // The mock reports 10 input and 5 output tokens a call.
      expect(memory.usage).toEqual({ inputTokens: 20, outputTokens: 10 });
      const injection = await memory.inject();
      expect('messages' in injection && injection.messages.map((message) => message.role)).toEqual(['system']);
      expect('messages' in injection && injection.messages[0]?.content).toMatch(
        /^<observational-memory>\n[\s\S]*The user adopted Biscuit\./,
      );
    },
  );

  it('also replays the newest history within historyMaxTokens, as the runner does', async () => {
    const runStore = createInMemoryRunStore();
    const memory = await rememberConversation(
      settings(observingModel(), { runStore, historyMaxTokens: 40 }),
      scope,
      conversation,
    );
    const injection = await memory.inject();
    const messages = 'messages' in injection ? injection.messages : [];
    expect(messages.map((message) => message.role)).toEqual(['system', 'user', 'assistant']);
    expect(messages[1]?.content).toBe('(session date: 2023/05/14 (Sun) 18:40)\nBiscuit now weighs 31 kg.');
  });

  it('forgets the conversation when disposed, unless asked to keep it', async () => {
    const store = createInMemoryStore();
    const runStore = createInMemoryRunStore();
    const forgotten = await rememberConversation(
      settings(observingModel(), { store, runStore, historyMaxTokens: 100 }),
      scope,
      conversation,
    );
    await forgotten.dispose();
    expect(await store.getRecord(memoryIdOf(scope))).toBeUndefined();
    expect(await runStore.recentMessages(memoryIdOf(scope), 1000)).toEqual([]);
    const kept = await rememberConversation(settings(observingModel(), { store, keep: true }), scope, conversation);
    await kept.dispose();
    expect((await store.getRecord(memoryIdOf(scope)))?.observationCount).toBe(2);
  });

  it('reports a memory operation that fails after its retries, and stops replaying', async () => {
    const model = createMockLanguageModel(
      new ModelCallError({ message: 'the server refused the request', statusCode: 400 }),
    );
    const memory = await rememberConversation(settings(model), scope, conversation);
    expect(model.calls).toHaveLength(1);
    expect(await memory.inject()).toEqual({
      failure: {
        message: "the memory model's observe operation failed after its retries: the server refused the request",
      },
    });
  });

  it('retries a memory operation whose model call fails once, and then remembers as usual', async () => {
    const model = observingModel();
    model.enqueue(new ModelCallError({ message: 'overloaded', statusCode: 503 }));
    const memory = await rememberConversation(settings(model), scope, conversation);
    expect('messages' in (await memory.inject())).toBe(true);
    // The failed call, then its retry, run by the next step's observe ahead of that step's own
    // operation: the retry's batch takes both steps' messages, so the second has nothing left.
    expect(model.calls.length).toBe(2);
  });

  it("sees a stop while it waits for a retry's backoff", async () => {
    const controller = new AbortController();
    const model = createMockLanguageModel(() => {
      setImmediate(() => controller.abort(new Error('stopped by the user')));
      throw new ModelCallError({ message: 'overloaded', statusCode: 503 });
    });
    const oneStep: EvalConversation = {
      ...conversation,
      sessions: [{ ...(conversation.sessions[0] as EvalConversation['sessions'][number]) }],
    };
    await expect(
      rememberConversation(settings(model, { retryDelayMs: 600_000 }), scope, oneStep, controller.signal),
    ).rejects.toThrow('stopped by the user');
    expect(model.calls).toHaveLength(1);
  });

  it('stops at once when aborted, reporting nothing', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stopped by the user'));
    const model = observingModel();
    await expect(rememberConversation(settings(model), scope, conversation, controller.signal)).rejects.toThrow(
      'stopped by the user',
    );
    expect(model.calls).toEqual([]);
  });
});

describe('eval conversation memory: the other baselines', () => {
  it('full-context gives the whole haystack as one system message; none gives nothing', async () => {
    const full = await fullContextMemory(conversation).inject();
    expect('messages' in full && full.messages.map((message) => message.content.split('\n')[1])).toEqual([
      'Session 1 (2023/05/02 (Tue) 09:10)',
    ]);
    expect(await noMemory().inject()).toEqual({ messages: [] });
    expect(noMemory().usage).toEqual({ inputTokens: 0, outputTokens: 0 });
  });
});
