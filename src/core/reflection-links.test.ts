import { describe, expect, it } from 'vitest';
import type { ObservationSource } from './observation.js';
import type { StructuredReflection } from './reflection.js';
import { checkReflectionReferences, mayRestOnToolOutput, refuseToolSupersessions } from './reflection-links.js';

const CAP = 0.6;
type Origin = [source: ObservationSource, importance: number | null];

/** Observations 1… with the given provenance, in seq order. */
const scopeOf = (...origins: Origin[]) =>
  origins.map(([source, importance], index) => ({ seq: index + 1, source, importance }));

function reflection(
  supersessions: Array<[newerSeq: number, olderSeq: number, reason?: string]>,
  contradictions: Array<[seqA: number, seqB: number]> = [],
): StructuredReflection {
  return {
    summary: 'summary',
    schemaVersion: 1,
    supersessions: supersessions.map(([newerSeq, olderSeq, reason = '']) => ({ newerSeq, olderSeq, reason })),
    contradictions: contradictions.map(([seqA, seqB]) => ({ seqA, seqB, detail: 'they differ' })),
  };
}

describe('mayRestOnToolOutput', () => {
  it.each<[ObservationSource, number | null, boolean]>([
    ['tool', 0.6, true],
    ['tool', null, true],
    // What cites only the assistant, or nothing, beside tool output keeps its source but is capped.
    ['assistant', 0.6, true],
    ['mixed', 0.2, true],
    ['mixed', null, true],
    ['assistant', 0.61, false],
    ['mixed', 0.9, false],
    ['user', 0.1, false],
    ['client', null, false],
    ['import', 0.3, false],
  ])('%s at importance %s: %s', (source, importance, expected) => {
    expect(mayRestOnToolOutput({ seq: 1, source, importance }, CAP)).toBe(expected);
  });
});

describe('refuseToolSupersessions', () => {
  it("keeps tool output replacing the user's rule as a contradiction naming both", () => {
    const result = refuseToolSupersessions(
      reflection([[2, 1, 'policy updated']]),
      scopeOf(['user', 0.95], ['tool', 0.6]),
      CAP,
    );
    expect(result.refused).toBe(1);
    expect(result.structured.supersessions).toEqual([]);
    expect(result.structured.contradictions).toEqual([
      { seqA: 1, seqB: 2, detail: 'a change that may come from tool output: policy updated' },
    ]);
    expect(result.structured.summary).toBe('summary');
    // The store's check keeps it as a contradiction.
    expect(checkReflectionReferences(result.structured, 2)).toEqual({
      supersessions: [],
      contradictions: result.structured.contradictions,
      rejected: 0,
    });
  });

  it.each<[Origin, Origin]>([
    [
      ['tool', 0.6],
      ['user', 0.95],
    ],
    [
      ['assistant', 0.6],
      ['user', 0.3],
    ],
    [
      ['mixed', null],
      ['user', null],
    ],
    [
      ['tool', 0.5],
      ['client', 0.9],
    ],
    [
      ['mixed', 0.4],
      ['import', 0.9],
    ],
    [
      ['tool', 0.6],
      ['mixed', 0.8],
    ],
  ])('refuses %j replacing %j', (newer, older) => {
    const result = refuseToolSupersessions(reflection([[2, 1]]), scopeOf(older, newer), CAP);
    expect(result.refused).toBe(1);
    expect(result.structured.supersessions).toEqual([]);
    expect(result.structured.contradictions).toEqual([
      { seqA: 1, seqB: 2, detail: 'a change that may come from tool output' },
    ]);
  });

  it.each<[Origin, Origin]>([
    [
      ['tool', 0.6],
      ['tool', 0.6],
    ],
    [
      ['tool', 0.6],
      ['mixed', 0.5],
    ],
    [
      ['user', 0.9],
      ['tool', 0.6],
    ],
    [
      ['user', 0.9],
      ['user', 0.9],
    ],
    [
      ['mixed', 0.8],
      ['user', 0.9],
    ],
    [
      ['assistant', 0.9],
      ['user', 0.9],
    ],
    [
      ['client', null],
      ['user', 0.9],
    ],
    [
      ['import', 0.2],
      ['user', 0.9],
    ],
  ])('keeps %j replacing %j', (newer, older) => {
    const structured = reflection([[2, 1]]);
    expect(refuseToolSupersessions(structured, scopeOf(older, newer), CAP)).toEqual({ structured, refused: 0 });
  });

  it('keeps the other supersessions, and a pair the reflection already calls a contradiction once', () => {
    const result = refuseToolSupersessions(
      reflection(
        [
          [3, 1],
          [4, 2],
        ],
        [[3, 1]],
      ),
      scopeOf(['user', 0.9], ['tool', 0.6], ['tool', 0.6], ['tool', 0.6]),
      CAP,
    );
    expect(result.refused).toBe(1);
    expect(result.structured.supersessions).toEqual([{ newerSeq: 4, olderSeq: 2, reason: '' }]);
    expect(result.structured.contradictions).toEqual([{ seqA: 3, seqB: 1, detail: 'they differ' }]);
  });

  it('leaves seqs it does not know, backward supersessions and legacy reflections to the reference check', () => {
    const unknown = reflection([[9, 1]]);
    expect(refuseToolSupersessions(unknown, scopeOf(['user', 0.9], ['tool', 0.6]), CAP)).toEqual({
      structured: unknown,
      refused: 0,
    });
    const backward = reflection([[1, 2]]);
    expect(refuseToolSupersessions(backward, scopeOf(['tool', 0.6], ['user', 0.9]), CAP)).toEqual({
      structured: backward,
      refused: 0,
    });
    const legacy: StructuredReflection = { summary: 'plain', schemaVersion: 0, supersessions: [], contradictions: [] };
    expect(refuseToolSupersessions(legacy, scopeOf(['user', 0.9]), CAP)).toEqual({ structured: legacy, refused: 0 });
  });
});
