/**
 * The conformance cases of `correctObservation` around the reflection and the supersession set:
 * a new importance alone keeps the text, the reflection and the links naming the observation; a
 * new text drops them. `runStoreSuite` runs them for every adapter.
 */
import { expect } from 'vitest';
import { HarnessMemoryError } from '../core/errors.js';
import { parseReflection } from '../core/parse-reflection.js';
import { memoryIdOf } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import type { MemoryStore, ObservationChange } from './store.js';

type Case = (name: string, body: () => Promise<void>) => void;

const scope: Scope = { tenantId: 'tenant-c', conversationId: 'corrected', agentId: 'agent' };
const memoryId = memoryIdOf(scope);
const RAW =
  'SUMMARY:\nThe user moved from Paris to Berlin.\n\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]: moved\n\n' +
  'CONTRADICTIONS:\n- [seq:2] vs [seq:3]: which city';

/** Registers the cases with `test`, each run against the store `current()` returns. */
export function correctionCases(test: Case, current: () => MemoryStore): void {
  /** Three observations of 5 tokens, a reflection through seq 3, `2 replaces 1` and `2 vs 3`. */
  const reflected = () =>
    current().importObservations!({
      scope,
      memoryId,
      observations: [
        { content: 'The user lives in Paris.', importance: 1, tokenCount: 5 },
        { content: 'The user moved to Berlin.', importance: 0.3, tokenCount: 5 },
        { content: 'The user works in Hamburg.', importance: 0.5, tokenCount: 5 },
      ],
      restore: {
        afterSeq: 0,
        reflection: {
          raw: RAW,
          structured: parseReflection(RAW),
          tokenCount: 17,
          throughSeq: 3,
          createdAt: '2026-01-02T03:04:05.000Z',
        },
        supersessions: [{ newerSeq: 2, olderSeq: 1, reason: 'moved' }],
        contradictions: [{ seqA: 2, seqB: 3, detail: 'which city' }],
      },
      runId: 'run',
      toolCallId: 'tool',
      operationId: 'op-restore',
    });
  const correct = (seq: number, change: ObservationChange, operationId = `op-correct-${seq}`) =>
    current().correctObservation({ scope, memoryId, seq, change, runId: 'run', toolCallId: 'tool', operationId });
  const linksNow = async () => {
    const links = await current().listReflectionLinks(memoryId);
    return {
      supersessions: links.supersessions.map((item) => [item.newerSeq, item.olderSeq, item.reason]),
      contradictions: links.contradictions.map((item) => [item.seqA, item.seqB, item.detail]),
    };
  };
  const bothLinks = {
    supersessions: [[2, 1, 'moved']],
    contradictions: [[2, 3, 'which city']],
  };

  test('changes the importance alone, keeping the text, the reflection and the links naming it', async () => {
    const store = current();
    const { record: before } = await reflected();
    const result = await correct(2, { kind: 'replace', importance: 0.9 });
    expect(result?.observation).toMatchObject({
      seq: 2,
      content: 'The user moved to Berlin.',
      tokenCount: 5,
      importance: 0.9,
      operationId: 'op-correct-2',
    });
    expect(result?.record.reflection?.raw).toBe(RAW);
    expect(result?.record).toMatchObject({
      activeObservationTokens: before.activeObservationTokens,
      unreflectedObservationTokens: before.unreflectedObservationTokens,
      observationCount: 3,
      supersessionCount: 1,
      contradictionCount: 1,
      correctionCount: before.correctionCount + 1,
    });
    // The state version moves, so every cache of the snippet reads the new importance.
    expect(result?.record.stateVersion).toBeGreaterThan(before.stateVersion);
    expect(await store.getRecord(memoryId)).toEqual(result?.record);
    expect(await linksNow()).toEqual(bothLinks);
    expect((await store.listObservations(memoryId)).map((item) => [item.content, item.importance])).toEqual([
      ['The user lives in Paris.', 1],
      ['The user moved to Berlin.', 0.9],
      ['The user works in Hamburg.', 0.5],
    ]);
    const logged = (await store.listOperations(memoryId)).at(-1);
    expect(logged?.payload).toEqual({ seq: 2, action: 'replace', importance: 0.9 });

    // The same text given back (a caller that read it first) is kept the same way; null unscores.
    const same = await correct(
      2,
      { kind: 'replace', content: 'The user moved to Berlin.', tokenCount: 9, importance: null },
      'op-same-text',
    );
    expect(same?.observation).toMatchObject({ content: 'The user moved to Berlin.', tokenCount: 5, importance: null });
    expect(same?.record).toMatchObject({
      activeObservationTokens: before.activeObservationTokens,
      supersessionCount: 1,
      contradictionCount: 1,
    });
    expect(same?.record.reflection?.raw).toBe(RAW);
    expect(await linksNow()).toEqual(bothLinks);
  });

  test('drops the reflection and the links naming an observation whose text changes, as before', async () => {
    const store = current();
    const { record: before } = await reflected();
    const result = await correct(2, { kind: 'replace', content: 'The user moved to Munich.', tokenCount: 6 });
    expect(result?.observation).toMatchObject({ content: 'The user moved to Munich.', tokenCount: 6, importance: 0.3 });
    expect(result?.record).toMatchObject({
      reflection: null,
      activeObservationTokens: before.activeObservationTokens + 1,
      unreflectedObservationTokens: before.activeObservationTokens + 1,
      supersessionCount: 0,
      contradictionCount: 0,
    });
    expect(await linksNow()).toEqual({ supersessions: [], contradictions: [] });
    expect((await store.listOperations(memoryId)).at(-1)?.payload).toMatchObject({ reflection_dropped: true });
  });

  test('refuses a replacement with neither content nor importance, changing nothing', async () => {
    const store = current();
    const { record: before } = await reflected();
    const error = await correct(2, { kind: 'replace' } as unknown as ObservationChange).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(HarnessMemoryError.isInstance(error) && [error.code, error.data['field']]).toEqual([
      'OBSERVATION_INVALID',
      'content',
    ]);
    expect(await store.getRecord(memoryId)).toEqual(before);
    expect(await linksNow()).toEqual(bothLinks);
    expect((await store.listOperations(memoryId)).map((item) => item.operationType)).toEqual(['import']);
  });
}
