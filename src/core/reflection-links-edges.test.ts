/**
 * Edges of the supersession set that a mutation sweep found unpinned: the bounds of the
 * reference check, repeats, the order of the warnings, and links naming deleted observations.
 */
import { describe, expect, it } from 'vitest';
import type { StructuredReflection } from './reflection.js';
import {
  activeReflectionLinks,
  checkReflectionReferences,
  newestContradictionFirst,
  refuseToolSupersessions,
  supersededBy,
} from './reflection-links.js';
import type { ReflectionLinks } from './reflection-links.js';

function structured(
  supersessions: Array<[newerSeq: number, olderSeq: number]>,
  contradictions: Array<[seqA: number, seqB: number]> = [],
): StructuredReflection {
  return {
    summary: 'summary',
    schemaVersion: 1,
    supersessions: supersessions.map(([newerSeq, olderSeq]) => ({ newerSeq, olderSeq, reason: 'changed' })),
    contradictions: contradictions.map(([seqA, seqB]) => ({ seqA, seqB, detail: 'differs' })),
  };
}

const stored = { operationId: 'op', createdAt: '2026-01-01T00:00:00.000Z' };

describe('checkReflectionReferences: bounds', () => {
  it('rejects a supersession of an observation by itself', () => {
    expect(checkReflectionReferences(structured([[3, 3]]), 5)).toEqual({
      supersessions: [],
      contradictions: [],
      rejected: 1,
    });
  });

  it('rejects seq 0, which the scope never assigns (seqs start at 1)', () => {
    expect(checkReflectionReferences(structured([[2, 0]], [[0, 1]]), 5)).toEqual({
      supersessions: [],
      contradictions: [],
      rejected: 2,
    });
  });

  it('keeps a repeated supersession once, without counting the repeat as rejected', () => {
    expect(
      checkReflectionReferences(
        structured([
          [4, 2],
          [4, 2],
          [5, 2],
        ]),
        5,
      ),
    ).toEqual({
      supersessions: [
        { newerSeq: 4, olderSeq: 2, reason: 'changed' },
        { newerSeq: 5, olderSeq: 2, reason: 'changed' },
      ],
      contradictions: [],
      rejected: 0,
    });
  });
});

describe('refuseToolSupersessions: seqs it does not know', () => {
  it('leaves a supersession by tool output of an observation no longer in the scope to the reference check', () => {
    // Observation 2 was deleted; 6 rests on tool output. Only a known user fact is protected.
    const reflection = structured([[6, 2]]);
    expect(refuseToolSupersessions(reflection, [{ seq: 6, source: 'tool', importance: 0.6 }], 0.6)).toEqual({
      structured: reflection,
      refused: 0,
    });
  });
});

describe('supersededBy', () => {
  it('maps a fact changed twice by the same older seq to its newest replacement, whatever the order found', () => {
    const changedTwice = [
      { newerSeq: 40, olderSeq: 10, reason: '' },
      { newerSeq: 55, olderSeq: 10, reason: '' },
    ];
    expect(supersededBy({ supersessions: changedTwice })).toEqual(new Map([[10, 55]]));
    expect(supersededBy({ supersessions: [...changedTwice].reverse() })).toEqual(new Map([[10, 55]]));
  });
});

describe('newestContradictionFirst', () => {
  it('orders by the newer seq, then by the older seq, both descending', () => {
    const contradictions = [
      { seqA: 1, seqB: 5, detail: '' },
      { seqA: 7, seqB: 2, detail: '' },
      { seqA: 5, seqB: 3, detail: '' },
    ];
    expect([...contradictions].sort(newestContradictionFirst)).toEqual([
      { seqA: 7, seqB: 2, detail: '' },
      { seqA: 5, seqB: 3, detail: '' },
      { seqA: 1, seqB: 5, detail: '' },
    ]);
  });
});

describe('activeReflectionLinks: deleted observations', () => {
  it('drops a link naming an observation older than every observation left', () => {
    const links: ReflectionLinks = {
      supersessions: [
        { newerSeq: 6, olderSeq: 2, reason: '', ...stored },
        { newerSeq: 7, olderSeq: 6, reason: '', ...stored },
      ],
      contradictions: [{ seqA: 1, seqB: 7, detail: '', ...stored }],
    };
    // Observations 1 to 5 were deleted.
    expect(activeReflectionLinks(links, [{ seq: 6 }, { seq: 7 }])).toEqual({
      supersessions: [links.supersessions[1]],
      contradictions: [],
    });
  });
});
