/**
 * The scope an older schema left behind in the upgrade tests of the SQLite and Postgres
 * stores: three observations and a stored reflection whose references seed the supersession
 * set (one valid supersession, one valid contradiction, two rejected), and what a store reads
 * back after the upgrade.
 * @module
 */
import { expect } from 'vitest';
import type { MemoryStore } from '../../src/storage/store.js';

/** The reflection text, with a backwards supersession and a contradiction citing an unknown seq. */
export const LEGACY_REFLECTION: string =
  'SUMMARY:\nsum\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]: changed\n- [seq:1] replaces [seq:2]: ' +
  'backwards\nCONTRADICTIONS:\n- [seq:3] vs [seq:1]: which\n- [seq:7] vs [seq:1]: unknown seq';

/** The observations, as `[seq, content]`. */
export const LEGACY_OBSERVATIONS: ReadonlyArray<readonly [number, string]> = [
  [1, 'tabs'],
  [2, 'spaces'],
  [3, 'deploy Friday'],
];

/** The upgraded scope: observations of source "mixed", and the set its reflection seeded. */
export async function expectSeededSupersessionSet(store: MemoryStore, memoryId: string): Promise<void> {
  expect(
    (await store.listObservations(memoryId)).map((item) => [item.seq, item.source, item.sourceMessageSeqs]),
  ).toEqual([
    [1, 'mixed', []],
    [2, 'mixed', []],
    [3, 'mixed', []],
  ]);
  const links = await store.listReflectionLinks(memoryId);
  expect(links.supersessions.map((item) => [item.newerSeq, item.olderSeq, item.reason])).toEqual([[2, 1, 'changed']]);
  expect(links.contradictions.map((item) => [item.seqA, item.seqB, item.detail])).toEqual([[1, 3, 'which']]);
  expect(await store.getRecord(memoryId)).toMatchObject({ supersessionCount: 1, contradictionCount: 1 });
}
