import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { postgresTestUrl } from '../../../test/support/postgres-schema.js';
import { PG_TYPES } from './postgres-connection.js';
import { isoTimeOfJson, isoTimeOfText } from './postgres-time.js';
import { seededRandom } from '../../../test/support/seeded-random.js';

const parseTimestamptz = pg.types.getTypeParser(1184, 'text') as (text: string) => unknown;

// The general parsers the fast path stands in for: pg's for column text, Date's for JSON.
function generalOfText(value: string): string {
  const parsed = parseTimestamptz(value);
  return (parsed instanceof Date ? parsed : new Date(String(parsed))).toISOString();
}

const two = (value: number): string => String(value).padStart(2, '0');

describe('postgres times', () => {
  it('gives what the general parsers give for 10,000 random UTC times, text and JSON', () => {
    const next = seededRandom(16);
    const pick = (below: number): number => Math.floor(next() * below);
    for (let index = 0; index < 10_000; index++) {
      const date = `${String(1 + pick(9999)).padStart(4, '0')}-${two(1 + pick(12))}-${two(1 + pick(28))}`;
      const time = `${two(pick(24))}:${two(pick(60))}:${two(pick(60))}`;
      const digits = pick(7);
      const fraction = digits === 0 ? '' : `.${String(pick(10 ** digits)).padStart(digits, '0')}`;
      const text = `${date} ${time}${fraction}+00`;
      const json = `${date}T${time}${fraction}+00:00`;
      expect(isoTimeOfText(text), text).toBe(generalOfText(text));
      expect(isoTimeOfJson(json), json).toBe(new Date(json).toISOString());
    }
  });

  it('cuts the fraction to milliseconds the way Date does, never rounding up', () => {
    expect(isoTimeOfText('2026-12-31 23:59:59.999999+00')).toBe('2026-12-31T23:59:59.999Z');
    expect(isoTimeOfText('2026-12-04 13:50:12+00')).toBe('2026-12-04T13:50:12.000Z');
    expect(isoTimeOfText('2026-12-04 13:50:12.5+00')).toBe('2026-12-04T13:50:12.500Z');
    expect(isoTimeOfJson('2026-12-04T13:50:12.0429+00:00')).toBe('2026-12-04T13:50:12.042Z');
  });

  it('leaves what is not UTC in ISO style to the general parsers', () => {
    for (const text of [
      '2026-12-04 19:20:12.123+05:30',
      '2026-12-04 05:50:12-08',
      '0044-03-15 12:00:00+00 BC',
      '12026-01-01 00:00:00+00',
    ]) {
      expect(isoTimeOfText(text), text).toBe(generalOfText(text));
    }
    expect(isoTimeOfText('2026-12-04 19:20:12.123+05:30')).toBe('2026-12-04T13:50:12.123Z');
    expect(isoTimeOfJson('2026-12-04T19:20:12.123+05:30')).toBe('2026-12-04T13:50:12.123Z');
    // An infinite time is no date: refused as before, not turned into text.
    expect(() => isoTimeOfText('infinity')).toThrow(RangeError);
  });
});

const url = postgresTestUrl();

describe.skipIf(!url)('postgres times from the server', () => {
  it('reads the same instant whatever the session time zone, as a column and inside JSON', async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const instant = '2026-12-04T13:50:12.123456Z';
      const seen: string[] = [];
      for (const zone of ['UTC', 'Asia/Kolkata', 'America/Los_Angeles']) {
        await client.query(`SET TimeZone = '${zone}'`);
        const { rows } = await client.query<{ at: string; json: { at: string } }>({
          text: 'SELECT $1::timestamptz AS at, jsonb_build_object($2::text, $1::timestamptz) AS json',
          values: [instant, 'at'],
          types: PG_TYPES,
        });
        seen.push(rows[0]!.at, isoTimeOfJson(rows[0]!.json.at));
      }
      expect(seen).toEqual(Array.from({ length: 6 }, () => '2026-12-04T13:50:12.123Z'));
    } finally {
      await client.end();
    }
  });
});
