/**
 * Operation retention on Postgres (`deleteSettledOperations`), through the indexes the
 * operation log already has: its unique (memory_id, scope_sequence) walks the scopes and each
 * scope's oldest operations, and markers are found by (memory_id, marker_position). No
 * migration: an index for it would cost every enqueue and claim its writes.
 * @module
 */
import type { Pool } from 'pg';
import { OPEN_OPERATIONS_PASSED, SCOPES_PER_DELETE } from '../_operation-retention.js';
import { query } from './postgres-connection.js';

/** One scope a walk looked at: whether it has settled operations due, and below which sequence. */
interface VisitedScope {
  readonly memory_id: string;
  /** The sequence the scope's due operations lie below; null when it has none. */
  readonly due_below: number | null;
}

/**
 * The retention statements under schema prefix `s`.
 *
 * `walk` ($1 start after, $2 at most this many scopes, $3 none after this id or null, $4 the age
 * in seconds, $5 the rows looked at per scope): the scopes in id order (one index seek each),
 * each with the sequence below which its due operations lie: the first settled operation
 * written after the cut-off among its oldest $5 below its newest, else the sequence after the
 * last of those, else its newest. `due_below` is null when no settled operation lies below it.
 *
 * `deleteScope` ($1 the scope, $2 below this sequence, $3 at most, $4 the age in seconds):
 * deletes the settled operations below $2 written at or before the cut-off, never the scope's
 * newest, checked again as they are deleted, and their markers (see `markersOfDeleted`, among
 * the scope's oldest `markerScan` markers). Rows
 * another transaction holds (a forget, another replica's sweep) are skipped, never waited for,
 * so it cannot deadlock with a forget, which locks the scope's markers and operations itself.
 */
export function operationRetentionStatements(s: string): { walk: string; deleteScope: string } {
  const cutoff = `now() - make_interval(secs => $4::double precision)`;
  return {
    walk: `
      WITH RECURSIVE scopes (memory_id, visit) AS (
        (SELECT memory_id, 1 FROM ${s}om_operation_log WHERE memory_id > $1 ORDER BY memory_id LIMIT 1)
        UNION ALL
        SELECT (SELECT o.memory_id FROM ${s}om_operation_log AS o WHERE o.memory_id > scopes.memory_id
          ORDER BY o.memory_id LIMIT 1), scopes.visit + 1
        FROM scopes WHERE scopes.memory_id IS NOT NULL AND scopes.visit < $2
          AND ($3::text IS NULL OR scopes.memory_id < $3::text)
      ),
      visited AS MATERIALIZED (
        SELECT v.memory_id, v.visit, n.newest FROM scopes AS v
        CROSS JOIN LATERAL (SELECT o.scope_sequence AS newest FROM ${s}om_operation_log AS o
          WHERE o.memory_id = v.memory_id ORDER BY o.scope_sequence DESC LIMIT 1) AS n
        WHERE v.memory_id IS NOT NULL AND ($3::text IS NULL OR v.memory_id <= $3::text)
      ),
      bounded AS MATERIALIZED (
        SELECT v.memory_id, v.visit, COALESCE(
          (SELECT f.scope_sequence FROM (SELECT o.scope_sequence, o.status, o.updated_at FROM ${s}om_operation_log AS o
              WHERE o.memory_id = v.memory_id AND o.scope_sequence < v.newest ORDER BY o.scope_sequence LIMIT $5) AS f
            WHERE f.status IN ('applied', 'failed') AND f.updated_at > ${cutoff} ORDER BY f.scope_sequence LIMIT 1),
          (SELECT o.scope_sequence + 1 FROM ${s}om_operation_log AS o WHERE o.memory_id = v.memory_id
            AND o.scope_sequence < v.newest ORDER BY o.scope_sequence OFFSET $5 - 1 LIMIT 1),
          v.newest) AS below
        FROM visited AS v
      )
      SELECT b.memory_id, CASE WHEN EXISTS (SELECT 1 FROM ${s}om_operation_log AS o WHERE o.memory_id = b.memory_id
          AND o.scope_sequence < b.below AND o.status IN ('applied', 'failed') ORDER BY o.scope_sequence LIMIT 1)
        THEN b.below END AS due_below
      FROM bounded AS b ORDER BY b.visit`,
    // Rows are deleted by the ctid they were locked at: a row locked cannot move.
    deleteScope: `
      WITH locked AS (
        SELECT o.ctid FROM ${s}om_operation_log AS o
        WHERE o.memory_id = $1 AND o.scope_sequence < $2 AND o.status IN ('applied', 'failed')
          AND o.updated_at <= ${cutoff}
          AND o.scope_sequence < (SELECT n.scope_sequence FROM ${s}om_operation_log AS n WHERE n.memory_id = $1
            ORDER BY n.scope_sequence DESC LIMIT 1)
        ORDER BY o.scope_sequence LIMIT $3 FOR UPDATE SKIP LOCKED
      ),
      deleted AS (
        DELETE FROM ${s}om_operation_log WHERE ctid = ANY (ARRAY(SELECT ctid FROM locked))
        RETURNING operation_id, updated_at
      ),
      through AS (SELECT max(updated_at) AS at, array_agg(operation_id) AS ids, count(*) AS n FROM deleted),
      oldest AS (
        SELECT m.marker_position, m.created_at FROM ${s}om_markers AS m WHERE m.memory_id = $1
        ORDER BY m.marker_position LIMIT 2 * (SELECT n FROM through) + ${OPEN_OPERATIONS_PASSED}
      ),
      bound AS (
        SELECT LEAST(
          (SELECT min(f.marker_position) FROM oldest AS f, through AS t WHERE f.created_at > t.at),
          (SELECT max(f.marker_position) + 1 FROM oldest AS f)) AS below
      ),
      doomed AS (
        SELECT k.ctid FROM ${s}om_markers AS k, through AS t, bound AS b
        WHERE k.memory_id = $1 AND k.marker_position < b.below AND t.at IS NOT NULL
          AND (k.created_at < t.at OR k.cycle_id = ANY (t.ids))
        FOR UPDATE OF k SKIP LOCKED
      ),
      markers AS (DELETE FROM ${s}om_markers WHERE ctid = ANY (ARRAY(SELECT ctid FROM doomed)) RETURNING 1)
      SELECT (SELECT count(*) FROM deleted) AS deleted, (SELECT count(*) FROM markers) AS markers`,
  };
}

/** Retention over a pool; the position where the store's next call starts is kept here. */
export interface PostgresOperationRetention {
  deleteSettled(olderThanSeconds: number, limit: number): Promise<number>;
}

/**
 * One call, as `_operation-retention.ts` says: a walk (one statement; a second from the first
 * scope when it wrapped around), then one short statement for each scope with operations due,
 * in order, until `limit` went. Each statement commits on its own, so none holds a lock for
 * longer than its scope's delete.
 */
export function createPostgresOperationRetention(pool: Pool, s: string): PostgresOperationRetention {
  const sql = operationRetentionStatements(s);
  let resumeAfter = '';
  const walk = async (after: string, budget: number, upTo: string | null, olderThanSeconds: number, limit: number) =>
    (
      await query<VisitedScope & Record<string, unknown>>(pool, sql.walk, [
        after,
        budget,
        upTo,
        olderThanSeconds,
        limit + OPEN_OPERATIONS_PASSED,
      ])
    ).rows;
  return {
    async deleteSettled(olderThanSeconds, limit) {
      const start = resumeAfter;
      const scopes = await walk(start, SCOPES_PER_DELETE, null, olderThanSeconds, limit);
      let next = scopes.at(-1)?.memory_id ?? '';
      // The walk reached the last scope: from the first, up to where it began.
      if (scopes.length < SCOPES_PER_DELETE) {
        next = '';
        if (start !== '') {
          const wrapped = await walk('', SCOPES_PER_DELETE - scopes.length, start, olderThanSeconds, limit);
          scopes.push(...wrapped);
          if (wrapped.length > 0) next = wrapped.at(-1)?.memory_id ?? '';
        }
      }
      let remaining = limit;
      let previous = start;
      for (const scope of scopes) {
        if (scope.due_below !== null) {
          const result = await query<{ deleted: number }>(pool, sql.deleteScope, [
            scope.memory_id,
            scope.due_below,
            remaining,
            olderThanSeconds,
          ]);
          remaining -= result.rows[0]?.deleted ?? 0;
          // The limit went here: the next call starts at this scope again.
          if (remaining <= 0) {
            next = previous;
            break;
          }
        }
        previous = scope.memory_id;
      }
      resumeAfter = next;
      return limit - remaining;
    },
  };
}
