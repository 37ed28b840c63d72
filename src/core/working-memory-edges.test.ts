/**
 * Edges of working-memory checks that a mutation sweep found unpinned: the limits at their
 * exact values, a value that holds one object twice, and control characters JSON escapes.
 */
import { describe, expect, it } from 'vitest';
import {
  encodeWorkingMemoryValue,
  MAX_WORKING_MEMORY_DEPTH,
  MAX_WORKING_MEMORY_KEY_LENGTH,
  normalizeWorkingMemoryKey,
  stripInvisibleFromValueJson,
} from './working-memory.js';

const nested = (levels: number): unknown => {
  let value: unknown = 1;
  for (let level = 0; level < levels; level++) value = [value];
  return value;
};

describe('working memory: limits at their exact values', () => {
  it(`takes a key of ${MAX_WORKING_MEMORY_KEY_LENGTH} characters counted as code points, not UTF-16 units`, () => {
    const key = `${'a'.repeat(MAX_WORKING_MEMORY_KEY_LENGTH - 1)}😀`;
    expect(key.length).toBe(MAX_WORKING_MEMORY_KEY_LENGTH + 1);
    expect(normalizeWorkingMemoryKey(key)).toBe(key);
    expect(() => normalizeWorkingMemoryKey(`${key}b`)).toThrow(/longer than 128 characters/);
  });

  it('takes a value of exactly the byte limit, and refuses one byte more', () => {
    expect(encodeWorkingMemoryValue('abc', 5)).toBe('"abc"');
    expect(() => encodeWorkingMemoryValue('abcd', 5)).toThrow(/6 bytes as JSON, over the 5-byte limit/);
  });

  it(`takes a value nested ${MAX_WORKING_MEMORY_DEPTH} levels deep, and refuses one level more`, () => {
    expect(encodeWorkingMemoryValue(nested(MAX_WORKING_MEMORY_DEPTH), 10_000)).toBe(
      `${'['.repeat(MAX_WORKING_MEMORY_DEPTH)}1${']'.repeat(MAX_WORKING_MEMORY_DEPTH)}`,
    );
    expect(() => encodeWorkingMemoryValue(nested(MAX_WORKING_MEMORY_DEPTH + 1), 10_000)).toThrow(/nested deeper/);
  });
});

describe('working memory: values', () => {
  it('takes a value that holds the same object twice, which is no cycle', () => {
    const shared = { city: 'Berlin' };
    expect(encodeWorkingMemoryValue({ home: shared, work: shared, list: [shared, shared] }, 1_000)).toBe(
      '{"home":{"city":"Berlin"},"work":{"city":"Berlin"},"list":[{"city":"Berlin"},{"city":"Berlin"}]}',
    );
  });

  it('strips the control characters JSON writes as escapes, and makes a carriage return a line break', () => {
    expect(stripInvisibleFromValueJson(JSON.stringify({ note: 'a\rb', x: 'c\u0001d', y: 'e\r\nf' }))).toBe(
      '{"note":"a\\nb","x":"cd","y":"e\\nf"}',
    );
  });
});
