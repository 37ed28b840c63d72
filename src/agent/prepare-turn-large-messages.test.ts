/**
 * The replayed history of a turn when stored messages are larger than the history budget
 * (a file read, a long prompt): they go clipped or are left out, and never end the replay.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryIdOf } from '../core/scope.js';
import { createObservationalMemory } from '../memory/observational-memory.js';
import { createWorkingMemory } from '../memory/working-memory.js';
import { createInMemoryRunStore } from '../storage/in-memory-run-store.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createRedactingRunStore } from '../storage/redacting-run-store.js';
import type { ConversationMessage, RunStore } from '../storage/run-store.js';
import { createSqliteRunStore } from '../storage/sqlite/sqlite-run-store.js';
import type { LanguageModelMessage } from '../llm/language-model.js';
import { createTurnPreparer } from './prepare-turn.js';
import type { TurnPreparerOptions } from './prepare-turn.js';

const scope = { tenantId: 'tenant-t', conversationId: 'conv-large', agentId: 'agent-x' };
const memoryId = memoryIdOf(scope);
const call = (id: string, argumentsText = '{}') => ({ id, name: 'read_file', arguments: argumentsText });
const CLIP_NOTE = /\n\[… tool output clipped: (\d+) characters not replayed\]$/;

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
  tokenCount:
    Math.ceil(content.length / 4) + (extra.toolCalls?.reduce((sum, item) => sum + item.arguments.length, 0) ?? 0),
  ...extra,
});

/** One run that read three files of 36,000 characters, then answered. */
function fileReadingRun(contentOf: (index: number) => string = (index) => `file ${index} `.padEnd(36_000, 'x')) {
  return [
    message('r1:user', 'user', 'USER_PROMPT_SENTINEL read three files'),
    ...[1, 2, 3].flatMap((index) => [
      message(`r1:assistant:${index}`, 'assistant', '', { toolCalls: [call(`c${index}`)] }),
      message(`r1:tool:${index}`, 'tool', contentOf(index), { toolCallId: `c${index}`, name: 'read_file' }),
    ]),
    message('r1:assistant:4', 'assistant', 'done'),
  ];
}

/** The problems a strict chat server answers 400 to: a call without its result, a result without its call. */
function pairingProblems(messages: readonly LanguageModelMessage[]): string[] {
  const problems: string[] = [];
  for (let index = 0; index < messages.length; index++) {
    const item = messages[index] as LanguageModelMessage;
    if (item.role === 'tool') {
      let back = index - 1;
      while (back >= 0 && messages[back]?.role === 'tool') back--;
      if (!messages[back]?.toolCalls?.some((entry) => entry.id === item.toolCallId))
        problems.push(`result ${item.toolCallId} without its call`);
    }
    for (const entry of item.toolCalls ?? []) {
      let next = index + 1;
      let answered = false;
      for (; messages[next]?.role === 'tool'; next++) if (messages[next]?.toolCallId === entry.id) answered = true;
      if (!answered) problems.push(`call ${entry.id} without its result`);
    }
  }
  return problems;
}

const opened: RunStore[] = [];
const directories: string[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.dispose?.();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

const runStores: Record<string, () => RunStore> = {
  'in memory': () => createInMemoryRunStore(),
  // Served by the history cache: the wider read goes through it too.
  sqlite: () => {
    const directory = mkdtempSync(join(tmpdir(), 'hm-large-history-'));
    directories.push(directory);
    const store = createSqliteRunStore({ path: join(directory, 'state.db') });
    opened.push(store);
    return store;
  },
};

function preparerOver(runStore: RunStore, options: Partial<TurnPreparerOptions> = {}) {
  const store = createInMemoryStore();
  return createTurnPreparer({
    observationalMemory: createObservationalMemory({ store, defaultEnabled: false }),
    workingMemory: createWorkingMemory({ store }),
    runStore,
    ...options,
  });
}

describe.each(Object.keys(runStores))('prepareTurn with messages over the history budget (%s)', (variant) => {
  const open = runStores[variant] as () => RunStore;

  it('replays large tool results clipped, and the user prompt before them, within the budget', async () => {
    const runStore = open();
    await runStore.appendMessages(memoryId, fileReadingRun());
    const own = [message('r2:user', 'user', 'SECOND_PROMPT what did I ask before?')];
    await runStore.appendMessages(memoryId, own);
    const preparer = preparerOver(runStore);
    // Twice: the second turn reads the conversation as the first left it (the wider read remembered).
    for (const turnNumber of [1, 2]) {
      const turn = await preparer.prepareTurn(scope, { transcript: own });
      const sent = turn.messages.filter((item) => item.role !== 'system');
      expect(
        sent.map((item) => item.role),
        `turn ${turnNumber}`,
      ).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant', 'tool', 'assistant', 'user']);
      expect(sent[0]?.content).toBe('USER_PROMPT_SENTINEL read three files');
      expect(pairingProblems(sent)).toEqual([]);
      for (const result of sent.filter((item) => item.role === 'tool')) {
        const [, left] = CLIP_NOTE.exec(result.content) ?? [];
        const head = result.content.replace(CLIP_NOTE, '');
        expect(result.content).toMatch(/^file \d x+/);
        expect(head.length + Number(left)).toBe(36_000);
      }
      // Within the budget: 8,000 tokens of history at 4 characters a token.
      const historyCharacters = sent.slice(0, -1).reduce((sum, item) => sum + item.content.length, 0);
      expect(historyCharacters).toBeLessThanOrEqual(8_000 * 4);
      expect(historyCharacters).toBeGreaterThan(6_000 * 4);
      // The turn's history gives the stored messages whole (what memory observes).
      expect(turn.history.map((item) => item.content.length)).toEqual(
        fileReadingRun().map((item) => item.content.length),
      );
    }
  });

  it('leaves out a tool call too large to clip with its results, and goes on to older messages', async () => {
    const runStore = open();
    await runStore.appendMessages(memoryId, [
      message('r1:user', 'user', 'USER_PROMPT_SENTINEL write the file'),
      message('r1:assistant:1', 'assistant', 'small call', { toolCalls: [call('c0')] }),
      message('r1:tool:0', 'tool', '{"ok":true}', { toolCallId: 'c0' }),
      // Its arguments alone are over the budget: nothing of it can be sent.
      message('r1:assistant:2', 'assistant', 'writing', {
        toolCalls: [call('c1', JSON.stringify({ text: 'y'.repeat(3_000) }))],
      }),
      message('r1:tool:1', 'tool', '{"written":true}', { toolCallId: 'c1' }),
      message('r1:assistant:3', 'assistant', 'written'),
    ]);
    const turn = await preparerOver(runStore, { historyMaxTokens: 400 }).prepareTurn(scope, {
      transcript: [message('r2:user', 'user', 'and now?')],
    });
    const sent = turn.messages.filter((item) => item.role !== 'system');
    expect(sent.map((item) => item.content)).toEqual([
      'USER_PROMPT_SENTINEL write the file',
      'small call',
      '{"ok":true}',
      'written',
      'and now?',
    ]);
    expect(pairingProblems(sent)).toEqual([]);
  });

  it('keeps the last user turn when the transcript has none, clipped to its share', async () => {
    const runStore = open();
    await runStore.appendMessages(memoryId, [
      message('r0:user', 'user', 'an older question'),
      message('r0:assistant', 'assistant', 'an older answer'),
      message('r1:user', 'user', `LAST_USER_TURN ${'q'.repeat(10_000)}`),
      ...Array.from({ length: 6 }, (_, index) => message(`r1:assistant:${index}`, 'assistant', 'a'.repeat(400))),
    ]);
    const turn = await preparerOver(runStore, { historyMaxTokens: 500 }).prepareTurn(scope);
    const sent = turn.messages.filter((item) => item.role !== 'system');
    expect(sent[0]?.role).toBe('user');
    expect(sent[0]?.content).toMatch(/^LAST_USER_TURN q+\n\[… message clipped: \d+ characters not replayed\]$/);
    expect(sent[0]?.content.length).toBeLessThanOrEqual(125 * 4);
    expect(sent.slice(1).map((item) => item.role)).toEqual(Array.from({ length: 5 }, () => 'assistant'));
  });

  it('reads once a turn in a long conversation of ordinary messages, clipping the one at the edge', async () => {
    const inner = open();
    const budgets: number[] = [];
    const runStore: RunStore = {
      ...inner,
      recentMessages: (id, tokens, options) => (budgets.push(tokens), inner.recentMessages(id, tokens, options)),
      recentHistory: (id, tokens, options) => (budgets.push(tokens), inner.recentHistory!(id, tokens, options)),
    };
    await runStore.appendMessages(
      memoryId,
      Array.from({ length: 400 }, (_, index) =>
        message(`r${index}:m`, index % 2 === 0 ? 'user' : 'assistant', `${index} `.padEnd(440, 'w')),
      ),
    );
    const preparer = preparerOver(runStore);
    for (const turnNumber of [1, 2, 3]) {
      budgets.length = 0;
      const turn = await preparer.prepareTurn(scope, { transcript: [message(`t${turnNumber}:user`, 'user', 'next')] });
      const sent = turn.messages.filter((item) => item.role !== 'system').slice(0, -1);
      expect(sent.at(-1)?.content).toMatch(/^399 w+$/);
      expect(sent[0]?.content).toMatch(/\n\[… message clipped: \d+ characters not replayed\]$/);
      const tokens = sent.reduce((sum, item) => sum + Math.ceil(item.content.length / 4), 0);
      expect(tokens).toBeLessThanOrEqual(8_000 + sent.length);
      expect(tokens).toBeGreaterThan(7_900);
      // The first turn of a conversation the preparer does not know reads wide; then narrow.
      expect(budgets, `turn ${turnNumber}`).toHaveLength(1);
      if (turnNumber > 1) expect(budgets[0]).toBeLessThanOrEqual(8_000 + 2_000 + 1);
    }
  });

  it('replays the history before a tool result larger than any wider read, in one read a turn', async () => {
    const inner = open();
    const clips: Array<number | undefined> = [];
    const runStore: RunStore = {
      ...inner,
      recentMessages: (id, tokens, options) => (clips.push(options?.clipAt), inner.recentMessages(id, tokens, options)),
      recentHistory: (id, tokens, options) => (clips.push(options?.clipAt), inner.recentHistory!(id, tokens, options)),
    };
    // 1.2 MB: 300,000 tokens, past 16 times the budget and the transcript.
    await runStore.appendMessages(memoryId, [
      message('r0:user', 'user', 'EARLIER_SENTINEL what is in the dump?'),
      message('r0:assistant', 'assistant', 'reading it', { toolCalls: [call('c0')] }),
      message('r0:tool', 'tool', `dump ${'z'.repeat(1_200_000)}`, { toolCallId: 'c0', name: 'read_file' }),
      message('r0:answer', 'assistant', 'it is a dump of z'),
    ]);
    const preparer = preparerOver(runStore);
    for (const turnNumber of [1, 2]) {
      clips.length = 0;
      const turn = await preparer.prepareTurn(scope, {
        transcript: [message(`t${turnNumber}:user`, 'user', 'and before that?')],
      });
      const sent = turn.messages.filter((item) => item.role !== 'system');
      expect(
        sent.map((item) => item.role),
        `turn ${turnNumber}`,
      ).toEqual(['user', 'assistant', 'tool', 'assistant', 'user']);
      expect(sent[0]?.content).toBe('EARLIER_SENTINEL what is in the dump?');
      expect(sent[2]?.content).toMatch(CLIP_NOTE);
      expect(sent[2]?.content.length).toBeLessThanOrEqual(2_000 * 4);
      expect(clips, `turn ${turnNumber}`).toEqual([2_000]);
    }
  });

  it('reads wide, without clipAt, from a run store that counts every message whole', async () => {
    const { supportsClipAt: _clips, ...inner } = open();
    const reads: Array<{ budget: number; clipAt: number | undefined }> = [];
    const runStore: RunStore = {
      ...inner,
      recentMessages: (id, tokens, options) => (
        reads.push({ budget: tokens, clipAt: options?.clipAt }),
        inner.recentMessages(id, tokens)
      ),
      recentHistory: (id, tokens, options) => (
        reads.push({ budget: tokens, clipAt: options?.clipAt }),
        inner.recentHistory!(id, tokens)
      ),
    };
    await runStore.appendMessages(memoryId, fileReadingRun());
    const turn = await preparerOver(runStore).prepareTurn(scope, { transcript: [message('r2:user', 'user', 'again')] });
    expect(turn.messages.filter((item) => item.role !== 'system')[0]?.content).toBe(
      'USER_PROMPT_SENTINEL read three files',
    );
    expect(reads).toHaveLength(1);
    expect(reads[0]?.clipAt).toBeUndefined();
    expect(reads[0]?.budget).toBeGreaterThan(8_000 * 15);
  });

  it('reads narrow, once a turn, in a long conversation of large tool results', async () => {
    const inner = open();
    const reads: Array<{ budget: number; characters: number }> = [];
    const count = (budget: number, messages: readonly ConversationMessage[]) =>
      reads.push({ budget, characters: messages.reduce((sum, item) => sum + item.content.length, 0) });
    const runStore: RunStore = {
      ...inner,
      recentMessages: async (id, tokens, options) => {
        const messages = await inner.recentMessages(id, tokens, options);
        count(tokens, messages);
        return messages;
      },
      recentHistory: async (id, tokens, options) => {
        const read = await inner.recentHistory!(id, tokens, options);
        count(tokens, read.messages);
        return read;
      },
    };
    for (let turn = 0; turn < 40; turn++)
      await runStore.appendMessages(memoryId, [
        message(`r${turn}:user`, 'user', `question ${turn}`),
        message(`r${turn}:call`, 'assistant', '', { toolCalls: [call(`c${turn}`)] }),
        message(`r${turn}:tool`, 'tool', `dump ${turn} `.padEnd(200_000, 'z'), { toolCallId: `c${turn}` }),
        message(`r${turn}:answer`, 'assistant', `answer ${turn}`),
      ]);
    const preparer = preparerOver(runStore);
    for (const turnNumber of [1, 2, 3]) {
      reads.length = 0;
      const turn = await preparer.prepareTurn(scope, { transcript: [message(`t${turnNumber}:user`, 'user', 'next')] });
      const sent = turn.messages.filter((item) => item.role !== 'system');
      expect(sent.at(-2)?.content).toBe('answer 39');
      expect(reads, `turn ${turnNumber}`).toHaveLength(1);
      expect(reads[0]?.budget).toBeLessThanOrEqual(8_000 + 2_000 + 1);
      // A few clipped results, not sixty-odd whole ones (12 MB).
      expect(reads[0]?.characters).toBeLessThan(1_500_000);
    }
  });

  it('never splits a surrogate pair, and clips the redacted text as stored', async () => {
    const secret = `sk-proj-${'Cn21_'.repeat(6)}`;
    for (const prefix of ['', 'a']) {
      const runStore = createRedactingRunStore(open());
      await runStore.appendMessages(
        memoryId,
        fileReadingRun((index) => `${prefix} ${secret} ${'😀'.repeat(index * 20_000)}`),
      );
      // Counting code units, as some tokenizers' estimates do: the best cut may fall inside a pair.
      const estimator = { estimate: (text: string) => Math.ceil(text.length / 4) };
      const turn = await preparerOver(runStore, { estimator }).prepareTurn(scope, {
        transcript: [message('r2:user', 'user', 'again')],
      });
      const results = turn.messages.filter((item) => item.role === 'tool');
      expect(results).toHaveLength(3);
      for (const result of results) {
        expect(result.content).toMatch(CLIP_NOTE);
        expect(result.content).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
        expect(result.content).not.toContain(secret);
      }
      await runStore.forgetConversation(memoryId);
    }
  });
});
