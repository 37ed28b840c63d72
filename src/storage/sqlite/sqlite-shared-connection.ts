/**
 * One SQLite connection for a process's memory store and run store on the same file.
 * @module
 */
import { resolve } from 'node:path';
import type { Database } from 'better-sqlite3';

/** Which store holds a connection: a connection has at most one of each. */
export type SqliteConnectionHolder = 'memory' | 'runs';

/** What a connection is opened with: stores share one only when they open it alike. */
export interface SqliteConnectionSettings {
  readonly path: string;
  readonly synchronous: 'NORMAL' | 'FULL';
  readonly busyTimeoutMs: number;
  readonly checkpoints: 'background' | 'inline';
}

/** A store's hold on a connection. */
export interface SqliteConnectionHold {
  readonly db: Database;
  /** Whether this hold opened the connection (and configured and migrated it) rather than joining one. */
  readonly opened: boolean;
  /** Lets go of the connection; the last holder closes it (and sees what closing threw). Once only. */
  release(): void;
}

interface SharedConnection {
  readonly db: Database;
  readonly holders: Set<SqliteConnectionHolder>;
}

// Connections by file and settings. A connection may have one memory store and one run store,
// never two of a kind: two memory stores on one file stay two connections, as two processes
// would be (the cross-connection tests rely on it).
const connections = new Map<string, SharedConnection[]>();

/**
 * The connection `holder` uses for `settings.path`: the one the process's other store on that
 * file opened with the same settings, or a new one from `open` (which configures and migrates
 * it). `:memory:`, `file:` names and the empty path are never shared.
 *
 * NOTE: why share. SQLite drops a connection's whole page cache at its next transaction
 * whenever another connection committed since, so the memory store and the run store, writing
 * in turns through a run, kept re-reading the pages the other had just made them drop (issue
 * 16). On one connection every transaction finds the pages it needs cached. Nothing else
 * changes: both stores' transactions are synchronous, so they never interleave, and each store
 * keeps its own statements, guard, errors and checkpoint registration.
 */
export function holdSqliteConnection(
  holder: SqliteConnectionHolder,
  settings: SqliteConnectionSettings,
  open: () => Database,
): SqliteConnectionHold {
  const key = keyOf(settings);
  const candidates = key === undefined ? undefined : connections.get(key);
  const joined = candidates?.find((shared) => !shared.holders.has(holder) && shared.db.open);
  const shared = joined ?? { db: open(), holders: new Set<SqliteConnectionHolder>() };
  shared.holders.add(holder);
  if (!joined && key !== undefined) {
    if (candidates) candidates.push(shared);
    else connections.set(key, [shared]);
  }
  let released = false;
  return {
    db: shared.db,
    opened: !joined,
    release() {
      if (released) return;
      released = true;
      shared.holders.delete(holder);
      if (shared.holders.size > 0) return;
      if (key !== undefined) {
        const left = (connections.get(key) ?? []).filter((other) => other !== shared);
        if (left.length > 0) connections.set(key, left);
        else connections.delete(key);
      }
      if (shared.db.open) shared.db.close();
    },
  };
}

/** A hold on a connection the caller opened and nobody shares (a store's `database` option); release closes it. */
export function privateSqliteConnection(db: Database): SqliteConnectionHold {
  let released = false;
  return {
    db,
    opened: true,
    release() {
      if (released) return;
      released = true;
      if (db.open) db.close();
    },
  };
}

function keyOf(settings: SqliteConnectionSettings): string | undefined {
  const { path } = settings;
  if (path === '' || path === ':memory:' || path.startsWith('file:')) return undefined;
  return [resolve(path), settings.synchronous, settings.busyTimeoutMs, settings.checkpoints].join('\u0000');
}
