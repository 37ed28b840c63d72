/**
 * Times as Postgres sends them, turned into the ISO 8601 text `Date.toISOString()` writes
 * (milliseconds, `Z`), which every store returns.
 * @module
 */
import pg from 'pg';

// What a session whose TimeZone is UTC writes with the default DateStyle (ISO): as a column's
// text, and inside JSON (to_jsonb). Anything else takes the general parsers.
const UTC_TEXT = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?\+00$/;
const UTC_JSON = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?\+00:00$/;
/** The type id of `timestamptz`. */
export const TIMESTAMPTZ_OID = 1184;

/**
 * A `timestamptz` column's text, as the pool receives it, in ISO 8601 with milliseconds.
 * Why not always pg's own parser: building a `Date` costs about a microsecond a value, and a
 * turn's reads carry hundreds of times (two per working-memory entry); the UTC text needs only
 * to be cut and joined.
 */
export function isoTimeOfText(value: string): string {
  if (UTC_TEXT.test(value)) return utcIso(value, value.length - 3);
  const parse = pg.types.getTypeParser(TIMESTAMPTZ_OID, 'text') as (text: string) => unknown;
  const parsed = parse(value);
  return (parsed instanceof Date ? parsed : new Date(String(parsed))).toISOString();
}

/** A time inside JSON a database function returned (`to_jsonb` of a `timestamptz`), as {@link isoTimeOfText}. */
export function isoTimeOfJson(value: string): string {
  if (UTC_JSON.test(value)) return utcIso(value, value.length - 6);
  return new Date(value).toISOString();
}

// The date and the time as written, the fraction cut (not rounded) to milliseconds as Date does.
function utcIso(value: string, end: number): string {
  const fraction = end > 19 ? value.slice(20, end) : '';
  return `${value.slice(0, 10)}T${value.slice(11, 19)}.${`${fraction}000`.slice(0, 3)}Z`;
}
