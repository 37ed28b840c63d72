/** The conformance suite every `RunStore` adapter runs. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HarnessMemoryError } from '../core/errors.js';
import { memoryIdOf } from '../core/scope.js';
import type { ConversationMessage, RunRecord, RunStore } from './run-store.js';

/** Options of {@link runRunStoreSuite}. */
export interface RunStoreSuiteOptions {
  name: string;
  create: () => Promise<RunStore> | RunStore;
  cleanup?: () => Promise<void> | void;
  /**
   * A second store on the same database as the last one `create` made (another process or replica), when the
   * adapter has one.
   */
  openPeer?: () => Promise<RunStore> | RunStore;
  /** Test names to skip, each with the reason (an optional method the store does not have). */
  skip?: Readonly<Record<string, string>>;
}

const scope = { tenantId: 't', conversationId: 'c', agentId: 'a' };

/** A queued run of scope t/c/a, as `createRun` takes it. */
export function newRun(runId: string): Omit<RunRecord, 'createdAt' | 'updatedAt'> {
  return {
    runId,
    scope,
    status: 'queued',
    prompt: 'p',
    model: '',
    systemPrompt: '',
    maxSteps: 5,
    output: null,
    error: null,
    steps: 0,
    usage: { inputTokens: 0, outputTokens: 0 },
    parentRunId: null,
  };
}

function message(id: string, tokenCount: number, role: ConversationMessage['role'] = 'user'): ConversationMessage {
  return { messageId: id, runId: 'run_1', role, content: `content ${id}`, tokenCount };
}

/** Runs the shared run-store conformance tests. */
export function runRunStoreSuite(options: RunStoreSuiteOptions): void {
  describe(`run store: ${options.name}`, () => {
    let store: RunStore;
    beforeEach(async () => {
      store = await options.create();
    });
    afterEach(async () => {
      await store.dispose();
      await options.cleanup?.();
    });
    const test = (name: string, body: () => Promise<void>): void => {
      const reason = options.skip?.[name];
      if (reason !== undefined) it.skip(`${name} (skipped: ${reason})`, body);
      else it(name, body);
    };

    test('lists a tenant runs newest first, by conversation, agent and status, in pages', async () => {
      const made = (runId: string, tenantId: string, conversationId: string, agentId = 'a') =>
        store.createRun({ ...newRun(runId), scope: { tenantId, conversationId, agentId } });
      for (let index = 1; index <= 5; index++) await made(`run_${index}`, 't', index % 2 === 0 ? 'even' : 'odd');
      await made('run_6', 'other', 'odd');
      await store.updateRun('run_3', { status: 'completed' });
      const ids = (runs: readonly RunRecord[]) => runs.map((run) => run.runId);
      expect(ids(await store.listRuns({ tenantId: 't', limit: 10 }))).toEqual([
        'run_5',
        'run_4',
        'run_3',
        'run_2',
        'run_1',
      ]);
      expect(ids(await store.listRuns({ tenantId: 't', conversationId: 'even', limit: 10 }))).toEqual([
        'run_4',
        'run_2',
      ]);
      expect(ids(await store.listRuns({ tenantId: 't', status: 'completed', limit: 10 }))).toEqual(['run_3']);
      expect(ids(await store.listRuns({ tenantId: 't', agentId: 'nobody', limit: 10 }))).toEqual([]);
      expect(ids(await store.listRuns({ tenantId: 'other', limit: 10 }))).toEqual(['run_6']);
      const seen: string[] = [];
      let before: { createdAt: string; runId: string } | undefined;
      for (;;) {
        const page = await store.listRuns({ tenantId: 't', limit: 2, ...(before ? { before } : {}) });
        seen.push(...ids(page));
        const last = page.at(-1);
        if (page.length < 2 || !last) break;
        before = { createdAt: last.createdAt, runId: last.runId };
      }
      expect(seen).toEqual(['run_5', 'run_4', 'run_3', 'run_2', 'run_1']);
    });

    test('refuses a run id already stored with STORE_CONFLICT, and changes nothing of that run', async () => {
      const first = await store.createRun(newRun('run_1'));
      await store.appendEvent('run_1', 'run.started', { n: 1 });
      const again = store.createRun({
        ...newRun('run_1'),
        prompt: "another tenant's prompt",
        scope: { tenantId: 'other', conversationId: 'c', agentId: 'a' },
      });
      await expect(again).rejects.toMatchObject({ code: 'STORE_CONFLICT', data: { runId: 'run_1' } });
      await expect(again).rejects.toThrow(/Run run_1 already exists/);
      expect(await store.getRun('run_1')).toEqual(first);
      expect((await store.listEvents('run_1', -1)).map((event) => event.type)).toEqual(['run.started']);
      expect(await store.listRuns({ tenantId: 'other', limit: 10 })).toEqual([]);
    });

    test('creates, reads and updates runs', async () => {
      const created = await store.createRun(newRun('run_1'));
      expect(created).toMatchObject({ runId: 'run_1', status: 'queued', scope });
      const updated = await store.updateRun('run_1', {
        status: 'running',
        output: 'answer',
        error: null,
        steps: 2,
        usage: { inputTokens: 3, outputTokens: 4 },
      });
      expect(updated).toMatchObject({
        status: 'running',
        output: 'answer',
        steps: 2,
        usage: { inputTokens: 3, outputTokens: 4 },
      });
      expect(await store.getRun('run_1')).toEqual(updated);
      // A patch changes the fields it names and keeps the others.
      const partial = await store.updateRun('run_1', { error: { code: 'X', message: 'boom' } });
      expect(partial).toMatchObject({
        status: 'running',
        output: 'answer',
        error: { code: 'X', message: 'boom' },
        steps: 2,
        usage: { inputTokens: 3, outputTokens: 4 },
      });
      const cleared = await store.updateRun('run_1', { output: null, error: null, steps: 3 });
      expect(cleared).toMatchObject({ status: 'running', output: null, error: null, steps: 3 });
      expect(cleared.usage).toEqual({ inputTokens: 3, outputTokens: 4 });
      expect(await store.getRun('run_1')).toEqual(cleared);
      const failed = await store.updateRun('run_1', { status: 'failed', error: { code: 'X', message: 'boom' } });
      expect(failed).toMatchObject({ status: 'failed', error: { code: 'X', message: 'boom' }, steps: 3 });
      expect(await store.getRun('run_1')).toEqual(failed);
      expect(await store.getRun('run_2')).toBeUndefined();
      await expect(store.updateRun('run_2', { status: 'failed' })).rejects.toThrow();
    });

    test('numbers events per run from 0, even when appended concurrently', async () => {
      await store.createRun(newRun('run_1'));
      await store.createRun(newRun('run_2'));
      await Promise.all(Array.from({ length: 30 }, (_, index) => store.appendEvent('run_1', 'test.event', { index })));
      const other = await store.appendEvent('run_2', 'x', {});
      const events = await store.listEvents('run_1', -1);
      expect(events.map((event) => event.seq)).toEqual(Array.from({ length: 30 }, (_, index) => index));
      expect(events[3]?.id).toBe('run_1:3');
      expect(other.seq).toBe(0);
      expect((await store.listEvents('run_1', 27)).map((event) => event.seq)).toEqual([28, 29]);
      expect(events[0]?.payload).toEqual({ index: expect.any(Number) });
    });

    test('lists nothing after a seq past any the run sent, however large (a Last-Event-ID of 15 digits)', async () => {
      await store.createRun(newRun('run_1'));
      await store.appendEvent('run_1', 'test.event', {});
      for (const after of [2 ** 31 - 1, 2 ** 31, 999_999_999_999_999])
        expect(await store.listEvents('run_1', after), String(after)).toEqual([]);
    });

    test('refuses an event or an update for a run that does not exist, and stores nothing', async () => {
      await expect(store.appendEvent('run_missing', 'x', {})).rejects.toThrow(/Run run_missing does not exist/);
      await expect(store.updateRun('run_missing', { status: 'failed' })).rejects.toThrow(
        /Run run_missing does not exist/,
      );
      expect(await store.listEvents('run_missing', -1)).toEqual([]);
      expect(await store.getRun('run_missing')).toBeUndefined();
    });

    test('refuses a count, an event seq or a listing time it cannot store or compare, naming it, alike', async () => {
      const created = await store.createRun(newRun('run_1'));
      const refused = async (work: Promise<unknown>, factory: string, option: string) =>
        expect(work, `${factory} ${option}`).rejects.toMatchObject({
          code: 'OPTION_INVALID',
          data: { factory, option },
        });
      for (const steps of [1.5, -1, Number.NaN, 2 ** 31, '2'])
        await refused(store.updateRun('run_1', { steps: steps as number }), 'updateRun', 'steps');
      await refused(
        store.updateRun('run_1', { usage: { inputTokens: 1.5, outputTokens: 0 } }),
        'updateRun',
        'usage.inputTokens',
      );
      await refused(
        store.updateRun('run_1', { usage: { inputTokens: 0, outputTokens: -1 } }),
        'updateRun',
        'usage.outputTokens',
      );
      await refused(store.updateRun('run_1', { usage: null as never }), 'updateRun', 'usage');
      await refused(store.createRun({ ...newRun('run_2'), steps: 0.5 }), 'createRun', 'steps');
      await refused(
        store.createRun({ ...newRun('run_2'), maxSteps: Number.POSITIVE_INFINITY }),
        'createRun',
        'maxSteps',
      );
      expect(await store.getRun('run_1')).toEqual(created);
      expect(await store.getRun('run_2')).toBeUndefined();
      // A count named with no value is left as it is, as if not named.
      const kept = await store.updateRun('run_1', { steps: undefined, usage: undefined, status: 'running' });
      expect(kept).toMatchObject({ status: 'running', steps: 0, usage: { inputTokens: 0, outputTokens: 0 } });

      await store.appendEvent('run_1', 'test.event', {});
      for (const afterSeq of [1.5, Number.NaN, Number.NEGATIVE_INFINITY, 2 ** 63])
        await refused(store.listEvents('run_1', afterSeq), 'listEvents', 'afterSeq');
      expect(await store.listEvents('run_1', -5)).toHaveLength(1);

      // Only a createdAt as the store answered it: SQLite compares text, Postgres times.
      const page = (createdAt: string) => store.listRuns({ tenantId: 't', limit: 5, before: { createdAt, runId: '' } });
      for (const createdAt of [
        'garbage',
        '2999-01-01T00:00:00Z',
        '2999-01-01T00:00:00.000+00:00',
        '0000-01-01T00:00:00.000Z',
      ])
        await refused(page(createdAt), 'listRuns', 'before.createdAt');
      expect((await page('2999-01-01T00:00:00.000Z')).map((run) => run.runId)).toEqual(['run_1']);
      expect(await page(created.createdAt)).toEqual([]);
    });

    test('keeps its own JSON copy of what it is given and answers copies no caller change reaches', async () => {
      // Whatever a caller does with the objects it passed or got back (a store may have frozen them).
      const tryToChange = (change: () => void): void => {
        try {
          change();
        } catch {
          // Frozen: refused, which is as good.
        }
      };
      const scopeGiven = { ...scope };
      await store.createRun({ ...newRun('run_1'), scope: scopeGiven });
      scopeGiven.conversationId = 'changed';
      const usage = { inputTokens: 1, outputTokens: 2 };
      await store.updateRun('run_1', { usage });
      usage.inputTokens = 99;
      const read = await store.getRun('run_1');
      tryToChange(() => Object.assign(read?.usage ?? {}, { outputTokens: 99 }));
      expect(await store.getRun('run_1')).toMatchObject({ scope, usage: { inputTokens: 1, outputTokens: 2 } });
      expect(await store.listRuns({ tenantId: 't', conversationId: 'c', limit: 5 })).toHaveLength(1);

      const payload: Record<string, unknown> = {
        at: new Date(0),
        n: Number.NaN,
        gone: undefined,
        inner: { w: 1 },
        list: [1],
      };
      // As JSON keeps it, which is what a SQL store keeps.
      const stored = { at: '1970-01-01T00:00:00.000Z', n: null, inner: { w: 1 }, list: [1] };
      const appended = await store.appendEvent('run_1', 'test.event', payload);
      (payload['inner'] as { w: number }).w = 2;
      (payload['list'] as number[]).push(2);
      expect(appended.payload).toStrictEqual(stored);
      const [listed] = await store.listEvents('run_1', -1);
      expect(listed?.payload).toStrictEqual(stored);
      tryToChange(() => Object.assign(listed?.payload['inner'] ?? {}, { w: 3 }));
      tryToChange(() => (appended.payload['list'] as number[]).push(3));
      expect((await store.listEvents('run_1', -1))[0]?.payload).toStrictEqual(stored);

      const toolCalls = [{ id: 'c1', name: 'read', arguments: '{}' }];
      await store.appendMessages('m1', [{ ...message('a', 1, 'assistant'), name: undefined, toolCalls }]);
      toolCalls[0] = { id: 'c2', name: 'other', arguments: '{}' };
      const [first] = await store.recentMessages('m1', 100);
      expect(first && 'name' in first).toBe(false);
      expect(first?.toolCalls).toEqual([{ id: 'c1', name: 'read', arguments: '{}' }]);
    });

    test('keeps conversation history, skips known ids, and returns the recent part within a budget', async () => {
      await store.appendMessages('m1', [
        message('a', 10),
        message('b', 10),
        message('c', 10, 'tool'),
        message('d', 10, 'assistant'),
      ]);
      await store.appendMessages('m1', [message('b', 10), message('e', 10)]);
      expect((await store.recentMessages('m1', 1000)).map((item) => item.messageId)).toEqual(['a', 'b', 'c', 'd', 'e']);
      // Three fit, but a history never starts with an orphaned tool result.
      expect((await store.recentMessages('m1', 30)).map((item) => item.messageId)).toEqual(['d', 'e']);
      expect(await store.recentMessages('m2', 1000)).toEqual([]);
      await store.forgetConversation('m1');
      expect(await store.recentMessages('m1', 1000)).toEqual([]);
    });

    test('counts a message over clipAt as clipAt tokens, so one large message does not end the history', async () => {
      await store.appendMessages('m1', [
        message('a', 10),
        message('b', 10),
        message('huge', 300_000, 'tool'),
        message('c', 10, 'assistant'),
      ]);
      const ids = (messages: ConversationMessage[]) => messages.map((item) => item.messageId);
      expect(ids(await store.recentMessages('m1', 100))).toEqual(['c']);
      expect(ids(await store.recentMessages('m1', 100, { clipAt: 25 }))).toEqual(['a', 'b', 'huge', 'c']);
      // 10 + 25 + 10: the message before the large one no longer fits.
      expect(ids(await store.recentMessages('m1', 45, { clipAt: 25 }))).toEqual(['b', 'huge', 'c']);
      // Never starts with a tool result: the clipped one goes when its call is cut off.
      expect(ids(await store.recentMessages('m1', 35, { clipAt: 25 }))).toEqual(['c']);
      const read = await store.recentHistory?.('m1', 100, { clipAt: 25 });
      if (read) expect(ids(read.messages)).toEqual(['a', 'b', 'huge', 'c']);
      // A clip as large as the message changes nothing; served again from what the store keeps.
      expect(ids(await store.recentMessages('m1', 100, { clipAt: 300_000 }))).toEqual(['c']);
      expect(ids(await store.recentMessages('m1', 100, { clipAt: 25 }))).toEqual(['a', 'b', 'huge', 'c']);
      for (const clipAt of [0, -1, 2.5, Number.NaN, '25'])
        await expect(store.recentMessages('m1', 100, { clipAt: clipAt as number })).rejects.toThrow(
          /clipAt must be a whole number of at least 1/,
        );
    });

    test(
      'returns exactly the newest messages within the budget, whatever the page sizes it read in (issue ' + '16)',
      async () => {
        // Token counts from 1 to 97, pseudo-random: budgets end inside pages, at their edges and past them.
        const all = Array.from({ length: 1_500 }, (_, index) => message(`h${index}`, 1 + ((index * 7919) % 97)));
        for (let first = 0; first < all.length; first += 250)
          await store.appendMessages('m1', all.slice(first, first + 250));
        const expected = (count: number, budget: number): string[] => {
          const kept: string[] = [];
          let used = 0;
          for (let index = count - 1; index >= 0; index--) {
            const item = all[index] as ConversationMessage;
            if (used + item.tokenCount > budget) break;
            used += item.tokenCount;
            kept.unshift(item.messageId);
          }
          return kept;
        };
        // Budgets shrinking and growing in turn, so a remembered page size is too small, right and too large.
        for (const budget of [0, 1, 50, 8_000, 120, 40_000, 60, 200_000, 2_500, 2_600, 10]) {
          expect(
            (await store.recentMessages('m1', budget)).map((item) => item.messageId),
            `budget ${budget}`,
          ).toEqual(expected(1_500, budget));
        }
        // The conversation grows between reads: the newest messages are always there.
        const more = Array.from({ length: 40 }, (_, index) => message(`n${index}`, 90));
        all.push(...more);
        await store.appendMessages('m1', more);
        expect((await store.recentMessages('m1', 2_600)).map((item) => item.messageId)).toEqual(
          expected(all.length, 2_600),
        );
        expect((await store.recentMessages('m1', 8_000)).map((item) => item.messageId)).toEqual(
          expected(all.length, 8_000),
        );
      },
    );

    test('reads recent history with the conversation generation of the same read (issue 16)', async () => {
      const recentHistory = store.recentHistory?.bind(store);
      // Every adapter of this project reads both at once; a turn then spares a read.
      expect(recentHistory).toBeTypeOf('function');
      if (!recentHistory) return;
      const ids = async (budget: number) => {
        const read = await recentHistory('m1', budget);
        return { ids: read.messages.map((item) => item.messageId), generation: read.generation };
      };
      expect(await ids(1000)).toEqual({ ids: [], generation: 0 });
      await store.appendMessages('m1', [
        message('a', 10),
        message('b', 10, 'tool'),
        message('c', 10),
        message('d', 10),
      ]);
      for (const budget of [0, 10, 25, 30, 1000])
        expect((await ids(budget)).ids, `budget ${budget}`).toEqual(
          (await store.recentMessages('m1', budget)).map((item) => item.messageId),
        );
      expect((await ids(1000)).generation).toBe(0);
      await store.forgetConversation('m1');
      const forgotten = await store.conversationGeneration('m1');
      expect(await ids(1000)).toEqual({ ids: [], generation: forgotten });
      await store.appendMessages('m1', [message('e', 10)], { generation: forgotten });
      expect(await ids(1000)).toEqual({ ids: ['e'], generation: forgotten });
      expect(await ids(0)).toEqual({ ids: [], generation: forgotten });
      expect((await recentHistory('m2', 1000)).generation).toBe(0);
    });

    test('forgets a conversation whole: its messages, runs and events, and no other conversation', async () => {
      const other = { ...scope, conversationId: 'other' };
      await store.createRun(newRun('run_a'));
      await store.appendEvent('run_a', 'run.started', { prompt: 'my secret plan' });
      await store.createRun({ ...newRun('run_b'), scope: other });
      await store.appendEvent('run_b', 'run.started', {});
      const forgotten = memoryIdOf(scope);
      await store.appendMessages(forgotten, [message('a', 10)]);
      await store.appendMessages(memoryIdOf(other), [message('b', 10)]);
      await store.forgetConversation(forgotten);
      expect(await store.getRun('run_a')).toBeUndefined();
      expect(await store.listEvents('run_a', -1)).toEqual([]);
      expect((await store.listRuns({ tenantId: 't', limit: 10 })).map((run) => run.runId)).toEqual(['run_b']);
      expect(await store.recentMessages(forgotten, 1000)).toEqual([]);
      expect((await store.getRun('run_b'))?.runId).toBe('run_b');
      expect(await store.listEvents('run_b', -1)).toHaveLength(1);
      expect((await store.recentMessages(memoryIdOf(other), 1000)).map((item) => item.messageId)).toEqual(['b']);
    });

    test('stores text holding U+0000 with U+FFFD in its place, alike on every backend', async () => {
      const created = await store.createRun({
        ...newRun('run_nul'),
        prompt: 'read\u0000me',
        systemPrompt: 's\u0000',
        error: { code: 'E', message: 'bad\u0000byte' },
      });
      expect(created).toMatchObject({ prompt: 'read\uFFFDme', systemPrompt: 's\uFFFD' });
      await store.updateRun('run_nul', { output: 'binary \u0000\u0000 file' });
      expect(await store.getRun('run_nul')).toMatchObject({
        prompt: 'read\uFFFDme',
        output: 'binary \uFFFD\uFFFD file',
        error: { code: 'E', message: 'bad\uFFFDbyte' },
      });
      await store.updateRun('run_nul', { error: { code: 'E', message: 'again\u0000' } });
      expect((await store.getRun('run_nul'))?.error?.message).toBe('again\uFFFD');
      await store.appendEvent('run_nul', 'tool.result', { text: 'a\u0000b' });
      expect((await store.listEvents('run_nul', -1))[0]?.payload).toEqual({ text: 'a\u0000b' });
      await store.appendMessages('m1', [
        {
          ...message('n\u0000', 10, 'assistant'),
          content: 'c\u0000',
          toolCalls: [{ id: 'call\u0000', name: 'read', arguments: '{"x":"\u0000"}' }],
        },
        { ...message('t', 10, 'tool'), content: '\u0000', name: 'read\u0000', toolCallId: 'call\u0000' },
      ]);
      await store.appendMessages('m1', [message('n\u0000', 10)]);
      const stored = await store.recentMessages('m1', 1000);
      expect(stored.map((item) => [item.messageId, item.content, item.name, item.toolCallId])).toEqual([
        ['n\uFFFD', 'c\uFFFD', undefined, undefined],
        ['t', '\uFFFD', 'read\uFFFD', 'call\uFFFD'],
      ]);
      expect(stored[0]?.toolCalls).toEqual([{ id: 'call\u0000', name: 'read', arguments: '{"x":"\u0000"}' }]);
    });

    test('stores text holding a lone surrogate with U+FFFD in its place, alike on every backend', async () => {
      // Half of an emoji, as a cut at 300 characters leaves in a model's error message.
      const half = '\uD83D';
      await store.createRun({
        ...newRun('run_half'),
        prompt: `p${half}`,
        error: { code: 'E', message: `${'x'.repeat(3)}${half}` },
      });
      await store.updateRun('run_half', { output: `o\uDE00${half}!` });
      expect(await store.getRun('run_half')).toMatchObject({
        prompt: 'p\uFFFD',
        output: 'o\uFFFD\uFFFD!',
        error: { code: 'E', message: 'xxx\uFFFD' },
      });
      await store.updateRun('run_half', { error: { code: 'E', message: `again${half}` } });
      expect((await store.getRun('run_half'))?.error?.message).toBe('again\uFFFD');
      await store.appendEvent('run_half', 'tool.result', { text: `a${half}b` });
      expect((await store.listEvents('run_half', -1))[0]?.payload).toEqual({ text: 'a\uD83Db' });
      await store.appendMessages('m-half', [
        {
          ...message(`n${half}`, 10, 'assistant'),
          content: `c${half}`,
          toolCalls: [{ id: 'call', name: 'read', arguments: `{"x":"${half}"}` }],
        },
      ]);
      const [stored] = await store.recentMessages('m-half', 1000);
      expect([stored?.messageId, stored?.content]).toEqual(['n\uFFFD', 'c\uFFFD']);
      expect(stored?.toolCalls?.[0]?.name).toBe('read');
    });

    test('keeps each message once when two history reads of a conversation run at once', async () => {
      await store.appendMessages('m1', [message('a', 10)]);
      await store.recentMessages('m1', 1000);
      await store.appendMessages('m1', [message('b', 10), message('c', 10)]);
      const reads = await Promise.all([store.recentMessages('m1', 1000), store.recentMessages('m1', 1000)]);
      for (const read of [...reads, await store.recentMessages('m1', 1000)])
        expect(read.map((item) => item.messageId)).toEqual(['a', 'b', 'c']);
    });

    if (options.openPeer)
      test(
        'reads history written or forgotten by another store on the same database, never a stale copy ' + '(issue 16)',
        async () => {
          const peer = await (options.openPeer as NonNullable<typeof options.openPeer>)();
          try {
            const ids = async (budget: number): Promise<string[]> =>
              (await store.recentMessages('m1', budget)).map((item) => item.messageId);
            await peer.appendMessages(
              'm1',
              Array.from({ length: 30 }, (_, index) => message(`p${index}`, 10)),
            );
            expect(await ids(100)).toEqual(Array.from({ length: 10 }, (_, index) => `p${20 + index}`));
            // Appended elsewhere after this store's read: a few, then more than one delta read takes.
            await peer.appendMessages('m1', [message('q0', 10), message('q1', 10)]);
            expect(await ids(40)).toEqual(['p28', 'p29', 'q0', 'q1']);
            await peer.appendMessages(
              'm1',
              Array.from({ length: 100 }, (_, index) => message(`r${index}`, 1)),
            );
            expect((await ids(1_000)).length).toBe(132);
            // Forgotten elsewhere, then the same number of messages written again.
            await peer.forgetConversation('m1');
            expect(await ids(1_000)).toEqual([]);
            // The generation read with the history is the forget's, though this store had the history cached.
            const generation = await peer.conversationGeneration('m1');
            expect(generation).not.toBe(0);
            expect(await store.recentHistory?.('m1', 1_000)).toEqual({ messages: [], generation });
            await peer.appendMessages(
              'm1',
              Array.from({ length: 132 }, (_, index) => message(`s${index}`, 1)),
            );
            const after = await ids(1_000);
            expect(after.length).toBe(132);
            expect(after.every((id) => id.startsWith('s'))).toBe(true);
            // Cached again here, then forgotten elsewhere with a message after: the cached path sees the new generation.
            expect((await store.recentHistory?.('m1', 1_000))?.generation).toBe(generation);
            await peer.forgetConversation('m1');
            await peer.appendMessages('m1', [message('t0', 1)]);
            const read = await store.recentHistory?.('m1', 1_000);
            expect(read?.messages.map((item) => item.messageId)).toEqual(['t0']);
            expect(read?.generation).toBe(await peer.conversationGeneration('m1'));
            expect(read?.generation).not.toBe(generation);
            expect(await ids(1_000)).toEqual(['t0']);
          } finally {
            await peer.dispose();
          }
        },
      );

    test('lists queued or running runs that stopped heartbeating, by the store clock', async () => {
      await store.createRun(newRun('run_1'));
      await store.createRun(newRun('run_2'));
      await store.updateRun('run_2', { status: 'completed' });
      // The store's own clock (the database's) cannot be faked: polled until it shows run_1 a
      // second old (the test's timeout bounds the wait).
      while ((await store.listStaleRuns(1)).length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      await store.createRun(newRun('run_3'));
      expect((await store.listStaleRuns(1)).map((run) => run.runId)).toEqual(['run_1']);
      expect(await store.listStaleRuns(3600)).toEqual([]);
      // A heartbeat (an empty update) makes a run fresh again.
      await store.updateRun('run_1', {});
      expect(await store.listStaleRuns(1)).toEqual([]);
    });

    test('abandons a stale run once, and never a run written since or finished', async () => {
      const error = { code: 'RUN_ABANDONED', message: 'gone' };
      await store.createRun(newRun('run_1'));
      await store.createRun(newRun('run_2'));
      await store.updateRun('run_2', { status: 'completed' });
      expect(await store.abandonStaleRun('run_1', 3600, error)).toBeUndefined();
      expect((await store.getRun('run_1'))?.status).toBe('queued');
      // A second sweeper (another process) racing the first: one of them gets the run.
      const [first, second] = await Promise.all([
        store.abandonStaleRun('run_1', 0, error),
        store.abandonStaleRun('run_1', 0, error),
      ]);
      expect([first, second].filter((run) => run !== undefined)).toHaveLength(1);
      expect(first ?? second).toMatchObject({ runId: 'run_1', status: 'failed', error });
      expect(await store.abandonStaleRun('run_1', 0, error)).toBeUndefined();
      expect(await store.abandonStaleRun('run_2', 0, error)).toBeUndefined();
      expect((await store.getRun('run_2'))?.status).toBe('completed');
      expect(await store.abandonStaleRun('run_missing', 0, error)).toBeUndefined();
    });

    test('deletes ended runs past the retention age with their events, oldest first, keeping messages', async () => {
      const deleteEndedRuns = store.deleteEndedRuns?.bind(store);
      // Optional in the port: a store without it skips this test (and the next) by name, saying so.
      expect(deleteEndedRuns, 'deleteEndedRuns is not implemented; list this test in `skip`').toBeTypeOf('function');
      if (!deleteEndedRuns) return;
      const statuses = ['completed', 'failed', 'cancelled', 'running', 'queued'] as const;
      for (const [index, status] of statuses.entries()) {
        const runId = `run_${index + 1}`;
        await store.createRun(newRun(runId));
        await store.appendEvent(runId, 'run.started', { n: index });
        if (status !== 'queued') await store.updateRun(runId, { status });
      }
      await store.appendMessages(memoryIdOf(scope), [message('kept', 1)]);
      const present = async () =>
        (await Promise.all(statuses.map((_, index) => store.getRun(`run_${index + 1}`))))
          .filter((run) => run !== undefined)
          .map((run) => run.runId);

      expect(await deleteEndedRuns(3600, 10)).toBe(0);
      expect(await deleteEndedRuns(0, 2)).toBe(2);
      expect(await present()).toEqual(['run_3', 'run_4', 'run_5']);
      expect(await store.listEvents('run_1', -1)).toEqual([]);
      expect(await deleteEndedRuns(0, 10)).toBe(1);
      expect(await present()).toEqual(['run_4', 'run_5']);
      expect((await store.listEvents('run_4', -1)).map((event) => event.type)).toEqual(['run.started']);
      expect((await store.recentMessages(memoryIdOf(scope), 100)).map((item) => item.messageId)).toEqual(['kept']);
      expect(await deleteEndedRuns(0, 10)).toBe(0);

      for (const [olderThanSeconds, limit] of [
        [-1, 1],
        [1.5, 1],
        [Number.NaN, 1],
        [0, 0],
        [0, 1_001],
        [0, 2.5],
      ] as const)
        await expect(deleteEndedRuns(olderThanSeconds, limit)).rejects.toMatchObject({ code: 'OPTION_INVALID' });
    });

    if (options.openPeer)
      test('deletes each ended run once when two processes delete at the same time', async () => {
        for (let index = 1; index <= 6; index++) {
          await store.createRun(newRun(`run_${index}`));
          await store.appendEvent(`run_${index}`, 'run.started', {});
          await store.updateRun(`run_${index}`, { status: 'completed' });
        }
        const peer = await options.openPeer?.();
        if (!peer?.deleteEndedRuns) throw new Error('the peer store has no deleteEndedRuns');
        try {
          const counts = await Promise.all([store.deleteEndedRuns?.(0, 4), peer.deleteEndedRuns(0, 4)]);
          expect((counts[0] ?? 0) + (counts[1] ?? 0)).toBe(6);
          expect(await store.listRuns({ tenantId: 't', limit: 10 })).toEqual([]);
        } finally {
          await peer.dispose();
        }
      });

    test('keeps a run that ended as it ended: no update, no heartbeat, only its first terminal event', async () => {
      await store.createRun(newRun('run_1'));
      await store.appendEvent('run_1', 'run.started', {});
      const completed = await store.updateRun('run_1', { status: 'completed', output: 'done', steps: 2 });
      await store.appendEvent('run_1', 'run.completed', { output: 'done' });
      // A late writer (the process that was running it, after a pause) changes nothing.
      expect(
        await store.updateRun('run_1', { status: 'failed', output: 'late', error: { code: 'X', message: 'x' } }),
      ).toEqual(completed);
      expect(await store.updateRun('run_1', {})).toEqual(completed);
      for (const type of ['assistant.message', 'run.completed', 'run.failed'])
        await expect(store.appendEvent('run_1', type, {})).rejects.toMatchObject({
          code: 'STORE_CONFLICT',
          data: { runId: 'run_1', status: 'completed' },
        });
      expect((await store.listEvents('run_1', -1)).map((event) => event.type)).toEqual([
        'run.started',
        'run.completed',
      ]);

      // Swept as abandoned while its process was paused: the sweep's run.failed is the last event.
      await store.createRun(newRun('run_2'));
      await store.updateRun('run_2', { status: 'running' });
      const error = { code: 'RUN_ABANDONED', message: 'gone' };
      const abandoned = await store.abandonStaleRun('run_2', 0, error);
      await store.appendEvent('run_2', 'run.failed', { error });
      await expect(store.appendEvent('run_2', 'run.step.completed', {})).rejects.toMatchObject({
        code: 'STORE_CONFLICT',
      });
      expect(await store.updateRun('run_2', { status: 'completed', output: 'late' })).toEqual(abandoned);
      expect((await store.getRun('run_2'))?.error).toEqual(error);
      await expect(store.appendEvent('run_missing', 'run.failed', {})).rejects.toMatchObject({ code: 'STORE_FAILED' });
    });

    test('refuses an append made before a forget, by the conversation generation (issue 12)', async () => {
      expect(await store.conversationGeneration('m1')).toBe(0);
      await store.appendMessages('m1', [message('a', 1)], { generation: 0 });
      await store.forgetConversation('m1');
      const generation = await store.conversationGeneration('m1');
      expect(generation).not.toBe(0);
      await expect(store.appendMessages('m1', [message('b', 1)], { generation: 0 })).rejects.toSatisfy(
        (error: unknown) => HarnessMemoryError.isInstance(error) && error.code === 'SCOPE_FORGOTTEN',
      );
      expect(await store.recentMessages('m1', 1000)).toEqual([]);
      await store.appendMessages('m1', [message('c', 1)], { generation });
      await store.appendMessages('m1', [message('d', 1)]);
      expect((await store.recentMessages('m1', 1000)).map((item) => item.messageId)).toEqual(['c', 'd']);
      expect(await store.conversationGeneration('m2')).toBe(0);
    });

    test('round-trips tool calls in messages', async () => {
      const withCalls: ConversationMessage = {
        messageId: 'x',
        runId: 'r',
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'c1', name: 'working_memory', arguments: '{"action":"list"}' }],
        tokenCount: 5,
      };
      await store.appendMessages('m1', [
        withCalls,
        {
          messageId: 'y',
          runId: 'r',
          role: 'tool',
          content: '{}',
          toolCallId: 'c1',
          name: 'working_memory',
          tokenCount: 1,
        },
      ]);
      const [first, second] = await store.recentMessages('m1', 100);
      expect(first?.toolCalls).toEqual(withCalls.toolCalls);
      expect(second).toMatchObject({ toolCallId: 'c1', name: 'working_memory' });
    });
  });
}
