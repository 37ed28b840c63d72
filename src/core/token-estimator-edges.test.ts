/** Edges of code-point counting that a mutation sweep found unpinned: the last surrogates. */
import { describe, expect, it } from 'vitest';
import { countCodePoints, RUNE_TOKEN_ESTIMATOR } from './token-estimator.js';

describe('token estimator: the ends of the surrogate ranges', () => {
  it('counts a pair with the last high surrogate (U+DBFF) or the last low one (U+DFFF) once', () => {
    // U+10FFFF is \uDBFF\uDFFF; U+103FF is \uD800\uDFFF; U+10FC00 is \uDBFF\uDC00.
    expect(countCodePoints('\u{10FFFF}')).toBe(1);
    expect(countCodePoints('\u{103FF}')).toBe(1);
    expect(countCodePoints('\u{10FC00}')).toBe(1);
    expect(RUNE_TOKEN_ESTIMATOR.estimate('\u{10FFFF}'.repeat(8))).toBe(2);
  });

  it('counts each half of a broken pair', () => {
    expect(countCodePoints('\uDBFFx')).toBe(2);
    expect(countCodePoints('\uDFFF\uDBFF')).toBe(2);
  });
});
