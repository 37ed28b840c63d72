import { randomBytes } from 'node:crypto';

/** Makes unique, time-ordered ids. Injectable so tests can be deterministic. */
export type IdGenerator = (prefix: string) => string;

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * ULID-based ids, `<prefix>_<ULID>`: unique across processes and restarts (no per-process
 * counter), and sortable by creation time. Monotonic within one millisecond.
 */
export function createUlidGenerator(now: () => number = Date.now): IdGenerator {
  let lastTime = -1;
  let lastRandom: Uint8Array = new Uint8Array(10);
  return (prefix: string) => {
    let time = now();
    if (time <= lastTime) {
      time = lastTime;
      lastRandom = incremented(lastRandom);
    } else {
      lastTime = time;
      lastRandom = new Uint8Array(randomBytes(10));
    }
    return `${prefix}_${encodeTime(time)}${encodeRandom(lastRandom)}`;
  };
}

/** The default id generator. */
export const generateId: IdGenerator = createUlidGenerator();

function encodeTime(time: number): string {
  let out = '';
  let remaining = time;
  for (let index = 0; index < 10; index++) {
    out = CROCKFORD.charAt(remaining % 32) + out;
    remaining = Math.floor(remaining / 32);
  }
  return out;
}

function encodeRandom(bytes: Uint8Array): string {
  // 80 bits as 16 base-32 characters.
  let bits = 0n;
  for (const byte of bytes) bits = (bits << 8n) | BigInt(byte);
  let out = '';
  for (let index = 0; index < 16; index++) {
    out = CROCKFORD.charAt(Number(bits & 31n)) + out;
    bits >>= 5n;
  }
  return out;
}

function incremented(bytes: Uint8Array): Uint8Array {
  const next = new Uint8Array(bytes);
  for (let index = next.length - 1; index >= 0; index--) {
    const value = next[index] ?? 0;
    if (value < 255) {
      next[index] = value + 1;
      return next;
    }
    next[index] = 0;
  }
  return next;
}
