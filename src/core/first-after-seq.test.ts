import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../test/support/seeded-random.js';
import { firstAfterSeq } from './first-after-seq.js';

describe('firstAfterSeq', () => {
  it('finds where the items above a seq begin, in empty, gapped and random ascending lists', () => {
    expect(firstAfterSeq([], 3)).toBe(0);
    const random = seededRandom(3);
    for (let round = 0; round < 200; round++) {
      let seq = 0;
      const items = Array.from({ length: random.below(40) }, () => ({ seq: (seq += 1 + random.below(3)) }));
      for (let probe = -1; probe <= seq + 1; probe++) {
        const expected = items.findIndex((item) => item.seq > probe);
        expect(firstAfterSeq(items, probe), `${probe} in ${items.map((item) => item.seq)}`).toBe(
          expected === -1 ? items.length : expected,
        );
      }
    }
  });
});
