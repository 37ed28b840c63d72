import { describe, expect, it } from 'vitest';
import { compareUtf8 } from './compare-utf8.js';
import { seededRandom } from '../../test/support/seeded-random.js';

describe('compareUtf8', () => {
  it('orders keys as their UTF-8 bytes do, for 5,000 random pairs', () => {
    const next = seededRandom(7).below;
    const pieces = [
      'a',
      'z',
      '~',
      '\u00e9',
      '\u0800',
      '\ud7ff',
      '\ue000',
      '\uffee',
      '\u{10000}',
      '\u{1F600}',
      '\u{10FFFF}',
    ];
    const key = (): string => Array.from({ length: 1 + next(4) }, () => pieces[next(pieces.length)]).join('');
    for (let index = 0; index < 5_000; index++) {
      const a = key();
      const b = key();
      const bytes = Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
      expect(Math.sign(compareUtf8(a, b)), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`).toBe(bytes);
    }
  });
});
