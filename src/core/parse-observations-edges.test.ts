/**
 * Edges of the observer-answer parser that a mutation sweep found unpinned: where a long
 * observation is cut, the bounds of the ten-point scale, seq 0 in a SOURCE line and the
 * smallest length limit.
 */
import { describe, expect, it } from 'vitest';
import { parseObservations, TRUNCATION_SUFFIX, truncateObservation } from './parse-observations.js';

describe('truncateObservation: where it cuts', () => {
  it('cuts at the last white space in the final tenth: the one right after the kept 91 of 100 code points', () => {
    const content = `${'a'.repeat(91)} ${'b'.repeat(50)}`;
    expect(truncateObservation(content, 100)).toBe(`${'a'.repeat(91)}${TRUNCATION_SUFFIX}`);
  });

  it('cuts at the limit when the last white space is at 90% of it or earlier', () => {
    const atNinetyPercent = `${'a'.repeat(90)} ${'b'.repeat(50)}`;
    expect(truncateObservation(atNinetyPercent, 100)).toBe(`${'a'.repeat(90)} ${'b'.repeat(9)}${TRUNCATION_SUFFIX}`);
    const atHalf = `${'a'.repeat(60)} ${'b'.repeat(100)}`;
    expect(truncateObservation(atHalf, 100)).toBe(`${'a'.repeat(60)} ${'b'.repeat(39)}${TRUNCATION_SUFFIX}`);
  });

  it('keeps at least one code point when the limit is 0', () => {
    expect(parseObservations('IMPORTANCE: 0.5\nThe user prefers tabs.', { maxObservationChars: 0 })).toEqual([
      { content: `T${TRUNCATION_SUFFIX}`, importance: 0.5 },
    ]);
  });
});

describe('parseObservations: the ten-point scale', () => {
  it('reads whole scores of 0 and 1 as themselves, not as tenths', () => {
    expect(parseObservations('IMPORTANCE: 1\nThe user prefers tabs.\nIMPORTANCE: 0\nThe weather was nice.')).toEqual([
      { content: 'The user prefers tabs.', importance: 1 },
      { content: 'The weather was nice.', importance: 0 },
    ]);
  });

  it('reads a 10 as the top of a ten-point scale', () => {
    expect(parseObservations('IMPORTANCE: 10\nThe user prefers tabs.\nIMPORTANCE: 5\nThey use Go.')).toEqual([
      { content: 'The user prefers tabs.', importance: 1 },
      { content: 'They use Go.', importance: 0.5 },
    ]);
  });
});

describe('parseObservations: SOURCE lines', () => {
  it('drops seq 0 from a list or a range: message seqs start at 1', () => {
    expect(
      parseObservations(
        'IMPORTANCE: 0.9\nSOURCE: 0, 3\nThe user prefers tabs.\nIMPORTANCE: 0.8\nSOURCE: 0-2\nThey use Go.',
      ),
    ).toEqual([
      { content: 'The user prefers tabs.', importance: 0.9, sourceSeqs: [3] },
      { content: 'They use Go.', importance: 0.8, sourceSeqs: [1, 2] },
    ]);
  });
});
