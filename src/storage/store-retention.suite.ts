/**
 * The conformance cases of operation retention (`MemoryStore.deleteSettledOperations`).
 * `runStoreSuite` runs them for every adapter; a store without the optional method lists
 * them in `skip`.
 */
import { expect } from 'vitest';
import { createUlidGenerator } from '../core/ids.js';
import { memoryIdOf } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import type { MemoryStore } from './store.js';

type Case = (name: string, body: () => Promise<void>) => void;

/** Lets `ms` pass by the store's clock; `passed` tells when it has (see `runStoreSuite`). */
type LetPass = (ms: number, passed: () => Promise<boolean>) => Promise<void>;

const generateId = createUlidGenerator();
const at = (tenantId: string, conversationId: string): Scope => ({ tenantId, conversationId, agentId: 'agent' });
const lease = { leaseOwner: 'w', leaseMs: 60_000 };

/** Registers the cases with `test`, each run against the store `current()` returns. */
export function retentionCases(test: Case, current: () => MemoryStore, letPass: LetPass): void {
  const deleteSettled = (olderThanSeconds: number, limit: number): Promise<number> => {
    const remove = current().deleteSettledOperations?.bind(current());
    // Optional in the port: a store without it skips these tests by name, saying so.
    expect(remove, 'deleteSettledOperations is not implemented; list these tests in `skip`').toBeTypeOf('function');
    return remove ? remove({ olderThanSeconds, limit }) : Promise.resolve(0);
  };
  const meta = () => ({ runId: 'run', toolCallId: 'tool', operationId: generateId('op') });
  const enable = (scope: Scope) =>
    current().updateSettings({ scope, memoryId: memoryIdOf(scope), enabled: true, ...meta() });
  const enqueue = (scope: Scope, operationType: 'observe' | 'reflect' = 'observe') =>
    current().enqueueOperation({
      operationId: generateId('op'),
      scope,
      memoryId: memoryIdOf(scope),
      operationType,
      payload: {},
      runId: 'run',
      toolCallId: 'system',
    });
  const claim = async (scope: Scope) => {
    const claimed = await current().claimOperation({ memoryId: memoryIdOf(scope), ...lease });
    if (!claimed) throw new Error('nothing to claim');
    return { operationId: claimed.operationId, memoryId: claimed.memoryId, leaseOwner: lease.leaseOwner };
  };
  /** An applied observe with its two markers, over a message of its own. */
  const observed = async (scope: Scope, text = 'fact') => {
    const store = current();
    const memoryId = memoryIdOf(scope);
    const appended = await store.appendMessages({
      scope,
      memoryId,
      messages: [{ messageKey: generateId('m'), role: 'user', name: '', toolCallId: '', content: text, tokenCount: 3 }],
    });
    const { operationId } = await enqueue(scope);
    const handle = await claim(scope);
    expect(handle.operationId).toBe(operationId);
    await store.completeObservation({
      ...handle,
      observations: [{ content: text, importance: 0.5, tokenCount: 2 }],
      throughMessageSeq: appended.record.lastMessageSeq,
      markerIds: { start: generateId('mk'), end: generateId('mk') },
    });
    return operationId;
  };
  const failed = async (scope: Scope) => {
    await enqueue(scope);
    return (await current().failOperation({ ...(await claim(scope)), errorText: 'bad output' })).operationId;
  };
  const dead = async (scope: Scope) => {
    await enqueue(scope);
    return (await current().markOperationDead({ ...(await claim(scope)), errorText: 'attempts used up' })).operationId;
  };
  const imported = async (scope: Scope, content = 'imported fact') =>
    (
      await current().importObservations?.({
        scope,
        memoryId: memoryIdOf(scope),
        observations: [{ content, importance: 0.5, tokenCount: 2 }],
        ...meta(),
      })
    )?.observations[0]?.operationId ?? '';
  const log = async (scope: Scope) =>
    (await current().listOperations(memoryIdOf(scope))).map((item) => [item.scopeSequence, item.status]);
  const cycles = async (scope: Scope) => (await current().listMarkers(memoryIdOf(scope))).map((item) => item.cycleId);

  test("deletes settled operations past the age with their markers, keeping open ones and each scope's newest", async () => {
    const store = current();
    const scope = at('t1', 'c1');
    const memoryId = memoryIdOf(scope);
    await enable(scope); // 1 applied
    const first = await observed(scope, 'first'); // 2 applied, markers
    await failed(scope); // 3 failed
    const parked = await dead(scope); // 4 dead
    const second = await observed(scope, 'second'); // 5 applied, markers
    const waiting = (await enqueue(scope)).operationId; // 6 queued
    await imported(scope); // 7 applied: the scope's newest
    const record = await store.getRecord(memoryId);
    const observations = await store.listObservations(memoryId);
    expect(await cycles(scope)).toEqual([first, first, second, second]);

    expect(await deleteSettled(3600, 10)).toBe(0);
    expect(await deleteSettled(0, 2)).toBe(2);
    expect(await log(scope)).toEqual([
      [3, 'failed'],
      [4, 'dead'],
      [5, 'applied'],
      [6, 'queued'],
      [7, 'applied'],
    ]);
    expect(await cycles(scope)).toEqual([second, second]);
    expect(await deleteSettled(0, 10)).toBe(2);
    expect(await log(scope)).toEqual([
      [4, 'dead'],
      [6, 'queued'],
      [7, 'applied'],
    ]);
    expect(await cycles(scope)).toEqual([]);
    expect(await deleteSettled(0, 10)).toBe(0);
    // What memory holds is not the log's: the record and the observations are as they were.
    expect(await store.getRecord(memoryId)).toEqual(record);
    expect(await store.listObservations(memoryId)).toEqual(observations);
    expect(await store.countDeadOperations(memoryId)).toBe(1);
    expect(await store.countPendingOperations(memoryId)).toBe(1);
    expect(
      (await store.listOperationPage(memoryId, { status: 'dead', limit: 10 })).map((item) => item.operationId),
    ).toEqual([parked]);

    // The scope goes on: new operations follow its newest, the queued one runs first, and the
    // dead one is retried at the end of the log.
    expect((await enqueue(scope)).scopeSequence).toBe(8);
    const retried = await store.retryDeadOperation({ memoryId, operationId: parked });
    expect(retried).toMatchObject({ scopeSequence: 9, status: 'queued' });
    const next = await claim(scope);
    expect(next.operationId).toBe(waiting);
    await store.completeWithoutChange({ ...next, note: 'nothing to do' });
    expect(await imported(scope, 'after retention')).not.toBe('');
    expect((await store.listObservations(memoryId)).at(-1)?.seq).toBe((observations.at(-1)?.seq ?? 0) + 1);
    expect((await store.listOperationPage(memoryId, { limit: 2 })).map((item) => item.scopeSequence)).toEqual([10, 9]);
  });

  test("keeps a scope's newest operation and its markers, and what is open however old", async () => {
    const scope = at('t1', 'c2');
    await enable(scope);
    const older = await observed(scope, 'older');
    const newest = await observed(scope, 'newest');
    expect(await deleteSettled(0, 10)).toBe(2);
    expect(await log(scope)).toEqual([[3, 'applied']]);
    expect(await cycles(scope)).toEqual([newest, newest]);
    expect(older).not.toBe(newest);

    // A scope whose operations are all open: nothing goes, its newest included.
    const open = at('t1', 'c3');
    await enable(open);
    await dead(open);
    await dead(open);
    await enqueue(open);
    expect(await deleteSettled(0, 10)).toBe(1);
    expect(await log(open)).toEqual([
      [2, 'dead'],
      [3, 'dead'],
      [4, 'queued'],
    ]);
    expect(await deleteSettled(0, 10)).toBe(0);
    // The oldest settled operation waiting behind open ones goes once it is old enough.
    await imported(open);
    await imported(open);
    expect(await deleteSettled(0, 10)).toBe(1);
    expect(await log(open)).toEqual([
      [2, 'dead'],
      [3, 'dead'],
      [4, 'queued'],
      [6, 'applied'],
    ]);
  });

  test("deletes only operations past the age by the store's clock, in every scope and tenant", async () => {
    const store = current();
    const oldScope = at('t1', 'old');
    const otherTenant = at('t2', 'old');
    await enable(oldScope);
    await observed(oldScope, 'old fact');
    await enable(otherTenant);
    await imported(otherTenant);
    // A working-memory entry living one second tells when a second has passed by the store's clock.
    const probe = at('t9', 'clock');
    await store.setWorkingMemoryEntry({
      scope: probe,
      memoryId: memoryIdOf(probe),
      key: 'probe',
      valueJson: '1',
      limits: { maxEntries: 10, maxTotalBytes: 1000 },
      ttlMs: 1000,
    });
    await letPass(1000, async () => (await store.getWorkingMemoryEntry(memoryIdOf(probe), 'probe')) === undefined);
    const recent = at('t2', 'recent');
    await enable(recent);
    await imported(recent);
    const fresh = await observed(oldScope, 'recent fact');
    await imported(oldScope);

    expect(await deleteSettled(1, 100)).toBe(3);
    expect(await log(oldScope)).toEqual([
      [3, 'applied'],
      [4, 'applied'],
    ]);
    expect(await cycles(oldScope)).toEqual([fresh, fresh]);
    expect(await log(otherTenant)).toEqual([[2, 'applied']]);
    expect(await log(recent)).toEqual([
      [1, 'applied'],
      [2, 'applied'],
    ]);
    expect(await deleteSettled(1, 100)).toBe(0);
  });

  test('deletes at most the limit a call, and the calls together reach every scope', async () => {
    const scopes = Array.from({ length: 5 }, (_, index) => at(index % 2 === 0 ? 't1' : 't2', `conv-${index}`));
    for (const scope of scopes) {
      await enable(scope);
      await failed(scope);
      await imported(scope);
      await imported(scope);
    }
    const counts: number[] = [];
    for (let call = 0; call < 10; call++) counts.push(await deleteSettled(0, 4));
    expect(counts.slice(0, 5)).toEqual([4, 4, 4, 3, 0]);
    expect(counts.slice(5)).toEqual([0, 0, 0, 0, 0]);
    for (const scope of scopes) expect(await log(scope)).toEqual([[4, 'applied']]);
  });

  test('refuses a bad age or limit, naming it', async () => {
    const remove = current().deleteSettledOperations?.bind(current());
    expect(remove, 'deleteSettledOperations is not implemented; list this test in `skip`').toBeTypeOf('function');
    if (!remove) return;
    for (const [olderThanSeconds, limit, option] of [
      [-1, 1, 'olderThanSeconds'],
      [1.5, 1, 'olderThanSeconds'],
      [Number.NaN, 1, 'olderThanSeconds'],
      [36_500 * 86_400 + 1, 1, 'olderThanSeconds'],
      ['1', 1, 'olderThanSeconds'],
      [0, 0, 'limit'],
      [0, 1_001, 'limit'],
      [0, 2.5, 'limit'],
      [0, undefined, 'limit'],
    ] as const)
      await expect(remove({ olderThanSeconds, limit } as never)).rejects.toMatchObject({
        code: 'OPTION_INVALID',
        data: { factory: 'deleteSettledOperations', option },
      });
    await expect(remove(undefined as never)).rejects.toMatchObject({ code: 'OPTION_INVALID' });
  });
}
