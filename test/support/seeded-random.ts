/** Reproducible random numbers for the randomized tests: a failure names a seed that replays it. */

/** Draws from one seeded sequence. */
export interface SeededRandom {
  /** A number in [0, 1). */
  (): number;
  /** An integer in [0, `below`). */
  below(below: number): number;
}

const MODULUS = 2_147_483_647;

/**
 * The sequence of `seed` (any integer; the same seed gives the same draws on every machine).
 * A multiplicative congruential generator whose products stay below 2^53, so every step is
 * exact in a double: quality enough to spread test cases, not for anything else.
 */
export function seededRandom(seed: number): SeededRandom {
  let state = Math.abs(Math.trunc(seed)) % MODULUS || 1;
  const next = (): number => {
    state = (state * 48_271) % MODULUS;
    return (state - 1) / (MODULUS - 1);
  };
  return Object.assign(next, { below: (below: number): number => Math.floor(next() * below) });
}
