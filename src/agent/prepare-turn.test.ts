import { describe, expect, it } from 'vitest';
import { HarnessMemoryError } from '../core/errors.js';
import { memoryIdOf } from '../core/scope.js';
import { createObservationalMemory } from '../memory/observational-memory.js';
import { createWorkingMemory } from '../memory/working-memory.js';
import { createInMemoryRunStore } from '../storage/in-memory-run-store.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import type { ConversationMessage, RunStore } from '../storage/run-store.js';
import { scriptedObserver } from '../../test/support/scripted-models.js';
import { createTurnPreparer } from './prepare-turn.js';

const scope = { tenantId: 'tenant-t', conversationId: 'conv-turn', agentId: 'agent-x' };
const memoryId = memoryIdOf(scope);

const message = (
  messageId: string,
  role: ConversationMessage['role'],
  content: string,
  extra: Partial<ConversationMessage> = {},
): ConversationMessage => ({
  messageId,
  runId: messageId.split(':')[0] ?? 'run',
  role,
  content,
  tokenCount: Math.ceil(content.length / 4),
  ...extra,
});

async function setup() {
  const store = createInMemoryStore();
  const observationalMemory = createObservationalMemory({
    store,
    observer: scriptedObserver('IMPORTANCE: 0.9\nUser prefers tabs.'),
    defaultEnabled: true,
    defaults: { observeMinTokens: 1 },
  });
  const workingMemory = createWorkingMemory({ store });
  const runStore = createInMemoryRunStore();
  await workingMemory.set(scope, 'plan', { step: 1 });
  await observationalMemory.observe({ scope, messages: [{ id: 'seed', role: 'user', content: 'I prefer tabs.' }] });
  return { store, observationalMemory, workingMemory, runStore };
}

describe('prepareTurn', () => {
  it('puts the system prompt, working memory, observational memory, the history, then the transcript', async () => {
    const { observationalMemory, workingMemory, runStore } = await setup();
    await runStore.appendMessages(memoryId, [
      message('r1:user', 'user', 'earlier question'),
      message('r1:assistant', 'assistant', 'earlier answer'),
    ]);
    const own = [message('r2:user', 'user', 'current question')];
    // The current run's messages are stored too: the history leaves them out.
    await runStore.appendMessages(memoryId, own);
    const preparer = createTurnPreparer({ observationalMemory, workingMemory, runStore });
    const turn = await preparer.prepareTurn(scope, { systemPrompt: 'You are a coder.', transcript: own });
    expect(turn.messages.map((item) => [item.role, item.content.split('\n')[0]])).toEqual([
      ['system', 'You are a coder.'],
      ['system', '<working-memory>'],
      ['system', '<observational-memory>'],
      ['user', 'earlier question'],
      ['assistant', 'earlier answer'],
      ['user', 'current question'],
    ]);
    expect(turn.snippets.workingMemory).toBe(turn.messages[1]?.content);
    expect(turn.snippets.observationalMemory).toContain('User prefers tabs.');
    expect(turn.history.map((item) => item.messageId)).toEqual(['r1:user', 'r1:assistant']);
    expect(turn.failures).toEqual([]);
  });

  it('keeps the history within its budget but never cuts the transcript', async () => {
    const { observationalMemory, workingMemory, runStore } = await setup();
    await runStore.appendMessages(
      memoryId,
      Array.from({ length: 10 }, (_, index) =>
        message(`r1:${index}`, index % 2 === 0 ? 'user' : 'assistant', 'x'.repeat(40)),
      ),
    );
    const own = [message('r2:user', 'user', 'y'.repeat(400))];
    const preparer = createTurnPreparer({ observationalMemory, workingMemory, runStore, historyMaxTokens: 30 });
    const turn = await preparer.prepareTurn(scope, { transcript: own });
    expect(turn.history.map((item) => item.messageId)).toEqual(['r1:7', 'r1:8', 'r1:9']);
    expect(turn.messages.at(-1)).toEqual({ role: 'user', content: 'y'.repeat(400) });
    expect(
      await createTurnPreparer({ observationalMemory, workingMemory })
        .prepareTurn(scope, { transcript: own })
        .then((result) => result.history),
    ).toEqual([]);
  });

  it(
    'leaves out tool calls without results and results without calls, so a strict server accepts the ' +
      'history (issue 12)',
    async () => {
      const { observationalMemory, workingMemory, runStore } = await setup();
      const call = (id: string) => ({ id, name: 'working_memory', arguments: '{}' });
      await runStore.appendMessages(memoryId, [
        message('r1:user', 'user', 'go'),
        // A cancelled step: two calls, one result.
        message('r1:assistant:1', 'assistant', '', { toolCalls: [call('c1'), call('c2')] }),
        message('r1:tool:1:c1', 'tool', '{"ok":true}', { toolCallId: 'c1' }),
      ]);
      const preparer = createTurnPreparer({ observationalMemory, workingMemory, runStore });
      const turn = await preparer.prepareTurn(scope, { transcript: [message('r2:user', 'user', 'again')] });
      expect(
        turn.messages
          .filter((item) => item.role !== 'system')
          .map((item) => [item.role, item.toolCalls?.map((entry) => entry.id) ?? item.toolCallId ?? item.content]),
      ).toEqual([
        ['user', 'go'],
        ['assistant', ['c1']],
        ['tool', 'c1'],
        ['user', 'again'],
      ]);
    },
  );

  it('sends each message with exactly its role, content, answered call id and tool calls', async () => {
    const { observationalMemory, workingMemory, runStore } = await setup();
    const call = { id: 'c1', name: 'working_memory', arguments: '{}' };
    const stored = [
      message('r1:user', 'user', 'go'),
      message('r1:assistant:1', 'assistant', 'checking', { toolCalls: [call] }),
      message('r1:tool:1:c1', 'tool', '{"ok":true}', { toolCallId: 'c1' }),
      message('r1:assistant:2', 'assistant', 'done', { toolCalls: [] }),
    ];
    await runStore.appendMessages(memoryId, stored);
    const preparer = createTurnPreparer({ observationalMemory, workingMemory, runStore });
    const turn = await preparer.prepareTurn(scope);
    expect(turn.messages.filter((item) => item.role !== 'system')).toStrictEqual([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: 'checking', toolCalls: [call] },
      { role: 'tool', content: '{"ok":true}', toolCallId: 'c1' },
      { role: 'assistant', content: 'done' },
    ]);
    // Without a transcript, the history is the whole paired conversation as stored.
    expect(turn.history.map((item) => item.messageId)).toEqual(stored.map((item) => item.messageId));
  });

  it('keeps a stored call answered in the transcript, and reports only the stored part as history', async () => {
    const { observationalMemory, workingMemory, runStore } = await setup();
    const call = { id: 'c9', name: 'working_memory', arguments: '{}' };
    await runStore.appendMessages(memoryId, [
      message('r1:user', 'user', 'go'),
      message('r1:assistant:1', 'assistant', '', { toolCalls: [call] }),
    ]);
    const transcript = [
      message('r1:tool:1:c9', 'tool', '{"ok":true}', { toolCallId: 'c9' }),
      message('r1:assistant:2', 'assistant', 'done'),
    ];
    const preparer = createTurnPreparer({ observationalMemory, workingMemory, runStore });
    const turn = await preparer.prepareTurn(scope, { transcript });
    expect(turn.messages.filter((item) => item.role !== 'system').map((item) => item.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(turn.history.map((item) => item.messageId)).toEqual(['r1:user', 'r1:assistant:1']);
  });

  it('goes on without a snippet that cannot be built, and says which (issue 12)', async () => {
    const { observationalMemory, runStore } = await setup();
    const broken = createInMemoryStore();
    await broken.dispose();
    const preparer = createTurnPreparer({
      observationalMemory,
      workingMemory: createWorkingMemory({ store: broken }),
      runStore,
    });
    const turn = await preparer.prepareTurn(scope, {
      systemPrompt: 'sys',
      transcript: [message('r1:user', 'user', 'hi')],
    });
    expect(
      turn.failures.map((failure) => [
        failure.source,
        HarnessMemoryError.isInstance(failure.error) ? failure.error.code : '',
      ]),
    ).toEqual([['working_memory', 'STORE_DISPOSED']]);
    expect(turn.messages.map((item) => item.content.split('\n')[0])).toEqual(['sys', '<observational-memory>', 'hi']);
  });

  // The generation comes with the history when the store reads both at once (recentHistory),
  // else from a read of its own: with a store without recentHistory, and with no history budget.
  for (const variant of ['with recentHistory', 'without recentHistory', 'without a history budget'] as const) {
    it(`refuses a turn of work that began before the conversation was forgotten (${variant})`, async () => {
      const { observationalMemory, workingMemory, runStore: inner } = await setup();
      const reads = { generation: 0, history: 0, recent: 0 };
      const runStore: RunStore = {
        ...inner,
        conversationGeneration: (id) => (reads.generation++, inner.conversationGeneration(id)),
        recentMessages: (id, tokens) => (reads.recent++, inner.recentMessages(id, tokens)),
        recentHistory:
          variant === 'with recentHistory'
            ? (id, tokens) => (
                reads.history++,
                (inner.recentHistory as NonNullable<typeof inner.recentHistory>)(id, tokens)
              )
            : undefined,
      };
      const preparer = createTurnPreparer({
        observationalMemory,
        workingMemory,
        runStore,
        ...(variant === 'without a history budget' ? { historyMaxTokens: 0 } : {}),
      });
      await runStore.appendMessages(memoryId, [message('r0:user', 'user', 'kept from before')]);
      const generation = await runStore.conversationGeneration(memoryId);
      reads.generation = 0;
      const first = await preparer.prepareTurn(scope, { generation });
      expect(first.history.map((item) => item.messageId)).toEqual(
        variant === 'without a history budget' ? [] : ['r0:user'],
      );
      expect(reads).toEqual(
        variant === 'with recentHistory'
          ? { generation: 0, history: 1, recent: 0 }
          : variant === 'without recentHistory'
            ? { generation: 1, history: 0, recent: 1 }
            : { generation: 1, history: 0, recent: 0 },
      );
      await runStore.forgetConversation(memoryId);
      await expect(
        preparer.prepareTurn(scope, { generation, transcript: [message('r1:user', 'user', 'forgotten prompt')] }),
      ).rejects.toSatisfy((error: unknown) => HarnessMemoryError.isInstance(error) && error.code === 'SCOPE_FORGOTTEN');
      // Work that began after the forget goes on.
      const after = await runStore.conversationGeneration(memoryId);
      expect((await preparer.prepareTurn(scope, { generation: after })).history).toEqual([]);
    });
  }
});

describe('createTurnPreparer: options', () => {
  it('refuses missing or wrong parts at the call, naming the option', async () => {
    const store = createInMemoryStore();
    const observationalMemory = createObservationalMemory({ store });
    const workingMemory = createWorkingMemory({ store });
    const refused = (options: unknown, option: string) =>
      expect(() => createTurnPreparer(options as Parameters<typeof createTurnPreparer>[0])).toThrow(
        expect.objectContaining({ code: 'OPTION_INVALID', data: { factory: 'createTurnPreparer', option } }),
      );
    refused(undefined, 'options');
    refused({}, 'observationalMemory');
    refused({ observationalMemory }, 'workingMemory');
    refused({ observationalMemory, workingMemory, runStore: {} }, 'runStore');
    refused({ observationalMemory, workingMemory, estimator: {} }, 'estimator');
    expect(() => createTurnPreparer({ observationalMemory, workingMemory })).not.toThrow();
  });
});
