/**
 * Opening and configuring the one connection of a SQLite store.
 * @module
 */
import { closeSync, mkdirSync, openSync, statSync, unlinkSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { Database } from 'better-sqlite3';
import { StoreError } from '../../core/errors.js';
import { startBackgroundCheckpoints } from './sqlite-checkpointer.js';
import type { BackgroundCheckpoints } from './sqlite-checkpointer.js';
import { STORE_NAME } from './sqlite-errors.js';

/**
 * Opens (creating it and its parent directories if needed) the database file. A new file is
 * created readable by its owner only (0600), and SQLite gives its write-ahead log and shared
 * memory the same mode; the folders made for it are its owner's only too (0700). A file or
 * folder that exists keeps its mode. A folder that cannot be made is a `StoreError` naming
 * it, with `data: {path, folder}`. A better-sqlite3 whose compiled addon cannot be loaded is a
 * `StoreError` saying how to rebuild it (`data.reason: 'driver_not_loaded'`), and leaves no file.
 */
export function openSqliteFile(
  path: string,
  busyTimeoutMs: number,
  driver: typeof BetterSqlite3 = BetterSqlite3,
): Database {
  if (path !== ':memory:' && path !== '') {
    const folder = dirname(resolve(path));
    try {
      makeFolders(folder);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error);
      throw new StoreError({
        store: STORE_NAME,
        message: `Cannot create the folder ${folder} for the SQLite file ${path} (${code}).`,
        data: { path, folder },
        cause: error,
      });
    }
  }
  // A `file:` name is a URI when SQLITE_USE_URI is set: SQLite parses it, not this.
  const created = path !== ':memory:' && path !== '' && !path.startsWith('file:') && createPrivateFile(path);
  try {
    return new driver(path, { timeout: busyTimeoutMs });
  } catch (error) {
    if (!isDriverLoadFailure(error)) throw error;
    // The file is not the problem: leave no empty database behind for the next try.
    if (created) unlinkSync(path);
    throw new StoreError({
      store: STORE_NAME,
      message:
        `The better-sqlite3 native module could not be loaded for Node ${process.versions.node} (its install ` +
        'script did not run or built it for another Node): run `npm rebuild better-sqlite3` (pnpm: ' +
        '`pnpm approve-builds`, then reinstall). The database file was not opened.',
      data: { path, reason: 'driver_not_loaded' },
      cause: error,
    });
  }
}

/** Whether opening failed in loading better-sqlite3's compiled addon, not on the file. */
export function isDriverLoadFailure(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  const message = error instanceof Error ? error.message : '';
  return (
    code === 'ERR_DLOPEN_FAILED' ||
    /Could not locate the bindings file|NODE_MODULE_VERSION|invalid ELF header|wrong ELF class|was compiled against a different Node/i.test(
      message,
    )
  );
}

/**
 * Creates `path` empty with mode 0600 when nothing is there (SQLite takes an empty file for an
 * empty database, and creates the `-wal`, `-shm` and `-journal` files with the main file's
 * mode), so memories and transcripts are not readable by other local users whatever the
 * umask. Anything already there (a file, a symlink) is left as it is; SQLite reports what
 * it cannot open.
 */
function createPrivateFile(path: string): boolean {
  try {
    closeSync(openSync(path, 'wx', PRIVATE_FILE_MODE));
    return true;
  } catch {
    // Already there (EEXIST), or SQLite fails on the same path with an error of its own (a
    // folder, no permission).
    return false;
  }
}

// Memories and transcripts are not for other local users: the umask can only take bits
// away from these. (Exports make their folders with the same mode: tools/export-path.ts.)
const PRIVATE_FILE_MODE = 0o600;
const PRIVATE_FOLDER_MODE = 0o700;

// Node's recursive mkdirSync never returns on some virtual file systems (`/proc/harness/x`
// loops on ENOENT), so the missing folders are made one by one from the nearest existing one,
// each 0700 (the folder holds the write-ahead log and shared memory, created as SQLite needs
// them). Folders that exist are never changed.
function makeFolders(folder: string): void {
  const missing: string[] = [];
  let current = folder;
  while (!exists(current)) {
    missing.push(current);
    const parent = dirname(current);
    if (parent === current) break;
    current = parent;
  }
  for (const each of missing.reverse()) {
    try {
      mkdirSync(each, { mode: PRIVATE_FOLDER_MODE });
    } catch (error) {
      // Made meanwhile by another process: fine if it is a folder now.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(each).isDirectory()) throw error;
    }
  }
  if (!statSync(folder).isDirectory()) throw Object.assign(new Error(`${folder} is not a folder`), { code: 'EEXIST' });
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

/**
 * Sets WAL mode (checked for files), the busy timeout, the durability level, foreign keys
 * and secure delete on a fresh connection.
 */
export function configureSqliteConnection(
  db: Database,
  settings: { busyTimeoutMs: number; synchronous: 'NORMAL' | 'FULL'; path: string },
): void {
  db.pragma(`busy_timeout = ${settings.busyTimeoutMs}`);
  const mode = db.pragma('journal_mode = WAL', { simple: true });
  if (!db.memory && mode !== 'wal') {
    throw new StoreError({
      store: STORE_NAME,
      message:
        `Could not switch ${settings.path} to WAL mode (journal_mode is ${String(mode)}). Use a file ` +
        `on a local filesystem.`,
      data: { path: settings.path },
    });
  }
  db.pragma(`synchronous = ${settings.synchronous}`);
  db.pragma('foreign_keys = ON');
  // Deleted content is overwritten with zeros, so forgotten data does not linger in free pages.
  db.pragma('secure_delete = ON');
}

/**
 * Pages in the write-ahead log at which a connection with background checkpoints still
 * checkpoints inline (about 40 MiB at 4 KiB pages). The log restarts from its beginning
 * only when a checkpoint has copied all of it before the next write begins; under writes
 * that never pause, the worker's checkpoints always trail a little, and this bounds the file.
 */
export const BACKSTOP_CHECKPOINT_PAGES = 10_000;

/** SQLite's own default, used again when background checkpoints fail. */
const INLINE_CHECKPOINT_PAGES = 1000;

/**
 * Hands the file's checkpoints to the process's checkpoint worker (see
 * startBackgroundCheckpoints): this connection then checkpoints only as a backstop. Does
 * nothing for in-memory databases. If the worker fails, the connection goes back to inline
 * checkpoints and a process warning says why; nothing else changes.
 */
export function useBackgroundCheckpoints(
  db: Database,
  settings: { synchronous: 'NORMAL' | 'FULL' },
): BackgroundCheckpoints | undefined {
  if (db.memory) return undefined;
  db.pragma(`wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}`);
  return startBackgroundCheckpoints(db.name, {
    synchronous: settings.synchronous,
    onFailure: (message) => {
      if (db.open) db.pragma(`wal_autocheckpoint = ${INLINE_CHECKPOINT_PAGES}`);
      process.emitWarning(
        `Background checkpoints of ${db.name} stopped (${message}); this connection checkpoints inline again.`,
        { code: 'HARNESS_MEMORY_CHECKPOINTS' },
      );
    },
  });
}
