/**
 * The paging query of the list routes: `limit` (1–200, default 50) and `cursor`.
 * @module
 */
import { httpError } from './http-error.js';

/** The largest page a list route returns. */
export const MAX_PAGE_LIMIT = 200;
/** The page size when `limit` is left out. */
export const DEFAULT_PAGE_LIMIT = 50;

type QueryContext = { req: { query: (name: string) => string | undefined } };

/** `limit` (checked) and `cursor` of the query string, each only when given. */
export function pageQuery(context: QueryContext): { limit?: number; cursor?: string } {
  const limit = context.req.query('limit');
  const cursor = context.req.query('cursor');
  let parsed: number | undefined;
  if (limit !== undefined) {
    parsed = /^\d{1,4}$/.test(limit) ? Number(limit) : Number.NaN;
    if (!(parsed >= 1 && parsed <= MAX_PAGE_LIMIT))
      throw httpError(
        400,
        'invalid_request',
        `limit must be an integer from 1 to ${MAX_PAGE_LIMIT}, got ${JSON.stringify(limit.slice(0, 20))}`,
      );
  }
  return { ...(parsed === undefined ? {} : { limit: parsed }), ...(cursor === undefined ? {} : { cursor }) };
}

/** `{[key]: value}` when the query string has `name`, else `{}`. */
export function optionalQuery<K extends string>(context: QueryContext, name: string, key: K): { [P in K]?: string } {
  const value = context.req.query(name);
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

/** An opaque cursor holding `value`. */
export function encodeCursor(value: Record<string, string | number>): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

/** The object inside a cursor this API made; `400 invalid_request` naming `cursor` otherwise. */
export function decodeCursor(cursor: string): Record<string, unknown> {
  if (cursor.length > 0 && cursor.length <= 2048 && /^[\w-]+$/.test(cursor)) {
    try {
      const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    } catch {
      // Answered below like any other cursor this API did not make.
    }
  }
  throw httpError(400, 'invalid_request', 'cursor is not one this API returned');
}
