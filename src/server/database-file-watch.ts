/**
 * Notices the SQLite database file being deleted or replaced while the server runs. SQLite
 * keeps writing to the file it opened, so after an `rm` every write still succeeds and is
 * lost at the next start; nothing else would say so.
 * @module
 */
import { statSync } from 'node:fs';

/** A started watch. */
export interface DatabaseFileWatch {
  /** What is wrong with the file, or `undefined` while it is the one opened. */
  problem(): string | undefined;
  stop(): void;
}

/**
 * Checks every `intervalMs` that `path` is still the file that was there at the start (same
 * device and inode); the first time it is not, calls `onProblem` with what happened.
 */
export function watchDatabaseFile(
  path: string,
  options: { readonly intervalMs: number; readonly onProblem: (problem: string) => void },
): DatabaseFileWatch {
  const opened = identityOf(path);
  let found: string | undefined;
  const check = (): void => {
    if (found !== undefined || opened === undefined) return;
    const now = identityOf(path);
    if (now === opened) return;
    found =
      now === undefined
        ? `the database file ${path} was deleted while the server runs: writes go to the deleted file and are lost ` +
          `when the server stops; stop it and restore the file from a backup`
        : `the database file ${path} was replaced while the server runs: this server still writes to the old file; ` +
          `restart it to use the new one`;
    options.onProblem(found);
  };
  const timer = setInterval(check, options.intervalMs);
  timer.unref();
  return {
    problem: () => {
      check();
      return found;
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
