import { describe, expect, it } from 'vitest';
import { SeenIds } from './_seen-ids.js';

describe('SeenIds', () => {
  it('keeps at most perScope ids a scope, the oldest out first', () => {
    const seen = new SeenIds(3);
    seen.add('s', 1, ['a', 'b', 'c', 'd']);
    expect([...seen.of('s', 1)]).toEqual(['b', 'c', 'd']);
    expect(seen.size).toBe(3);
  });

  it('keeps 65,536 ids in all, the least recently used scopes out first, never the one just written', () => {
    const seen = new SeenIds(10_000);
    const ids = (scope: number) => Array.from({ length: 10_000 }, (_, index) => `${scope}:${index}`);
    for (let scope = 0; scope < 7; scope++) seen.add(`s${scope}`, 1, ids(scope));
    // Seven scopes of 10,000 ids are 70,000: the first went.
    expect(seen.size).toBe(60_000);
    expect(seen.of('s0', 1).size).toBe(0);
    // Reading s1 makes it recent: s2 goes next.
    seen.of('s1', 1);
    seen.add('s7', 1, ids(7));
    expect(seen.of('s1', 1).size).toBe(10_000);
    expect(seen.of('s2', 1).size).toBe(0);
    expect(seen.size).toBeLessThanOrEqual(65_536);
  });

  it('keeps 1,000 scopes at most', () => {
    const seen = new SeenIds(10);
    for (let scope = 0; scope < 1_200; scope++) seen.add(`s${scope}`, 1, ['x']);
    expect(seen.size).toBe(1_000);
    expect(seen.of('s199', 1).size).toBe(0);
    expect(seen.of('s200', 1).size).toBe(1);
  });

  it('keeps a scope to the total at most, so one scope cannot push out all others at every add', () => {
    const seen = new SeenIds(1_000_000);
    seen.add(
      's',
      1,
      Array.from({ length: 70_000 }, (_, index) => `${index}`),
    );
    expect(seen.size).toBe(65_536);
  });

  it('knows no ids of a scope at another generation, and drops the old ones when the new are added', () => {
    const seen = new SeenIds(10);
    seen.add('s', 1, ['a', 'b']);
    expect(seen.of('s', 2).size).toBe(0);
    expect([...seen.of('s', 1)]).toEqual(['a', 'b']);
    seen.add('s', 2, ['c']);
    expect([...seen.of('s', 2)]).toEqual(['c']);
    expect(seen.of('s', 1).size).toBe(0);
    expect(seen.size).toBe(1);
  });
});
