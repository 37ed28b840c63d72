/** Edges of cutting text that a mutation sweep found unpinned: the ends of the ranges. */
import { describe, expect, it } from 'vitest';
import { cutText } from './cut-text.js';

describe('cutText: edges', () => {
  it('does not split a pair whose high surrogate is the first one (U+D800)', () => {
    // U+10330 (Gothic letter ahsa) is \uD800\uDF30.
    expect(cutText('ab\u{10330}cd', 3)).toBe('ab');
    expect(cutText('ab\u{10330}cd', 4)).toBe('ab\u{10330}');
  });

  it('gives a text that fits back as it is, even one ending in half a pair (wellFormed mends that)', () => {
    const text = 'ab\uD83D';
    expect(cutText(text, 3)).toBe(text);
  });
});
