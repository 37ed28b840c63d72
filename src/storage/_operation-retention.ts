/**
 * What `MemoryStore.deleteSettledOperations` deletes, decided alike by every adapter: its
 * arguments checked, the bounds of one call, and which of a scope's oldest operations go.
 * Private to `src/storage/`.
 *
 * One call walks scopes in memory-id order, starting after the scope where the store's last
 * call stopped (wrapping around once), at most {@link SCOPES_PER_DELETE} of them. In each it
 * reads the oldest operations below the scope's newest (kept: the scope's next sequence is
 * counted from it), at most `limit` + {@link OPEN_OPERATIONS_PASSED} of them, in sequence
 * order, and deletes the settled ones
 * (`applied`, `failed`) up to the first settled one written after the cut-off: sequences grow
 * with time within a scope, so what follows it is newer still. Open ones (queued, processing,
 * dead) are passed over and kept. The markers of the deleted operations go with them
 * ({@link markersOfDeleted}). The call stops once it deleted `limit`, and the next starts at
 * that scope again.
 * @module
 */
import { compareUtf8 } from '../core/compare-utf8.js';
import { invalidOption, requireOptions } from '../core/require-option.js';
import type { OperationStatus } from './store.js';

const METHOD = 'deleteSettledOperations';

/** The most operations one `deleteSettledOperations` call deletes, so that no call holds the store for long. */
export const MAX_OPERATIONS_PER_DELETE = 1_000;

/** The most scopes one call looks at: a call where little is due costs a few index seeks per scope. */
export const SCOPES_PER_DELETE = 256;

/**
 * Room for open operations (queued, processing, dead) in the rows a call reads of one scope:
 * it reads the oldest `limit` + this many below the scope's newest. Fewer are deleted when
 * more open ones sit among them, and none while all of them are open (at the sweep's limit of
 * 1,000: 1,064 dead operations never retried, or a queue that long), until some of those
 * settle or are retried.
 */
export const OPEN_OPERATIONS_PASSED = 64;

/** The longest age a call takes: 36,500 days, the longest `operation_retention_days`. */
export const MAX_OPERATION_AGE_SECONDS: number = 36_500 * 86_400;

/** `olderThanSeconds` and `limit` as checked: a bad one is `OPTION_INVALID` naming it. */
export function operationRetentionArguments(input: unknown): { olderThanSeconds: number; limit: number } {
  const { olderThanSeconds, limit } = requireOptions(METHOD, input, 'Pass { olderThanSeconds, limit }.') as {
    olderThanSeconds?: unknown;
    limit?: unknown;
  };
  if (
    typeof olderThanSeconds !== 'number' ||
    !Number.isSafeInteger(olderThanSeconds) ||
    olderThanSeconds < 0 ||
    olderThanSeconds > MAX_OPERATION_AGE_SECONDS
  )
    throw invalidOption(
      METHOD,
      'olderThanSeconds',
      `must be a whole number of seconds from 0 to ${MAX_OPERATION_AGE_SECONDS} (got ${String(olderThanSeconds)})`,
      'Pass the age, in seconds, an operation must have passed since it was last written.',
    );
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_OPERATIONS_PER_DELETE)
    throw invalidOption(
      METHOD,
      'limit',
      `must be a whole number from 1 to ${MAX_OPERATIONS_PER_DELETE} (got ${String(limit)})`,
      'Delete in several calls.',
    );
  return { olderThanSeconds, limit };
}

/** The rows of a scope's log that the choice reads, oldest first. */
export interface LoggedOperation {
  readonly scopeSequence: number;
  readonly status: OperationStatus | string;
  /** ISO 8601 UTC, as the store writes it. */
  readonly updatedAt: string;
  readonly operationId: string;
}

/**
 * The operations of one scope a call deletes: from `oldest` (the scope's operations below its
 * newest, in sequence order, at most `limit` + {@link OPEN_OPERATIONS_PASSED} of them), the
 * settled ones written at or before `cutoff`, up to the first settled one written after it and
 * at most `remaining`. Reads no further than it needs.
 */
export function settledBeforeNewer(
  oldest: Iterable<LoggedOperation>,
  cutoff: string,
  remaining: number,
): LoggedOperation[] {
  const chosen: LoggedOperation[] = [];
  if (remaining < 1) return chosen;
  for (const operation of oldest) {
    if (operation.status !== 'applied' && operation.status !== 'failed') continue;
    if (operation.updatedAt > cutoff) break;
    chosen.push(operation);
    if (chosen.length === remaining) break;
  }
  return chosen;
}

/**
 * How many of a scope's oldest markers a call looks at after deleting `deleted` of its
 * operations: each operation has two markers at most, and theirs come first (markers are in
 * the order operations were applied, and a scope's operations are deleted oldest first); the
 * rest is room for markers no operation of the log names. The bound keeps a call short when
 * many markers carry one time (a clock stepped back); what it leaves goes at a later call.
 */
export function markerScan(deleted: number): number {
  return 2 * deleted + OPEN_OPERATIONS_PASSED;
}

/**
 * Which of a scope's markers go with the operations a call deleted (`operationIds`, the latest
 * of them written at `settledThrough`): markers are written in the transaction that applied
 * their operation, at its time, and in the order operations were applied, so the markers
 * written before `settledThrough` are those of deleted operations (this call's, or an earlier
 * call's) or of cycles no operation of the log names (the reference schema's); a marker
 * written at that very time goes only when its operation did. The walk stops at the first
 * marker written after `settledThrough` (everything after it is newer), or after `scan`
 * markers ({@link markerScan}). Returns the indexes, in `markers` order, of those to delete.
 */
export function markersOfDeleted(
  markers: Iterable<{ readonly cycleId: string; readonly createdAt: string }>,
  operationIds: ReadonlySet<string>,
  settledThrough: string,
  scan: number,
): number[] {
  const doomed: number[] = [];
  let index = 0;
  for (const marker of markers) {
    if (index >= scan || marker.createdAt > settledThrough) break;
    if (marker.createdAt < settledThrough || operationIds.has(marker.cycleId)) doomed.push(index);
    index++;
  }
  return doomed;
}

/**
 * Walks scope ids in byte order for one call: from the first after `start` (the id where the
 * store's last call left off, `''` for the beginning), wrapping around to the first id once
 * when `start` is not the beginning, at most {@link SCOPES_PER_DELETE} scopes. `next(after)`
 * is the first id after `after`; `visit` answers true to stop at that scope (the call's limit
 * was reached there). Returns where the next call starts: after the last scope done, before
 * the one stopped at, or `''` once the walk reached the last id.
 */
export function walkScopes(
  start: string,
  next: (after: string) => string | undefined,
  visit: (memoryId: string) => boolean,
): string {
  let after = start;
  let wrapped = start === '';
  for (let visited = 0; visited < SCOPES_PER_DELETE;) {
    const memoryId = next(after);
    if (memoryId === undefined || (wrapped && start !== '' && compareUtf8(memoryId, start) > 0)) {
      // The end, or back where the call began.
      if (wrapped) return memoryId === undefined ? '' : after;
      wrapped = true;
      after = '';
      continue;
    }
    visited++;
    if (visit(memoryId)) return after;
    after = memoryId;
  }
  return after;
}
