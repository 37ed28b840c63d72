import { describe, expect, it } from 'vitest';
import { createUlidGenerator } from '../core/ids.js';
import { memoryIdOf } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import type { MemoryStore } from '../storage/store.js';
import { ObservationCache } from './observation-cache.js';
import type { ObservationCacheStats } from './observation-cache.js';
import { seededRandom } from '../../test/support/seeded-random.js';

const generateId = createUlidGenerator();
const SCOPES: Scope[] = Array.from({ length: 40 }, (_, index) => ({
  tenantId: 'tenant',
  conversationId: `conv-${index}`,
  agentId: 'agent',
}));

async function addObservations(store: MemoryStore, scope: Scope, count: number): Promise<void> {
  const memoryId = memoryIdOf(scope);
  const appended = await store.appendMessages({
    scope,
    memoryId,
    messages: [{ messageKey: generateId('m'), role: 'user', name: '', toolCallId: '', content: 'x', tokenCount: 1 }],
  });
  await store.enqueueOperation({
    operationId: generateId('op'),
    scope,
    memoryId,
    operationType: 'observe',
    payload: {},
    runId: 'r',
    toolCallId: 't',
  });
  const claimed = await store.claimOperation({ memoryId, leaseOwner: 'w', leaseMs: 60_000 });
  await store.completeObservation({
    operationId: claimed!.operationId,
    memoryId,
    leaseOwner: 'w',
    observations: Array.from({ length: count }, (_, index) => ({
      content: `fact ${index}`,
      importance: 0.5,
      tokenCount: 2,
    })),
    throughMessageSeq: appended.record.lastMessageSeq,
    markerIds: { start: generateId('mk'), end: generateId('mk') },
  });
}

/**
 * The same workload of writes and reads over many scopes, each scope read twice per step:
 * the two reads one after the other (`serial`) or at once (`concurrent`). Some steps drop a
 * scope from the cache, so reads of uncached scopes keep happening.
 */
async function runWorkload(
  mode: 'serial' | 'concurrent',
  maxTotal: number,
): Promise<{ stats: ObservationCacheStats; steps: ObservationCacheStats[] }> {
  const store = createInMemoryStore();
  const cache = new ObservationCache(store, { maxObservations: maxTotal });
  const random = seededRandom(11).below;
  const steps: ObservationCacheStats[] = [];
  for (let step = 0; step < 25; step++) {
    for (const scope of SCOPES) if (random(3) === 0) await addObservations(store, scope, 1 + random(4));
    if (step % 5 === 4) cache.delete(memoryIdOf(SCOPES[random(SCOPES.length)]!));
    await Promise.all(
      SCOPES.map(async (scope) => {
        const memoryId = memoryIdOf(scope);
        const record = await store.getRecord(memoryId);
        if (!record) return;
        if (mode === 'serial') {
          await cache.get(memoryId, record);
          await cache.get(memoryId, record);
        } else {
          const [first, second] = await Promise.all([cache.get(memoryId, record), cache.get(memoryId, record)]);
          expect(first.map((item) => item.seq)).toEqual(second.map((item) => item.seq));
          expect(first.at(-1)?.seq).toBe(record.lastObservationSeq);
        }
      }),
    );
    steps.push(cache.stats());
  }
  return { stats: cache.stats(), steps };
}

describe('observation cache: counting (issue 12)', () => {
  it('counts exactly what it holds after every step of concurrent reads and writes over many scopes', async () => {
    const { steps } = await runWorkload('concurrent', 1_000_000);
    for (const [step, stats] of steps.entries()) expect(stats.counted, `step ${step}`).toBe(stats.held);
    expect(steps.at(-1)?.scopes).toBe(SCOPES.length);
  });

  it('keeps the hit rate of a serial run when reads of the same scope overlap', async () => {
    // Room for everything the workload writes, and no more: a miscount evicts scopes.
    const serial = await runWorkload('serial', 1_000_000);
    const tight = serial.stats.held;
    const serialTight = await runWorkload('serial', tight);
    const concurrent = await runWorkload('concurrent', tight);
    expect(serialTight.stats).toEqual(serial.stats);
    expect(concurrent.stats.hits / (concurrent.stats.hits + concurrent.stats.misses)).toBe(
      serial.stats.hits / (serial.stats.hits + serial.stats.misses),
    );
    expect(concurrent.stats).toEqual(serial.stats);
  });

  it('reads the store once for two overlapping reads of an uncached scope', async () => {
    const store = createInMemoryStore();
    await addObservations(store, SCOPES[0]!, 3);
    let reads = 0;
    const counting: MemoryStore = {
      ...store,
      listObservations: (memoryId, options) => (reads++, store.listObservations(memoryId, options)),
    };
    const cache = new ObservationCache(counting);
    const memoryId = memoryIdOf(SCOPES[0]!);
    const record = (await store.getRecord(memoryId))!;
    await Promise.all([cache.get(memoryId, record), cache.get(memoryId, record)]);
    expect(reads).toBe(1);
    expect(cache.stats()).toMatchObject({ scopes: 1, counted: 3, held: 3, hits: 1, misses: 1 });
  });

  it('stops waiting when the scope was forgotten between reading its record and its observations', async () => {
    const store = createInMemoryStore();
    await addObservations(store, SCOPES[0]!, 2);
    const memoryId = memoryIdOf(SCOPES[0]!);
    const record = (await store.getRecord(memoryId))!;
    await store.forget(memoryId);
    const cache = new ObservationCache(store);
    expect(await cache.get(memoryId, record)).toEqual([]);
    expect(cache.stats()).toMatchObject({ counted: 0, held: 0 });
  });
});

describe('observation cache: observations read beside the record (issue 16)', () => {
  const scope = SCOPES[0]!;
  const memoryId = memoryIdOf(scope);

  /** A store whose observation listings are counted. */
  function countingStore(): { store: MemoryStore; listings: () => number } {
    const inner = createInMemoryStore();
    let listings = 0;
    const store: MemoryStore = {
      ...inner,
      listObservations: (id, options) => {
        listings++;
        return inner.listObservations(id, options);
      },
    };
    return { store, listings: () => listings };
  }

  it('keeps what follows what is held, through the record, and reads nothing more', async () => {
    const { store, listings } = countingStore();
    const cache = new ObservationCache(store);
    await addObservations(store, scope, 3);
    await cache.get(memoryId, (await store.getRecord(memoryId))!);
    expect(cache.heldThrough(memoryId)).toBe(3);
    await addObservations(store, scope, 2);
    const record = (await store.getRecord(memoryId))!;
    const page = await store.listObservations(memoryId, { afterSeq: 3 });
    // Written after the record was read: listed, but past what the record shows.
    await addObservations(store, scope, 1);
    const later = await store.listObservations(memoryId, { afterSeq: 3 });
    const before = listings();
    cache.offer(memoryId, record, 3, later);
    expect(cache.heldThrough(memoryId)).toBe(5);
    expect((await cache.get(memoryId, record)).map((item) => item.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(listings()).toBe(before);
    expect(page.map((item) => item.seq)).toEqual([4, 5]);
    expect(cache.stats()).toMatchObject({ counted: 5, held: 5 });
  });

  it('reads the rest when the page was read before the record', async () => {
    const { store, listings } = countingStore();
    const cache = new ObservationCache(store);
    await addObservations(store, scope, 2);
    await cache.get(memoryId, (await store.getRecord(memoryId))!);
    await addObservations(store, scope, 1);
    const early = await store.listObservations(memoryId, { afterSeq: 2 });
    await addObservations(store, scope, 2);
    const record = (await store.getRecord(memoryId))!;
    cache.offer(memoryId, record, 2, early);
    expect(cache.heldThrough(memoryId)).toBe(3);
    const before = listings();
    expect((await cache.get(memoryId, record)).map((item) => item.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(listings()).toBe(before + 1);
  });

  it('ignores a page that starts elsewhere than what is held, or is of another life or correction', async () => {
    const { store } = countingStore();
    const cache = new ObservationCache(store);
    await addObservations(store, scope, 2);
    await cache.get(memoryId, (await store.getRecord(memoryId))!);
    await addObservations(store, scope, 2);
    const record = (await store.getRecord(memoryId))!;
    const page = await store.listObservations(memoryId, { afterSeq: 2 });
    // A page starting past what is held (seq 3 would be missing).
    cache.offer(memoryId, record, 3, await store.listObservations(memoryId, { afterSeq: 3 }));
    expect(cache.heldThrough(memoryId)).toBe(2);
    // Another life of the record (forgotten and made again elsewhere).
    cache.offer(memoryId, { ...record, createdAt: '2999-01-01T00:00:00.000Z' }, 2, page);
    expect(cache.heldThrough(memoryId)).toBe(2);
    // Observations corrected since the entry was read.
    cache.offer(memoryId, { ...record, correctionCount: record.correctionCount + 1 }, 2, page);
    expect(cache.heldThrough(memoryId)).toBe(2);
    // A read of the entry under way meanwhile: nothing is held twice.
    const reading = cache.get(memoryId, record);
    cache.offer(memoryId, record, 2, page);
    expect(cache.heldThrough(memoryId)).toBe(4);
    expect((await reading).map((item) => item.seq)).toEqual([1, 2, 3, 4]);
    expect(cache.stats()).toMatchObject({ counted: 4, held: 4 });
    // An unknown scope.
    cache.offer(memoryIdOf(SCOPES[1]!), record, 0, page);
    expect(cache.heldThrough(memoryIdOf(SCOPES[1]!))).toBeUndefined();
  });
});

describe('observation cache: bounds', () => {
  it('holds at most maxScopes scopes, those without observations too, the least recently read out first', async () => {
    const store = createInMemoryStore();
    const cache = new ObservationCache(store, { maxScopes: 3 });
    for (const scope of SCOPES.slice(0, 5)) {
      const memoryId = memoryIdOf(scope);
      const { record } = await store.appendMessages({
        scope,
        memoryId,
        messages: [{ messageKey: 'k', role: 'user', name: '', toolCallId: '', content: 'x', tokenCount: 1 }],
      });
      expect(record.lastObservationSeq).toBe(0);
      await cache.get(memoryId, record);
    }
    expect(cache.stats()).toMatchObject({ scopes: 3, counted: 0 });
    expect(cache.heldThrough(memoryIdOf(SCOPES[1]!))).toBeUndefined();
    expect(cache.heldThrough(memoryIdOf(SCOPES[4]!))).toBe(0);
  });

  it('holds at most maxChars characters of content, but always the scope being read', async () => {
    const store = createInMemoryStore();
    const cache = new ObservationCache(store, { maxChars: 20 });
    for (const scope of SCOPES.slice(0, 2)) await addObservations(store, scope, 3);
    const read = async (scope: Scope) => {
      const memoryId = memoryIdOf(scope);
      return cache.get(memoryId, (await store.getRecord(memoryId))!);
    };
    expect(await read(SCOPES[0]!)).toHaveLength(3);
    expect(cache.stats()).toMatchObject({ scopes: 1, chars: 18 });
    expect(await read(SCOPES[1]!)).toHaveLength(3);
    expect(cache.stats()).toMatchObject({ scopes: 1, chars: 18, counted: 3, held: 3 });
    expect(cache.heldThrough(memoryIdOf(SCOPES[0]!))).toBeUndefined();
  });
});
