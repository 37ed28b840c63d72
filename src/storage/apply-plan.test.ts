import { describe, expect, it } from 'vitest';
import type { StoredReflection } from '../core/observation.js';
import { planObservationApply, planReflectionApply } from './apply-plan.js';

const markerIds = { start: 'm-start', end: 'm-end' };

describe('planObservationApply', () => {
  it('numbers observations after the last seq, spans the batch and totals its tokens', () => {
    const plan = planObservationApply(
      { observedThroughMessageSeq: 4, lastObservationSeq: 7 },
      {
        throughMessageSeq: 9,
        markerIds,
        observations: [
          { content: 'a', importance: 0.5, tokenCount: 3, source: 'user', sourceMessageSeqs: [5] },
          { content: 'b', importance: null, tokenCount: 4 },
        ],
      },
    );
    expect(
      plan.observations.map((item) => [
        item.seq,
        item.sourceStartSeq,
        item.sourceEndSeq,
        item.source,
        item.sourceMessageSeqs,
      ]),
    ).toEqual([
      [8, 5, 9, 'user', [5]],
      [9, 5, 9, 'mixed', []],
    ]);
    expect(plan).toMatchObject({ startSeq: 5, throughSeq: 9, lastObservationSeq: 9, tokens: 7 });
    expect(plan.markers).toEqual([
      {
        markerId: 'm-start',
        markerType: 'observation_start',
        messageSeqStart: 5,
        messageSeqEnd: 5,
        tokenCount: 7,
        payload: { seq: 8 },
      },
      {
        markerId: 'm-end',
        markerType: 'observation_end',
        messageSeqStart: 9,
        messageSeqEnd: 9,
        tokenCount: 7,
        payload: { seq: 9 },
      },
    ]);
  });

  it('never moves the cursor back, and an empty batch keeps the last seq', () => {
    const plan = planObservationApply(
      { observedThroughMessageSeq: 12, lastObservationSeq: 3 },
      { throughMessageSeq: 10, markerIds, observations: [] },
    );
    expect(plan).toMatchObject({ throughSeq: 12, lastObservationSeq: 3, tokens: 0, observations: [] });
    expect(plan.markers[1].payload).toEqual({ seq: 3 });
  });
});

describe('planReflectionApply', () => {
  const reflection = (
    supersessions: { newerSeq: number; olderSeq: number }[],
    contradictions: { seqA: number; seqB: number }[],
  ): StoredReflection =>
    ({
      raw: 'SUMMARY',
      tokenCount: 11,
      throughSeq: 6,
      createdAt: '2026-12-03T00:00:00.000Z',
      structured: {
        schemaVersion: 1,
        summary: 'SUMMARY',
        supersessions: supersessions.map((item) => ({ ...item, reason: 'changed' })),
        contradictions: contradictions.map((item) => ({ ...item, detail: 'differs' })),
      },
    }) as unknown as StoredReflection;

  it('marks the cursor and keeps only references the scope can have, counting the rest', () => {
    const plan = planReflectionApply(
      { observedThroughMessageSeq: 20, lastObservationSeq: 6 },
      {
        markerId: 'r1',
        reflection: reflection(
          [
            { newerSeq: 5, olderSeq: 2 },
            { newerSeq: 2, olderSeq: 5 },
            { newerSeq: 9, olderSeq: 1 },
          ],
          [{ seqA: 4, seqB: 3 }],
        ),
      },
    );
    expect(plan.marker).toEqual({
      markerId: 'r1',
      markerType: 'reflection_end',
      messageSeqStart: 20,
      messageSeqEnd: 20,
      tokenCount: 11,
      payload: { last_reflected_seq: 6 },
    });
    expect(plan.links).toEqual([
      { kind: 'supersession', firstSeq: 5, secondSeq: 2, detail: 'changed' },
      { kind: 'contradiction', firstSeq: 3, secondSeq: 4, detail: 'differs' },
    ]);
    expect(plan.rejected).toBe(2);
  });
});
