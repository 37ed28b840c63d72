/**
 * The working-memory purge on Postgres (`purgeExpiredWorkingMemory`): the scopes whose
 * earliest expiry has passed, read through the partial index on it (migration 26, which holds
 * only the scopes with an expiring entry), then, in one short transaction, their version rows
 * locked and their expired rows deleted, each scope's earliest expiry written again without
 * them, with a new version.
 * @module
 */
import type { Pool } from 'pg';
import { newWorkingMemoryVersion } from '../_memory-rows.js';
import { query, readStatement, transaction } from './postgres-connection.js';

/**
 * The purge statements under schema prefix `s`.
 *
 * `due` ($1 at most): the scopes whose earliest expiry has passed, the longest due first.
 *
 * `lock` ($1 the scopes): locks the version rows of those still due. A set takes its scope's
 * version row `FOR UPDATE` before it reads or writes an entry, so while the purge holds it no
 * set writes the scope; rows another transaction holds (a set, a delete, another replica's
 * purge) are skipped, never waited for: that scope goes at a later call, or in its own write.
 *
 * `purge` ($1 the scopes locked, $2 at most this many entries, $3 their new versions): run
 * after `lock`, so its snapshot holds every write committed before the locks were taken. It
 * deletes the scopes' expired rows (locked `SKIP LOCKED`: a delete of the same row waits for
 * none of them) and writes each scope's version and earliest expiry, the earliest of the rows
 * it keeps, expired ones left over (the limit, or skipped) included, so the earliest expiry is
 * never later than any entry's.
 */
export function workingMemoryPurgeStatements(s: string): { due: string; lock: string; purge: string } {
  return {
    due: `SELECT memory_id FROM ${s}working_memory_versions WHERE earliest_expiry <= now()
      ORDER BY earliest_expiry LIMIT $1`,
    lock: `SELECT memory_id FROM ${s}working_memory_versions WHERE memory_id = ANY ($1::text[])
      AND earliest_expiry <= now() FOR UPDATE SKIP LOCKED`,
    purge: `
      WITH doomed AS (
        SELECT e.ctid AS row_id, e.memory_id FROM ${s}working_memory_entries AS e
        WHERE e.memory_id = ANY ($1::text[]) AND e.expires_at <= now()
        ORDER BY e.memory_id, e.entry_key LIMIT $2 FOR UPDATE SKIP LOCKED
      ),
      deleted AS (
        DELETE FROM ${s}working_memory_entries WHERE ctid = ANY (ARRAY(SELECT row_id FROM doomed)) RETURNING 1
      ),
      written AS (
        UPDATE ${s}working_memory_versions AS v SET version = n.version, earliest_expiry = (
          SELECT min(x.expires_at) FROM ${s}working_memory_entries AS x WHERE x.memory_id = v.memory_id
            AND x.ctid <> ALL (ARRAY(SELECT d.row_id FROM doomed AS d WHERE d.memory_id = v.memory_id)))
        FROM unnest($1::text[], $3::bigint[]) AS n (memory_id, version)
        WHERE v.memory_id = n.memory_id
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM deleted)::int AS deleted, (SELECT count(*) FROM written)::int AS scopes`,
  };
}

/** The purge over a pool. */
export interface PostgresWorkingMemoryPurge {
  /** Deletes up to `limit` expired entries, from up to `limit` scopes; returns how many entries. */
  purge(limit: number): Promise<number>;
}

/**
 * One call: a read of the scopes due (none: nothing written), then one transaction of two
 * statements, whatever the number of scopes.
 */
export function createPostgresWorkingMemoryPurge(pool: Pool, s: string): PostgresWorkingMemoryPurge {
  const sql = workingMemoryPurgeStatements(s);
  return {
    async purge(limit) {
      const due = (await readStatement<{ memory_id: string }>(pool, sql.due, [limit])).rows.map((row) => row.memory_id);
      if (due.length === 0) return 0;
      return transaction(pool, async (client) => {
        const locked = (await query<{ memory_id: string }>(client, sql.lock, [due])).rows.map((row) => row.memory_id);
        if (locked.length === 0) return 0;
        const versions = locked.map(() => newWorkingMemoryVersion());
        const result = await query<{ deleted: number }>(client, sql.purge, [locked, limit, versions]);
        return result.rows[0]?.deleted ?? 0;
      });
    },
  };
}
