/**
 * The observer's `REPLACES:` line: the memory lines an observation corrects, read into
 * `replacesSeqs` and never kept as text; and what the worker makes of it
 * (`withReplacedImportance`, `replacementLinks`).
 */
import { describe, expect, it } from 'vitest';
import type { Observation } from './observation.js';
import { checkObserverAnswer } from './check-observer-answer.js';
import { parseObservations } from './parse-observations.js';
import { replacementLinks, withReplacedImportance } from './replaced-importance.js';

const FACT = 'The deploy window moved to Thursday.';

describe('REPLACES lines', () => {
  it.each([
    ['REPLACES: 3', [3]],
    ['REPLACES: [3]', [3]],
    ['Replaces: 3, 5', [3, 5]],
    ['**REPLACES:** 3', [3]],
    ['REPLACES: seq 3', [3]],
    ['REPLACES: [seq:3]', [3]],
    ['Supersedes: 4', [4]],
    ['CORRECTS: 2', [2]],
    ['REPLACES：3', [3]],
  ])('%s is read as %j', (line, seqs) => {
    const [parsed] = parseObservations(`IMPORTANCE: 0.7\nSOURCE: 9\n${line}\n${FACT}`);
    expect(parsed).toEqual({ content: FACT, importance: 0.7, sourceSeqs: [9], replacesSeqs: seqs });
  });

  it('after the text, or before SOURCE, belongs to the same observation', () => {
    expect(parseObservations(`IMPORTANCE: 0.7\n${FACT}\nREPLACES: 3`)).toEqual([
      { content: FACT, importance: 0.7, replacesSeqs: [3] },
    ]);
    expect(parseObservations(`IMPORTANCE: 0.7\nREPLACES: 3\nSOURCE: 9\n${FACT}`)).toEqual([
      { content: FACT, importance: 0.7, sourceSeqs: [9], replacesSeqs: [3] },
    ]);
  });

  it('written before the score, as sources may be, goes with the observation that follows', () => {
    const answer = `SOURCE: 1\nIMPORTANCE: 0.9\nThe user uses tabs.\n\nSOURCE: 2\nREPLACES: 1\nIMPORTANCE: 0.7\n${FACT}`;
    expect(parseObservations(answer)).toEqual([
      { content: 'The user uses tabs.', importance: 0.9, sourceSeqs: [1] },
      { content: FACT, importance: 0.7, sourceSeqs: [2], replacesSeqs: [1] },
    ]);
  });

  it('`none` is dropped; a value that is no list of seqs stays text', () => {
    expect(parseObservations(`IMPORTANCE: 0.7\nREPLACES: none\n${FACT}`)).toEqual([{ content: FACT, importance: 0.7 }]);
    expect(parseObservations(`IMPORTANCE: 0.7\nReplaces: the Tuesday rule, now Thursday.`)).toEqual([
      { content: 'Replaces: the Tuesday rule, now Thursday.', importance: 0.7 },
    ]);
  });

  it('an unscored answer keeps such a line as text: there is no observation to attach it to', () => {
    expect(parseObservations('REPLACES: 3')).toEqual([{ content: 'REPLACES: 3', importance: null }]);
  });

  it('repeats merge their seqs', () => {
    const answer = `IMPORTANCE: 0.6\nREPLACES: 2\n${FACT}\n\nIMPORTANCE: 0.8\nREPLACES: 1\n${FACT}`;
    expect(parseObservations(answer)).toEqual([{ content: FACT, importance: 0.8, replacesSeqs: [1, 2] }]);
  });

  it("a library user's observer may hand them back too; what is not a whole number is dropped", () => {
    expect(checkObserverAnswer([{ content: FACT, importance: 0.5, replacesSeqs: [2, 1.5, '3', 4] }])).toEqual([
      { content: FACT, importance: 0.5, replacesSeqs: [2, 4] },
    ]);
  });

  it('on the score line itself', () => {
    expect(parseObservations(`IMPORTANCE: 0.7 REPLACES: 3\n${FACT}`)).toEqual([
      { content: FACT, importance: 0.7, replacesSeqs: [3] },
    ]);
  });

  it('names seqs one by one: a range names none', () => {
    expect(parseObservations(`IMPORTANCE: 0.7\nREPLACES: 1-64\n${FACT}`)).toEqual([{ content: FACT, importance: 0.7 }]);
    expect(parseObservations(`IMPORTANCE: 0.7\nREPLACES: 1-3, 5\n${FACT}`)).toEqual([
      { content: FACT, importance: 0.7, replacesSeqs: [5] },
    ]);
  });

  it('is not read where scores follow their text: whose it is cannot be told', () => {
    const answer =
      'The user uses tabs.\nSOURCE: 1\nIMPORTANCE: 0.9\nThe user now uses spaces.\nSOURCE: 2\nREPLACES: 1\nIMPORTANCE: 0.7';
    expect(parseObservations(answer).some((item) => item.replacesSeqs !== undefined)).toBe(false);
  });

  it('a seq past 2^53 is no seq, and ends (counting from it never did)', () => {
    for (const line of ['REPLACES', 'SOURCE'])
      expect(parseObservations(`IMPORTANCE: 0.7\n${line}: 9007199254740993\n${FACT}`)).toEqual([
        { content: FACT, importance: 0.7 },
      ]);
    expect(parseObservations(`IMPORTANCE: 0.7\nSOURCE: 3-9007199254740993\n${FACT}`)).toEqual([
      { content: FACT, importance: 0.7 },
    ]);
  });

  // No timed assertion, as in redact-secrets.test.ts: a pattern that backtracks on these takes
  // minutes on a megabyte, far past the test timeout, while linear matching takes milliseconds.
  it('finishes on 1 MB hostile lines', () => {
    for (const line of [
      `REPLACES: ${'seq 1 '.repeat(170_000)}x`,
      `REPLACES: 1${')'.repeat(1_000_000)}x`,
      `SOURCE: 1${')'.repeat(1_000_000)}x`,
      `REPLACES: 1${' '.repeat(1_000_000)}x`,
      `SOURCE: 1${'*_'.repeat(500_000)}x`,
      `x${' '.repeat(1_000_000)}y`,
      `REPLACES: 1${'.'.repeat(1_000_000)}x`,
      `SOURCE: 1${' -'.repeat(500_000)}x`,
    ])
      expect(parseObservations(`IMPORTANCE: 0.5\n${line}\n${FACT}`).length).toBeGreaterThan(0);
    expect(parseObservations(`IMPORTANCE: 0.5 REPLACES: 1${')'.repeat(1_000_000)}x\n${FACT}`).length).toBe(1);
  }, 30_000);
});

function observation(seq: number, importance: number | null, source: Observation['source']): Observation {
  return {
    seq,
    content: `fact ${seq}`,
    tokenCount: 3,
    importance,
    createdAt: '2026-12-07T00:00:00.000Z',
    sourceStartSeq: 1,
    sourceEndSeq: 1,
    source,
    sourceMessageSeqs: [],
    operationId: 'op',
  };
}

describe('what a replacement does', () => {
  const shown = new Map([
    [1, observation(1, 0.95, 'user')],
    [2, observation(2, null, 'user')],
    [3, observation(3, 0.6, 'tool')],
  ]);

  it('raises the importance to the highest of the replaced ones it was shown, never lowers it', () => {
    const lifted = (importance: number | null, replacesSeqs: number[]) =>
      withReplacedImportance({ content: FACT, importance, replacesSeqs }, shown).importance;
    expect(lifted(0.7, [1])).toBe(0.95);
    expect(lifted(0.7, [2, 3])).toBe(0.7);
    expect(lifted(0.2, [2])).toBe(0.5);
    expect(lifted(null, [2])).toBeNull();
    expect(lifted(null, [1])).toBe(0.95);
    expect(lifted(0.3, [99])).toBe(0.3);
    expect(lifted(0.3, [])).toBe(0.3);
  });

  it('supersedes what it was shown; from tool output, a user fact is only contradicted', () => {
    expect(replacementLinks([1, 3, 99], { source: 'user', importance: 0.9 }, shown, 0.6, false)).toEqual({
      supersedes: [1, 3],
    });
    expect(replacementLinks([1, 3], { source: 'tool', importance: 0.6 }, shown, 0.6, false)).toEqual({
      supersedes: [3],
      contradicts: [1],
    });
    expect(replacementLinks(undefined, { source: 'user', importance: 0.9 }, shown, 0.6, false)).toEqual({});
  });

  it("beside tool output, even a user's correction only contradicts a user fact", () => {
    expect(replacementLinks([1, 3], { source: 'user', importance: 0.9 }, shown, 0.6, true)).toEqual({
      supersedes: [3],
      contradicts: [1],
    });
  });
});
