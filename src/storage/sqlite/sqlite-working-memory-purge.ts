/**
 * The working-memory purge on SQLite (`purgeExpiredWorkingMemory`): the scopes whose earliest
 * expiry has passed, read through the partial index on it (migration 16, which holds only the
 * scopes with an expiring entry), and their expired rows deleted, each scope's usage and
 * earliest expiry written again without them, with a new version.
 * @module
 */
import type { Database } from 'better-sqlite3';
import { newWorkingMemoryVersion } from '../_memory-rows.js';
import { ENTRY_BYTES } from './sqlite-statements.js';

/** The purge over one connection; the store calls `purge` inside a write transaction. */
export interface SqliteWorkingMemoryPurge {
  /** True when some scope's earliest expiry is at or before `now`: without one, no write is needed. */
  isDue(now: string): boolean;
  /**
   * Deletes up to `limit` entries expired at `now` (ISO 8601, from the database clock), from
   * up to `limit` scopes, the longest due first; returns how many entries.
   */
  purge(now: string, limit: number): number;
}

/** Prepares the statements. */
export function createSqliteWorkingMemoryPurge(db: Database): SqliteWorkingMemoryPurge {
  const dueScopes = db
    .prepare<[string, number], string>(
      'SELECT memory_id FROM working_memory_versions WHERE earliest_expiry <= ? ORDER BY earliest_expiry LIMIT ?',
    )
    .pluck();
  const usage = db
    .prepare<[string], [number, number, string | null]>(
      'SELECT entry_count, total_bytes, earliest_expiry FROM working_memory_versions WHERE memory_id = ?',
    )
    .raw(true);
  // The scope's expired rows through its primary key (memory_id, entry_key): a scope holds
  // few entries (its limit), so no index on the expiry of each entry is kept for this.
  const deleteExpired = db
    .prepare<[{ memoryId: string; now: string; limit: number }], number>(
      `DELETE FROM working_memory_entries WHERE memory_id = @memoryId AND entry_key IN (
         SELECT entry_key FROM working_memory_entries WHERE memory_id = @memoryId AND expires_at <= @now
         ORDER BY entry_key LIMIT @limit)
       RETURNING ${ENTRY_BYTES}`,
    )
    .pluck();
  const earliestExpiry = db
    .prepare<[string], string | null>('SELECT MIN(expires_at) FROM working_memory_entries WHERE memory_id = ?')
    .pluck();
  const writeUsage = db.prepare<[number, number, number, string | null, string]>(
    `UPDATE working_memory_versions SET version = ?, entry_count = ?, total_bytes = ?, earliest_expiry = ?
     WHERE memory_id = ?`,
  );

  return {
    isDue: (now) => dueScopes.get(now, 1) !== undefined,
    purge(now, limit) {
      let remaining = limit;
      for (const memoryId of dueScopes.all(now, limit)) {
        if (remaining === 0) break;
        const stored = usage.get(memoryId);
        if (!stored) continue;
        const [count, bytes] = stored;
        const removed = deleteExpired.all({ memoryId, now, limit: remaining });
        const freed = removed.reduce((sum, entryBytes) => sum + entryBytes, 0);
        remaining -= removed.length;
        // Expired rows left over (the limit) keep the scope due: the next call goes on with it.
        writeUsage.run(
          newWorkingMemoryVersion(),
          count - removed.length,
          bytes - freed,
          earliestExpiry.get(memoryId) ?? null,
          memoryId,
        );
      }
      return limit - remaining;
    },
  };
}
