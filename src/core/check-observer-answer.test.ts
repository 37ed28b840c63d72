import { describe, expect, it } from 'vitest';
import { checkObserverAnswer } from './check-observer-answer.js';
import { MAX_SOURCE_SEQS } from './parse-observations.js';

describe('checkObserverAnswer: cited seqs', () => {
  it('keeps only whole, safe seqs: a fraction, NaN, Infinity or a seq past 2^53 is dropped', () => {
    const [checked] = checkObserverAnswer([
      {
        content: 'The user prefers tabs.',
        importance: 0.9,
        sourceSeqs: [3, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '4', 7],
      },
    ]);
    expect(checked?.sourceSeqs).toEqual([3, 7]);
  });

  it(`keeps at most ${MAX_SOURCE_SEQS} cited seqs, the first ones`, () => {
    const seqs = Array.from({ length: MAX_SOURCE_SEQS + 10 }, (_, index) => index + 1);
    const [checked] = checkObserverAnswer([{ content: 'x', importance: null, sourceSeqs: seqs }]);
    expect(checked?.sourceSeqs).toEqual(seqs.slice(0, MAX_SOURCE_SEQS));
  });

  it('gives no sourceSeqs when the observer cited none, and an empty list when it gave one', () => {
    expect(checkObserverAnswer([{ content: 'x', importance: 0.5 }])).toEqual([{ content: 'x', importance: 0.5 }]);
    expect(checkObserverAnswer([{ content: 'x', importance: 0.5, sourceSeqs: [] }])).toEqual([
      { content: 'x', importance: 0.5, sourceSeqs: [] },
    ]);
  });
});
