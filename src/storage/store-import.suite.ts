/**
 * The conformance cases of `importObservations` with `restore`: a reflection and supersession
 * set restored with the observations (a JSON export's). `runStoreSuite` runs them for every
 * adapter.
 */
import { expect } from 'vitest';
import { HarnessMemoryError } from '../core/errors.js';
import type { StoredReflection } from '../core/observation.js';
import { parseReflection } from '../core/parse-reflection.js';
import { memoryIdOf } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import type { ImportedObservation, ImportedReflection, MemoryStore } from './store.js';

type Case = (name: string, body: () => Promise<void>) => void;

const scope: Scope = { tenantId: 'tenant-r', conversationId: 'restored', agentId: 'agent' };
const memoryId = memoryIdOf(scope);
const RAW = 'SUMMARY:\nThe user moved from Paris to Berlin.\n\nSUPERSESSIONS:\n- [seq:3] replaces [seq:1]: moved';

const facts = (count: number): ImportedObservation[] =>
  Array.from({ length: count }, (_, index) => ({ content: `fact ${index + 1}`, importance: 0.5, tokenCount: 5 }));

const reflection = (throughSeq: number): StoredReflection => ({
  raw: RAW,
  structured: parseReflection(RAW),
  tokenCount: 17,
  throughSeq,
  createdAt: '2026-01-02T03:04:05.000Z',
});

/** Registers the cases with `test`, each run against the store `current()` returns. */
export function restoreCases(test: Case, current: () => MemoryStore): void {
  const importWith = (observations: ImportedObservation[], restore?: ImportedReflection, operationId = 'op-restore') =>
    current().importObservations!({
      scope,
      memoryId,
      observations,
      ...(restore ? { restore } : {}),
      runId: 'run',
      toolCallId: 'tool',
      operationId,
    });
  const conflictOf = async (work: Promise<unknown>): Promise<string | undefined> => {
    const error = await work.then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    return HarnessMemoryError.isInstance(error) ? error.code : String(error);
  };

  test('restores a reflection and its links with imported observations, in one call', async () => {
    const store = current();
    const { record, observations } = await importWith(facts(4), {
      afterSeq: 0,
      reflection: reflection(3),
      supersessions: [
        { newerSeq: 3, olderSeq: 1, reason: 'moved' },
        // Backwards, and past the import: dropped and counted, as a reflection's are.
        { newerSeq: 1, olderSeq: 2, reason: 'backwards' },
        { newerSeq: 9, olderSeq: 2, reason: 'unknown' },
      ],
      contradictions: [{ seqA: 2, seqB: 4, detail: 'which city' }],
    });
    expect(observations.map((item) => item.seq)).toEqual([1, 2, 3, 4]);
    expect(record.reflection).toEqual(reflection(3));
    // Only the observation after the reflection's throughSeq is left to reflect.
    expect(record).toMatchObject({
      observationCount: 4,
      activeObservationTokens: 20,
      unreflectedObservationTokens: 5,
      supersessionCount: 1,
      contradictionCount: 1,
      rejectedReferenceCount: 2,
    });
    expect(await store.getRecord(memoryId)).toEqual(record);
    const links = await store.listReflectionLinks(memoryId);
    expect(links.supersessions).toMatchObject([
      { newerSeq: 3, olderSeq: 1, reason: 'moved', operationId: 'op-restore' },
    ]);
    expect(links.contradictions).toMatchObject([{ seqA: 2, seqB: 4, detail: 'which city', operationId: 'op-restore' }]);
    const logged = await store.listOperations(memoryId);
    expect(logged.map((item) => [item.operationType, item.status])).toEqual([['import', 'applied']]);
  });

  test('restores links without a reflection: every observation stays unreflected', async () => {
    const { record } = await importWith(facts(3), {
      afterSeq: 0,
      reflection: null,
      supersessions: [{ newerSeq: 3, olderSeq: 1, reason: '' }],
      contradictions: [],
    });
    expect(record).toMatchObject({ reflection: null, unreflectedObservationTokens: 15, supersessionCount: 1 });
    expect((await current().listReflectionLinks(memoryId)).supersessions).toHaveLength(1);
  });

  test('numbers a restore after the last seq of a scope whose observations were deleted', async () => {
    const store = current();
    await importWith(facts(2), undefined, 'op-first');
    for (const seq of [1, 2])
      await store.correctObservation({
        scope,
        memoryId,
        seq,
        change: { kind: 'delete' },
        runId: 'run',
        toolCallId: 'tool',
        operationId: `op-delete-${seq}`,
      });
    const { record, observations } = await importWith(facts(2), {
      afterSeq: 2,
      reflection: reflection(3),
      supersessions: [{ newerSeq: 4, olderSeq: 3, reason: 'moved' }],
      contradictions: [],
    });
    expect(observations.map((item) => item.seq)).toEqual([3, 4]);
    expect(record).toMatchObject({ supersessionCount: 1, unreflectedObservationTokens: 5, rejectedReferenceCount: 0 });
  });

  test('refuses a restore into a scope holding observations, writing nothing', async () => {
    const store = current();
    await importWith(facts(1), undefined, 'op-first');
    const before = await store.getRecord(memoryId);
    const restore = { afterSeq: 1, reflection: reflection(2), supersessions: [], contradictions: [] };
    expect(await conflictOf(importWith(facts(1), restore))).toBe('STORE_CONFLICT');
    expect(await store.getRecord(memoryId)).toEqual(before);
    expect(await store.listObservations(memoryId)).toHaveLength(1);
    expect(await store.listOperations(memoryId)).toHaveLength(1);
  });

  test('refuses a restore numbered after a seq the scope has moved past, writing nothing', async () => {
    const store = current();
    const restore = { afterSeq: 5, reflection: reflection(6), supersessions: [], contradictions: [] };
    expect(await conflictOf(importWith(facts(1), restore))).toBe('STORE_CONFLICT');
    expect(await store.getRecord(memoryId)).toBeUndefined();
    expect(await store.listObservations(memoryId)).toEqual([]);
  });
}
