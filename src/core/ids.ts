import { randomFillSync } from 'node:crypto';

/** Makes unique, time-ordered ids. Injectable so tests can be deterministic. */
export type IdGenerator = (prefix: string) => string;

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const RANDOM_BYTES = 10;
const POOL_SIZE = 4096;
/** 2^40: a 40-bit half of the random part fits a double exactly. */
const HALF = 2 ** 40;

/**
 * ULID-based ids, `<prefix>_<ULID>`: unique across processes and restarts (no per-process
 * counter), and sortable by creation time. Monotonic within one millisecond: later ids of
 * the same millisecond increment the random part.
 */
export function createUlidGenerator(now: () => number = Date.now): IdGenerator {
  let lastTime = -1;
  // The 80 random bits as two 40-bit halves.
  let high = 0;
  let low = 0;
  let pool = Buffer.alloc(0);
  let offset = 0;
  const freshRandom = (): void => {
    // One system call per few hundred ids, not one per id.
    if (offset + RANDOM_BYTES > pool.length) {
      pool = randomFillSync(Buffer.allocUnsafe(POOL_SIZE));
      offset = 0;
    }
    high = pool.readUIntBE(offset, 5);
    low = pool.readUIntBE(offset + 5, 5);
    offset += RANDOM_BYTES;
  };
  return (prefix: string) => {
    let time = now();
    if (time <= lastTime) {
      time = lastTime;
      low++;
      if (low === HALF) {
        low = 0;
        high = (high + 1) % HALF;
      }
    } else {
      lastTime = time;
      freshRandom();
    }
    return `${prefix}_${encode(time, 10)}${encode(high, 8)}${encode(low, 8)}`;
  };
}

/** The default id generator. */
export const generateId: IdGenerator = createUlidGenerator();

/** `value` (a non-negative integer below 2^53) as `length` base-32 characters, most significant first. */
function encode(value: number, length: number): string {
  let out = '';
  let remaining = value;
  for (let index = 0; index < length; index++) {
    out = CROCKFORD.charAt(remaining % 32) + out;
    remaining = Math.floor(remaining / 32);
  }
  return out;
}
