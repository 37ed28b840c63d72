/**
 * Waiting for another process's lock without blocking the event loop: better-sqlite3 is
 * synchronous, so SQLite's own busy handler would sleep the whole process (every tenant, every
 * timer). The store's connection gets a busy timeout of a few milliseconds, and what it cannot
 * do in that time is tried again from a timer, until the store's busy timeout has passed.
 * @module
 */
import type { Database } from 'better-sqlite3';

/** The longest SQLite's own busy handler may block the event loop on the store's connection. */
export const SYNCHRONOUS_BUSY_TIMEOUT_MS = 2;

/** First pause before trying again; it doubles up to {@link MAX_RETRY_DELAY_MS}. */
export const FIRST_RETRY_DELAY_MS = 1;
export const MAX_RETRY_DELAY_MS = 50;

/** Whether `error` (or the driver error it wraps) says the file is locked by another connection. */
export function isBusyError(error: unknown): boolean {
  return isBusyCode(codeOf(error)) || isBusyCode(codeOf((error as { cause?: unknown } | null)?.cause));
}

/** After its start-up (migrations may wait the full timeout), a connection's own busy handler waits a few ms at most. */
export function limitSynchronousBusyWait(db: Database, busyTimeoutMs: number): void {
  db.pragma(`busy_timeout = ${Math.min(busyTimeoutMs, SYNCHRONOUS_BUSY_TIMEOUT_MS)}`);
}

/** The pause after `delay`. */
export function nextRetryDelay(delay: number): number {
  return Math.min(delay * 2, MAX_RETRY_DELAY_MS);
}

/** Waits `ms` on a timer. */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Runs the synchronous `work` now and, while it throws because the file is locked, again after
 * growing pauses until `budgetMs` has passed; then the last error is thrown. `work` must undo
 * itself when it throws (a transaction that could not begin, a statement that did not run).
 */
export async function retryWhileBusy<T>(work: () => T, budgetMs: number): Promise<T> {
  const deadline = performance.now() + budgetMs;
  let delay = FIRST_RETRY_DELAY_MS;
  for (;;) {
    try {
      return work();
    } catch (error) {
      const left = deadline - performance.now();
      if (!isBusyError(error) || left <= 0) throw error;
      await pause(Math.min(delay, left));
      delay = nextRetryDelay(delay);
    }
  }
}

/**
 * One try at copying the whole write-ahead log into the file and truncating it, without
 * waiting: true when it is empty now. A reader of an older snapshot (in any process) or
 * another connection's checkpoint keeps it from being emptied.
 */
export function tryEmptyWriteAheadLog(db: Database): boolean {
  const timeout = db.pragma('busy_timeout', { simple: true }) as number;
  db.pragma('busy_timeout = 0');
  try {
    const [result] = db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
    return result === undefined || result.busy === 0;
  } catch (error) {
    if (isBusyError(error)) return false;
    throw error;
  } finally {
    db.pragma(`busy_timeout = ${timeout}`);
  }
}

/**
 * Tries to empty the log (see {@link tryEmptyWriteAheadLog}) until it is empty or `budgetMs` has
 * passed. While an earlier caller's log is still held (see {@link emptyWriteAheadLogLater}) it
 * tries once: a forget of both memories then waits for the one log once, not twice.
 */
export async function emptyWriteAheadLogWithin(db: Database, budgetMs: number): Promise<boolean> {
  const deadline = performance.now() + (emptyingLater.has(db) ? 0 : budgetMs);
  let delay = FIRST_RETRY_DELAY_MS;
  for (;;) {
    if (!db.open) return false;
    if (tryEmptyWriteAheadLog(db)) return true;
    const left = deadline - performance.now();
    if (left <= 0) return false;
    await pause(Math.min(delay, left));
    delay = nextRetryDelay(delay);
  }
}

/** The pause between the tries of {@link emptyWriteAheadLogLater}. */
const LATER_RETRY_DELAY_MS = 250;

/**
 * Keeps trying to empty the log, from a timer that does not keep the process alive, until it
 * is empty or the connection is closed (closing the last connection checkpoints and removes it).
 */
export function emptyWriteAheadLogLater(db: Database): void {
  if (emptyingLater.has(db)) return;
  emptyingLater.add(db);
  const tryAgain = (): void => {
    let emptied = true;
    try {
      emptied = !db.open || (!db.inTransaction && tryEmptyWriteAheadLog(db));
    } catch {
      // A failing connection reports itself on its next use; the log is then emptied at close.
    }
    if (emptied) emptyingLater.delete(db);
    else setTimeout(tryAgain, LATER_RETRY_DELAY_MS).unref();
  };
  setTimeout(tryAgain, LATER_RETRY_DELAY_MS).unref();
}

/** Connections whose log {@link emptyWriteAheadLogLater} is still trying to empty. */
const emptyingLater = new WeakSet<Database>();

function codeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

function isBusyCode(code: string | undefined): boolean {
  return code !== undefined && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}
