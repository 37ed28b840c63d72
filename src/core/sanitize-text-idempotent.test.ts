import { describe, expect, it } from 'vitest';
import { stripInvisible, stripInvisibleInJson } from './sanitize-text.js';

/** A seeded PRNG (mulberry32): the same strings on every run, so a failure can be replayed. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(state ^ (state >>> 15), state | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
}

// Letters, emoji and scripts that joiners and selectors attach to, and what is stripped around them.
const PIECES = [
  'a',
  'Z',
  '1',
  ' ',
  '<',
  '/',
  'é',
  '日',
  'ی',
  'क',
  'ᠠ',
  '👩',
  '💻',
  '❤',
  '🔥',
  '🏳',
  '\u20E3', // combining keycap
  '\u0301', // combining acute accent
  '\u094D', // Devanagari virama
  '\u200D', // zero-width joiner
  '\u200C', // zero-width non-joiner
  '\uFE0F', // VS16, emoji presentation
  '\uFE0E', // VS15, text presentation
  '\uFE00',
  '\u180B',
  '\u{E0001}',
  '\u{E0041}',
  '\u{E007F}',
  '\u202A',
  '\u202B',
  '\u202C',
  '\u202D',
  '\u202E',
  '\u2066',
  '\u2067',
  '\u2068',
  '\u2069',
  '\u200B', // zero-width space
  '\uFEFF', // BOM
  '\u2060',
  '\u00AD',
  '\r\n',
  '\u2028',
  '\uD83D', // a lone high surrogate
] as const;

function generatedStrings(count: number, seed: number): string[] {
  const random = seededRandom(seed);
  const strings: string[] = [];
  for (let index = 0; index < count; index++) {
    const length = 1 + Math.floor(random() * 16);
    let text = '';
    for (let position = 0; position < length; position++) text += PIECES[Math.floor(random() * PIECES.length)] ?? '';
    strings.push(text);
  }
  return strings;
}

describe('stripInvisible: idempotence', () => {
  it('leaves nothing for a second pass after a joiner followed by a variation selector', () => {
    const once = stripInvisible('A\u200D\uFE0F');
    expect(once).toBe('A');
    expect(stripInvisible(once)).toBe(once);
  });

  it('judges a mixed run of joiners and selectors by the characters either side of it', () => {
    expect(stripInvisible('a\uFE0F\u200Dé')).toBe('aé');
    expect(stripInvisible('é\uFE0F\u200Da')).toBe('é\uFE0Fa');
    for (const text of ['❤\uFE0F\u200D🔥', '🏳\uFE0F\u200D🌈', 'é\u200D\uFE0Fa'])
      expect(stripInvisible(text), JSON.stringify(text)).toBe(text);
  });

  it('gives the fixed point in one pass for 20,000 generated strings', () => {
    for (const text of generatedStrings(20_000, 0x5eed)) {
      const once = stripInvisible(text);
      expect(stripInvisible(once), JSON.stringify(text)).toBe(once);
    }
  });

  it('gives the fixed point in one pass for JSON text too', () => {
    for (const text of generatedStrings(5_000, 0x150)) {
      const once = stripInvisibleInJson(JSON.stringify({ text }));
      expect(stripInvisibleInJson(once), JSON.stringify(text)).toBe(once);
    }
  });

  it('stays linear on a long run mixing joiners and selectors', () => {
    expect(stripInvisible(`é${'\u200D\uFE0F'.repeat(100_000)}\u200Da`)).toBe(`é${'\u200D\uFE0F'.repeat(100_000)}a`);
    expect(stripInvisible(`a${'\uFE0F\u200D'.repeat(100_000)}é`)).toBe('aé');
  }, 10_000);
});
