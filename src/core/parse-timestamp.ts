/**
 * Strict RFC 3339 timestamps, for times that come from outside.
 * @module
 */

// Date, then optionally a time with its offset (a time without one would be read in the
// server's own time zone).
const RFC_3339 =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([Zz])|([+-])(\d{2}):(\d{2})))?$/;

/**
 * The time an RFC 3339 timestamp names (`2024-05-01T10:00:00Z`, `2024-05-01T12:00:00.5+02:00`,
 * or a date alone, `2024-05-01`, as midnight UTC), or `undefined` when `text` is not one: a
 * time without an offset, a date that does not exist (`2024-02-30`), a field out of range, or
 * anything `Date.parse` would guess at (`May 1`, `1`).
 */
export function parseTimestamp(text: string): Date | undefined {
  const match = RFC_3339.exec(text);
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second, fraction, zulu, sign, offsetHours, offsetMinutes] = match;
  const [y, mo, d] = [Number(year), Number(month), Number(day)];
  const [h, mi, s] = [Number(hour ?? 0), Number(minute ?? 0), Number(second ?? 0)];
  if (hour !== undefined && zulu === undefined && sign === undefined) return undefined;
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) || h > 23 || mi > 59 || s > 59) return undefined;
  const offset = sign === undefined ? 0 : Number(offsetHours) * 60 + Number(offsetMinutes);
  if (Number(offsetHours ?? 0) > 23 || Number(offsetMinutes ?? 0) > 59) return undefined;
  const time = new Date(0);
  // setUTCFullYear, not Date.UTC: the latter reads years 0-99 as 1900-1999.
  time.setUTCFullYear(y, mo - 1, d);
  time.setUTCHours(h, mi, s, Math.floor(Number(`0.${fraction ?? '0'}`) * 1000));
  return new Date(time.getTime() - (sign === '-' ? -offset : offset) * 60_000);
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}
