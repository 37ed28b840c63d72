/**
 * Session and question dates as the datasets write them, and the date order of sessions.
 * Neither format gives a time zone, so every date is read as UTC: the timestamps only order
 * sessions and measure the time between them, which a shared zone keeps exact.
 */

// LongMemEval: `2023/05/20 (Sat) 02:21`; the weekday and the time are optional.
const LONGMEMEVAL_DATE = /^(\d{4})\/(\d{1,2})\/(\d{1,2})(?:\s*\(\s*[A-Za-z]{2,9}\.?\s*\))?(?:\s+(\d{1,2}):(\d{2}))?$/;
// LoCoMo: `1:56 pm on 8 May, 2023`.
const LOCOMO_DATE = /^(\d{1,2}):(\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})$/i;
// Hand-written datasets: `2023-05-20`, `2023-05-20T14:30`, `2023-05-20 14:30:00Z`.
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?(Z|[+-]\d{2}:?\d{2})?)?$/;

const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];

/** The examples named in messages about a date that cannot be read. */
export const DATE_EXAMPLES = '"2023/05/20 (Sat) 02:21", "1:56 pm on 8 May, 2023" or "2023-05-20T02:21"';

/**
 * Milliseconds since the epoch (UTC) of a dataset date, or `null` when the text is not one of
 * the accepted shapes or names an impossible date (`2023/02/30`).
 */
export function parseDatasetDate(text: string): number | null {
  const trimmed = text.trim();
  const longMemEval = LONGMEMEVAL_DATE.exec(trimmed);
  if (longMemEval)
    return utc(
      Number(longMemEval[1]),
      Number(longMemEval[2]),
      Number(longMemEval[3]),
      Number(longMemEval[4] ?? 0),
      Number(longMemEval[5] ?? 0),
      0,
    );
  const locomo = LOCOMO_DATE.exec(trimmed);
  if (locomo) return locomoTimestamp(locomo);
  const iso = ISO_DATE.exec(trimmed);
  if (iso) return isoTimestamp(iso);
  return null;
}

function locomoTimestamp(match: RegExpExecArray): number | null {
  const month = monthNumber(match[5] ?? '');
  const hour12 = Number(match[1]);
  if (month === null || hour12 < 1 || hour12 > 12) return null;
  const hour = (hour12 % 12) + ((match[3] ?? '').toLowerCase() === 'p' ? 12 : 0);
  return utc(Number(match[6]), month, Number(match[4]), hour, Number(match[2]), 0);
}

function isoTimestamp(match: RegExpExecArray): number | null {
  const local = utc(
    Number(match[1]),
    Number(match[2]),
    Number(match[3]),
    Number(match[4] ?? 0),
    Number(match[5] ?? 0),
    Number(match[6] ?? 0),
  );
  const zone = match[7];
  if (local === null || zone === undefined || zone === 'Z') return local;
  const digits = zone.replace(':', '');
  const offsetMinutes = Number(digits.slice(1, 3)) * 60 + Number(digits.slice(3, 5));
  return local - (digits.startsWith('-') ? -1 : 1) * offsetMinutes * 60_000;
}

/** 1–12 for a full or three-letter English month name (`May`, `sept`, `December`). */
function monthNumber(name: string): number | null {
  const lower = name.toLowerCase();
  if (lower.length < 3) return null;
  const index = MONTHS.findIndex((month) => month === lower || (lower.length <= 4 && month.startsWith(lower)));
  return index === -1 ? null : index + 1;
}

/** The UTC timestamp, or `null` when a field is out of range (the date must round-trip). */
function utc(year: number, month: number, day: number, hour: number, minute: number, second: number): number | null {
  if (hour > 23 || minute > 59 || second > 59) return null;
  const timestamp = Date.UTC(year, month - 1, day, hour, minute, second);
  const date = new Date(timestamp);
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  return timestamp;
}

/**
 * Sorts sessions by timestamp, stably (equal dates keep their file order). A session without
 * a timestamp keeps its position in the list; the dated sessions are sorted among the others.
 */
export function orderByDate<T extends { readonly timestamp: number | null }>(sessions: readonly T[]): T[] {
  const dated = sessions
    .filter((session) => session.timestamp !== null)
    .sort((left, right) => (left.timestamp ?? 0) - (right.timestamp ?? 0));
  let next = 0;
  return sessions.map((session) => (session.timestamp === null ? session : (dated[next++] ?? session)));
}
