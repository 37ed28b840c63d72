import { describe, expect, it } from 'vitest';
import { createUlidGenerator, generateId } from './ids.js';

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

describe('createUlidGenerator', () => {
  it('makes prefixed ULIDs whose first ten characters encode the time', () => {
    const id = createUlidGenerator(() => 1_700_000_000_000)('op');
    expect(id).toMatch(/^op_/);
    const ulid = id.slice(3);
    expect(ulid).toMatch(ULID);
    const time = Array.from(ulid.slice(0, 10)).reduce(
      (sum, char) => sum * 32 + '0123456789ABCDEFGHJKMNPQRSTVWXYZ'.indexOf(char),
      0,
    );
    expect(time).toBe(1_700_000_000_000);
  });

  it('is strictly increasing within one millisecond and when the clock goes back', () => {
    let clock = 5_000;
    const next = createUlidGenerator(() => clock);
    const ids: string[] = [];
    for (let index = 0; index < 2_000; index++) {
      if (index === 1_000) clock = 4_000;
      ids.push(next('x'));
    }
    for (let index = 1; index < ids.length; index++) expect(ids[index]! > ids[index - 1]!).toBe(true);
  });

  it('never repeats over many ids and milliseconds', () => {
    let clock = 0;
    const next = createUlidGenerator(() => Math.floor(clock++ / 3));
    const seen = new Set<string>();
    for (let index = 0; index < 20_000; index++) seen.add(next('m'));
    expect(seen.size).toBe(20_000);
  });

  it('draws fresh randomness in each new millisecond', () => {
    let clock = 1;
    const next = createUlidGenerator(() => clock++);
    const randomParts = new Set(Array.from({ length: 1_000 }, () => next('r').slice(12)));
    expect(randomParts.size).toBe(1_000);
  });

  it('the default generator is ULID-shaped', () => {
    expect(generateId('mk').slice(3)).toMatch(ULID);
  });
});
