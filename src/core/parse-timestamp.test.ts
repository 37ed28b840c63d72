import { describe, expect, it } from 'vitest';
import { parseTimestamp } from './parse-timestamp.js';

const iso = (text: string) => parseTimestamp(text)?.toISOString();

describe('parseTimestamp', () => {
  it('reads RFC 3339 times with their offset, and a date alone as midnight UTC', () => {
    expect(iso('2024-05-01T10:00:00Z')).toBe('2024-05-01T10:00:00.000Z');
    expect(iso('2024-05-01t10:00z')).toBe('2024-05-01T10:00:00.000Z');
    expect(iso('2024-05-01 12:00:00.5+02:00')).toBe('2024-05-01T10:00:00.500Z');
    expect(iso('2024-05-01T00:30:00.123456789-01:30')).toBe('2024-05-01T02:00:00.123Z');
    expect(iso('2024-02-29')).toBe('2024-02-29T00:00:00.000Z');
    expect(iso('0042-01-01T00:00:00Z')).toBe('0042-01-01T00:00:00.000Z');
  });

  it('refuses what Date.parse would guess at or read in the server time zone', () => {
    for (const text of [
      '1',
      'May 1',
      '2024-05-01T10:00',
      '2024-05-01T10:00:00',
      '2024-02-30',
      '2023-02-29',
      '2024-13-01',
      '2024-04-31T00:00Z',
      '2024-05-01T24:00Z',
      '2024-05-01T10:60Z',
      '2024-05-01T10:00:60Z',
      '2024-05-01T10:00+24:00',
      '2024-05-01T10:00:00.Z',
      ' 2024-05-01',
      '',
    ])
      expect(parseTimestamp(text), text).toBeUndefined();
  });
});
