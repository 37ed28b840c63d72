/**
 * What `MemoryStore.purgeExpiredWorkingMemory` takes, checked alike by every adapter, and the
 * bounds of one call. Private to `src/storage/`.
 *
 * One call reads the scopes whose earliest expiry has passed, the longest past first (the
 * stores keep that earliest expiry beside each scope's version, so they find them through an
 * index on it, never by reading every scope), at most `limit` of them, and deletes their
 * expired entries, at most `limit` in all.
 * @module
 */
import { invalidOption, requireOptions } from '../core/require-option.js';

const METHOD = 'purgeExpiredWorkingMemory';

/** The most entries one call deletes, and the most scopes it looks at, so that no call holds the store for long. */
export const MAX_ENTRIES_PER_PURGE = 1_000;

/** `limit` as checked: a bad one is `OPTION_INVALID` naming it. */
export function workingMemoryPurgeArguments(input: unknown): { limit: number } {
  const { limit } = requireOptions(METHOD, input, 'Pass { limit }.') as { limit?: unknown };
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_ENTRIES_PER_PURGE)
    throw invalidOption(
      METHOD,
      'limit',
      `must be a whole number from 1 to ${MAX_ENTRIES_PER_PURGE} (got ${String(limit)})`,
      'Purge in several calls.',
    );
  return { limit };
}
