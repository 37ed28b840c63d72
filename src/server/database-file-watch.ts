/**
 * Watches the SQLite database file while the server runs. SQLite keeps writing to the file it
 * opened, so after an `rm` every write still succeeds and is lost at the next start; nothing
 * else would say so. It also watches the size of the write-ahead log: a reader that keeps an
 * old snapshot open (a backup, a forgotten `sqlite3` shell) stops checkpoints from reusing
 * it, and it grows until the disk is full.
 * @module
 */
import { realpathSync, statSync } from 'node:fs';

/**
 * A started watch. Its `problem()` and `warning()` are for `/healthz`, which answers without a
 * key: they name no path, and point to the server log, where `onProblem` and `onWarning` put
 * the full text.
 */
export interface DatabaseFileWatch {
  /** What is wrong with the file, without its path, or `undefined` while it is the one opened. */
  problem(): string | undefined;
  /**
   * A warning that does not stop the server (the write-ahead log over its alert size), without
   * its path, or `undefined`.
   */
  warning(): string | undefined;
  stop(): void;
}

/** Options of {@link watchDatabaseFile}. */
export interface DatabaseFileWatchOptions {
  readonly intervalMs: number;
  /** Called once, the first time the file is found deleted or replaced, with a text naming it. */
  readonly onProblem: (problem: string) => void;
  /** The `-wal` size that raises a warning; 0: none. @default 0 */
  readonly walAlertBytes?: number;
  /**
   * Called each time the `-wal` file grows past `walAlertBytes` (again after falling below half
   * of it), with a text naming it.
   */
  readonly onWarning?: (warning: string) => void;
}

const MIB = 1024 * 1024;

/**
 * Checks every `intervalMs` that `path` is still the file that was there at the start (same
 * device and inode); the first time it is not, calls `onProblem` with what happened. With
 * `walAlertBytes`, also checks the size of the `-wal` file beside the file `path` resolves to
 * (SQLite follows a symbolic link and keeps its log beside the target).
 */
export function watchDatabaseFile(path: string, options: DatabaseFileWatchOptions): DatabaseFileWatch {
  const opened = identityOf(path);
  const walAlertBytes = options.walAlertBytes ?? 0;
  let found: string | undefined;
  let walWarning: string | undefined;
  // Resolved once the file exists, and kept: a link pointed elsewhere later does not move the
  // log of the file SQLite has open.
  let realPath = realPathOf(path);
  const walPath = (): string => {
    realPath ??= realPathOf(path);
    return `${realPath ?? path}-wal`;
  };
  const checkFile = (): void => {
    if (found !== undefined || opened === undefined) return;
    const now = identityOf(path);
    if (now === opened) return;
    const deleted = now === undefined;
    found = `the database file was ${deleted ? 'deleted' : 'replaced'} under the running server; see the server log`;
    options.onProblem(
      deleted
        ? `the database file ${path} was deleted while the server runs: writes go to the deleted file and are lost ` +
            `when the server stops; stop it and restore the file from a backup`
        : `the database file ${path} was replaced while the server runs: this server still writes to the old file; ` +
            `restart it to use the new one`,
    );
  };
  const checkWal = (): void => {
    if (walAlertBytes <= 0) return;
    const wal = walPath();
    const size = sizeOf(wal);
    // Warned once per crossing: cleared only well below the alert, so a log hovering at it
    // does not warn at every check.
    if (walWarning !== undefined && size <= walAlertBytes / 2) walWarning = undefined;
    if (walWarning !== undefined || size <= walAlertBytes) return;
    const sizeMib = (size / MIB).toFixed(0);
    const alertMib = (walAlertBytes / MIB).toFixed(0);
    walWarning = `the write-ahead log is ${sizeMib} MiB, past its ${alertMib} MiB alert size; see the server log`;
    options.onWarning?.(
      `the database's write-ahead log (${wal}) is ${sizeMib} MiB, over the ${alertMib} MiB alert ` +
        `([memory] sqlite_wal_alert_mb): another connection keeps an old read open (a backup, a sqlite3 shell), ` +
        `so checkpoints cannot reuse the log; end it, and the log is cut back once writes pause`,
    );
  };
  const check = (): void => {
    checkFile();
    checkWal();
  };
  const timer = setInterval(check, options.intervalMs);
  timer.unref();
  return {
    problem: () => {
      checkFile();
      return found;
    },
    warning: () => {
      checkWal();
      return walWarning;
    },
    stop: () => clearInterval(timer),
  };
}

function identityOf(path: string): string | undefined {
  try {
    const stats = statSync(path);
    return `${stats.dev}:${stats.ino}`;
  } catch {
    return undefined;
  }
}

function realPathOf(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
