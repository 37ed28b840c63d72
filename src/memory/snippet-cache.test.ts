import { describe, expect, it } from 'vitest';
import { SnippetCache } from './snippet-cache.js';

describe('SnippetCache', () => {
  it('serves a value only for the version it was built from, and holds at most `limit` scopes', () => {
    const cache = new SnippetCache<string>(2);
    cache.set('a', 1, 'A1');
    expect(cache.get('a', 1)).toBe('A1');
    expect(cache.get('a', 2)).toBeUndefined();
    cache.set('b', 1, 'B1');
    cache.set('c', 1, 'C1');
    expect(cache.get('a', 1)).toBeUndefined();
    expect([cache.get('b', 1), cache.get('c', 1)]).toEqual(['B1', 'C1']);
  });

  it('holds at most maxSize by sizeOf, the oldest out first, but always the value just stored', () => {
    const cache = new SnippetCache<string>(100, { sizeOf: (text) => text.length, maxSize: 10 });
    cache.set('a', 1, 'x'.repeat(4));
    cache.set('b', 1, 'x'.repeat(4));
    expect(cache.size).toBe(8);
    cache.set('c', 1, 'x'.repeat(4));
    expect(cache.get('a', 1)).toBeUndefined();
    expect(cache.size).toBe(8);
    // Replacing a scope's value counts only the new one.
    cache.set('c', 2, 'x'.repeat(2));
    expect(cache.size).toBe(6);
    cache.set('big', 1, 'x'.repeat(50));
    expect(cache.get('big', 1)).toHaveLength(50);
    expect(cache.size).toBe(50);
    cache.delete('big');
    expect(cache.size).toBe(0);
  });
});
