import { describe, expect, it } from 'vitest';
import { seededRandom } from './seeded-random.js';

describe('seededRandom', () => {
  it('gives the same draws for the same seed and other draws for another', () => {
    const draws = (seed: number) => Array.from({ length: 100 }, seededRandom(seed));
    expect(draws(7)).toEqual(draws(7));
    expect(draws(7)).not.toEqual(draws(8));
    expect(draws(0)).toEqual(draws(0));
  });

  it('draws in [0, 1) and integers below a bound, spread over the range', () => {
    const random = seededRandom(42);
    const buckets = Array.from({ length: 10 }, () => 0);
    for (let index = 0; index < 10_000; index++) {
      const value = random();
      expect(value).toBeGreaterThanOrEqual(0);
      expect(value).toBeLessThan(1);
      const bucket = random.below(10);
      expect(Number.isInteger(bucket)).toBe(true);
      buckets[bucket] = (buckets[bucket] ?? 0) + 1;
    }
    for (const count of buckets) expect(count).toBeGreaterThan(800);
  });
});
