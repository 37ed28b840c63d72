import { describe, expect, it } from 'vitest';
import { cutText, wellFormed } from './cut-text.js';

describe('cutText', () => {
  it('cuts to the length, one unit short where it would split a surrogate pair', () => {
    expect(cutText('abcdef', 3)).toBe('abc');
    expect(cutText('ab😀cd', 3)).toBe('ab');
    expect(cutText('ab😀cd', 4)).toBe('ab😀');
    expect(cutText('short', 10)).toBe('short');
    expect(cutText('x'.repeat(299) + '😀 rest', 300).isWellFormed()).toBe(true);
  });
});

describe('wellFormed', () => {
  it('replaces lone surrogates with U+FFFD and keeps the rest', () => {
    expect(wellFormed('a\uD83Db\uDE00c😀')).toBe('a\uFFFDb\uFFFDc😀');
    const fine = 'plain 日本語';
    expect(wellFormed(fine)).toBe(fine);
  });
});
