/**
 * The arguments of `RunStore.deleteEndedRuns`, checked alike by every adapter. Private to
 * `src/storage/`.
 * @module
 */
import { invalidOption, requireCount } from '../core/require-option.js';

/** The most runs one `deleteEndedRuns` call deletes, so that no call holds the store for long. */
export const MAX_RUNS_PER_DELETE = 1_000;

/** `olderThanSeconds` and `limit` as checked: a bad one is `OPTION_INVALID` naming it. */
export function retentionArguments(
  olderThanSeconds: unknown,
  limit: unknown,
): { olderThanSeconds: number; limit: number } {
  if (typeof olderThanSeconds !== 'number' || !Number.isSafeInteger(olderThanSeconds) || olderThanSeconds < 0)
    throw invalidOption(
      'deleteEndedRuns',
      'olderThanSeconds',
      `must be a whole number of seconds of at least 0 (got ${String(olderThanSeconds)})`,
      'Pass the age, in seconds, a run must have passed since it was last written.',
    );
  const count = requireCount('deleteEndedRuns', 'limit', limit);
  if (count === undefined || count > MAX_RUNS_PER_DELETE)
    throw invalidOption(
      'deleteEndedRuns',
      'limit',
      `must be a whole number from 1 to ${MAX_RUNS_PER_DELETE} (got ${String(limit)})`,
      'Delete in several calls.',
    );
  return { olderThanSeconds, limit: count };
}
