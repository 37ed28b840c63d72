/**
 * Operation retention on SQLite (`deleteSettledOperations`): settled operations past an age
 * deleted scope by scope, through the operation log's own primary key (memory_id,
 * scope_sequence), with no index of its own: decision 5 keeps the log to that key and two
 * small partial indexes of pending work, because every b-tree costs each observe a page write.
 * @module
 */
import type { Database } from 'better-sqlite3';
import {
  markerScan,
  OPEN_OPERATIONS_PASSED,
  settledBeforeNewer,
  walkScopes,
  type LoggedOperation,
} from '../_operation-retention.js';

/** Retention over one connection; the store calls it inside a write transaction. */
export interface SqliteOperationRetention {
  /**
   * Deletes up to `limit` settled operations written at or before `cutoff` (ISO 8601, from
   * the database clock), with their markers; returns how many operations.
   */
  deleteSettled(cutoff: string, limit: number): number;
}

/** Prepares the statements; the connection's last call's position is kept here. */
export function createSqliteOperationRetention(db: Database): SqliteOperationRetention {
  // One seek each: the scopes in key order, a scope's newest operation, its oldest ones.
  const nextScope = db
    .prepare<[string], string>('SELECT memory_id FROM om_operation_log WHERE memory_id > ? ORDER BY memory_id LIMIT 1')
    .pluck();
  const newestSequence = db
    .prepare<[string], number | null>('SELECT MAX(scope_sequence) FROM om_operation_log WHERE memory_id = ?')
    .pluck();
  const oldest = db
    .prepare<[string, number, number], [number, string, string, string]>(
      `SELECT scope_sequence, status, updated_at, operation_id FROM om_operation_log
       WHERE memory_id = ? AND scope_sequence < ? ORDER BY scope_sequence LIMIT ?`,
    )
    .raw(true);
  // Every settled row between the first and the last one chosen is chosen: only open rows
  // are passed over, and the status keeps them.
  const deleteRange = db.prepare<[string, number, number]>(
    `DELETE FROM om_operation_log WHERE memory_id = ? AND scope_sequence BETWEEN ? AND ?
       AND status IN ('applied', 'failed')`,
  );
  // Among the scope's oldest @scan markers, those before the first written after the latest
  // deleted operation was (see markersOfDeleted): those written before it, and the deleted
  // operations' own.
  const deleteMarkers = db.prepare<[{ memoryId: string; through: string; ids: string; scan: number }]>(
    `WITH oldest AS (SELECT marker_position, cycle_id, created_at FROM om_markers WHERE memory_id = @memoryId
       ORDER BY marker_position LIMIT @scan)
     DELETE FROM om_markers WHERE memory_id = @memoryId AND marker_position IN (
       SELECT marker_position FROM oldest
       WHERE marker_position < COALESCE((SELECT MIN(marker_position) FROM oldest WHERE created_at > @through),
           9223372036854775807)
         AND (created_at < @through OR cycle_id IN (SELECT value FROM json_each(@ids))))`,
  );
  let resumeAfter = '';

  return {
    deleteSettled(cutoff, limit) {
      let remaining = limit;
      resumeAfter = walkScopes(
        resumeAfter,
        (after) => nextScope.get(after),
        (memoryId) => {
          const newest = newestSequence.get(memoryId) ?? 0;
          const chosen = settledBeforeNewer(
            rowsOf(() => oldest.iterate(memoryId, newest, limit + OPEN_OPERATIONS_PASSED)),
            cutoff,
            remaining,
          );
          const first = chosen[0];
          const last = chosen.at(-1);
          if (!first || !last) return false;
          remaining -= deleteRange.run(memoryId, first.scopeSequence, last.scopeSequence).changes;
          deleteMarkers.run({
            memoryId,
            through: chosen.reduce((latest, row) => (row.updatedAt > latest ? row.updatedAt : latest), ''),
            ids: JSON.stringify(chosen.map((row) => row.operationId)),
            scan: markerScan(chosen.length),
          });
          return remaining <= 0;
        },
      );
      return limit - remaining;
    },
  };
}

/**
 * The rows as the choice reads them, one at a time: the choice stops early, and closing this
 * closes the statement's iterator, which must be done before the connection runs another.
 */
function* rowsOf(read: () => Iterable<[number, string, string, string]>): Generator<LoggedOperation> {
  for (const [scopeSequence, status, updatedAt, operationId] of read())
    yield { scopeSequence, status, updatedAt, operationId };
}
