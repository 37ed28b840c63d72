/**
 * Whether a newer harness-memory has upgraded the database since this process opened it.
 * @module
 */
import type { Database } from 'better-sqlite3';
import { StoreError } from '../../core/errors.js';

/**
 * Returns a check that throws `STORE_FAILED` once the file's schema is newer than
 * `supportedVersion`. Migrations record their version in the header's `user_version` too
 * (see `migrateSqliteDatabase`), which costs one read of the header to check: a process left
 * running across an upgrade would otherwise go on writing without what the newer schema
 * keeps up to date (counters, derived columns) and drift it until the next apply.
 */
export function createSchemaCheck(db: Database, store: string, supportedVersion: number): () => void {
  const userVersion = db.prepare<[], number>('PRAGMA user_version').pluck();
  return () => {
    const found = userVersion.get() ?? 0;
    if (found <= supportedVersion) return;
    throw new StoreError({
      store,
      message:
        `The database was upgraded to schema version ${found} by a newer harness-memory while this ` +
        `process had it open (this version knows ${supportedVersion}); nothing was written. Restart ` +
        `this process with the newer version.`,
      data: { schemaVersion: found, supportedVersion },
    });
  };
}
