/**
 * Opening and configuring the one connection of a SQLite store.
 * @module
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { Database } from 'better-sqlite3';
import { StoreError } from '../../core/errors.js';
import { STORE_NAME } from './sqlite-errors.js';

/** Opens (creating it and its parent directories if needed) the database file. */
export function openSqliteFile(path: string, busyTimeoutMs: number): Database {
  if (path !== ':memory:' && path !== '') mkdirSync(dirname(resolve(path)), { recursive: true });
  return new BetterSqlite3(path, { timeout: busyTimeoutMs });
}

/**
 * Sets WAL mode (checked for files), the busy timeout, the durability level, foreign keys
 * and secure delete on a fresh connection.
 */
export function configureSqliteConnection(db: Database, settings: { busyTimeoutMs: number; synchronous: 'NORMAL' | 'FULL'; path: string }): void {
  db.pragma(`busy_timeout = ${settings.busyTimeoutMs}`);
  const mode = db.pragma('journal_mode = WAL', { simple: true });
  if (!db.memory && mode !== 'wal') {
    throw new StoreError({
      store: STORE_NAME,
      message: `Could not switch ${settings.path} to WAL mode (journal_mode is ${String(mode)}). Use a file on a local filesystem.`,
      data: { path: settings.path },
    });
  }
  db.pragma(`synchronous = ${settings.synchronous}`);
  db.pragma('foreign_keys = ON');
  // Deleted content is overwritten with zeros, so forgotten data does not linger in free pages.
  db.pragma('secure_delete = ON');
}

