/**
 * Group commit for one SQLite connection: write units submitted before the microtask queue
 * drains share one IMMEDIATE transaction, each inside its own savepoint.
 * @module
 */
import type { Database, Statement } from 'better-sqlite3';
import { FIRST_RETRY_DELAY_MS, isBusyError, nextRetryDelay } from './sqlite-busy-wait.js';

/** A synchronous unit of writes and reads; it throws to undo everything it did. */
export type WriteUnit<T> = () => T;

interface Pending {
  readonly work: WriteUnit<unknown>;
  /** The scope it writes, or undefined for any. */
  readonly scope: string | undefined;
  /** When it stops waiting for another process's write lock (performance.now()). */
  readonly deadline: number;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Most of a small write's cost is its commit: the pages it dirtied go to the write-ahead
 * log one system call each, plus the locking around it. Callers working at the same time
 * (observes of several conversations) mostly dirty the same index and table pages, so one
 * commit for all of them writes far fewer pages than one each.
 *
 * Each unit keeps its own outcome: a unit that throws is rolled back to its savepoint and
 * only its promise rejects. Every promise settles after the commit, so a resolved write
 * is as durable as one committed alone. Units run in submission order, and
 * {@link flush} lets a reader see every write submitted before it. Inside a transaction
 * that the connection's owner opened, units run in savepoints and that owner commits.
 *
 * While another process holds the write lock, the batch waits on a timer (the event loop stays
 * free) and is tried again with whatever was submitted since; a unit still locked out after
 * `waitForLockMs` fails with the lock error.
 */
export class SqliteWriteBatcher {
  readonly #db: Database;
  readonly #begin: Statement;
  readonly #commit: Statement;
  readonly #rollback: Statement;
  readonly #savepoint: Statement;
  readonly #release: Statement;
  readonly #rollbackTo: Statement;
  readonly #toError: (error: unknown) => unknown;
  readonly #onCommit: (() => void) | undefined;
  readonly #check: (() => void) | undefined;
  readonly #waitForLockMs: number;
  #queue: Pending[] = [];
  #scheduled = false;
  /** Set while the queue waits for another process's write lock. */
  #lockWait: { delay: number } | undefined;
  /** Readers waiting for the locked-out batch's next try. */
  #waiters: Array<() => void> = [];

  /**
   * `toError` turns what a unit or the commit threw into the error its caller sees;
   * `onCommit` runs after each commit this batcher makes; `check` runs first in each
   * transaction it begins, and a throw fails the whole batch (nothing written); `waitForLockMs`
   * is how long a unit waits for another process's write lock.
   */
  constructor(
    db: Database,
    toError: (error: unknown) => unknown,
    onCommit?: () => void,
    check?: () => void,
    waitForLockMs = 0,
  ) {
    this.#db = db;
    this.#waitForLockMs = waitForLockMs;
    this.#toError = toError;
    this.#onCommit = onCommit;
    this.#check = check;
    this.#begin = db.prepare('BEGIN IMMEDIATE');
    this.#commit = db.prepare('COMMIT');
    this.#rollback = db.prepare('ROLLBACK');
    this.#savepoint = db.prepare('SAVEPOINT write_unit');
    this.#release = db.prepare('RELEASE write_unit');
    this.#rollbackTo = db.prepare('ROLLBACK TO write_unit');
  }

  /**
   * Runs `work` in the next group commit; settles once that commit is durable (or failed).
   * `scope` names the only scope it writes (see {@link lockedOut}); leave it out for any.
   */
  submit<T>(work: WriteUnit<T>, scope?: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const deadline = performance.now() + this.#waitForLockMs;
      this.#queue.push({ work, scope, deadline, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#scheduled && this.#lockWait === undefined) {
        this.#scheduled = true;
        queueMicrotask(() => this.flush());
      }
    });
  }

  /**
   * Commits whatever is waiting now. Cheap when nothing is. While the queue waits for another
   * process's write lock it does nothing: the next try commits all of it.
   */
  flush(): void {
    this.#scheduled = false;
    if (this.#queue.length === 0 || this.#lockWait !== undefined) return;
    this.#attempt();
  }

  /**
   * While units that write `scope` (any scope when undefined) wait for another process's write
   * lock, a promise of their next try; otherwise undefined. A reader of the scope waits for it
   * (and asks again), so it sees every write submitted before it; readers of other scopes do not.
   */
  lockedOut(scope?: string): Promise<void> | undefined {
    if (this.#lockWait === undefined) return undefined;
    const concerned = this.#queue.some(
      (unit) => scope === undefined || unit.scope === undefined || unit.scope === scope,
    );
    return concerned ? new Promise<void>((resolve) => this.#waiters.push(resolve)) : undefined;
  }

  #attempt(): void {
    const batch = this.#queue;
    this.#queue = [];
    const locked = this.#run(batch);
    if (locked === undefined) {
      this.#lockWait = undefined;
    } else {
      const now = performance.now();
      const waiting: Pending[] = [];
      for (const unit of batch) {
        if (unit.deadline > now) waiting.push(unit);
        else unit.reject(this.#toError(locked));
      }
      this.#queue = waiting;
      if (waiting.length === 0) this.#lockWait = undefined;
      else {
        const delay = this.#lockWait === undefined ? FIRST_RETRY_DELAY_MS : nextRetryDelay(this.#lockWait.delay);
        const earliest = Math.min(...waiting.map((unit) => unit.deadline));
        this.#lockWait = { delay };
        setTimeout(() => this.#attempt(), Math.max(0, Math.min(delay, earliest - now)));
      }
    }
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }

  /** Runs the batch; answers the error when another connection held the write lock (nothing ran). */
  #run(batch: readonly Pending[]): unknown {
    // Inside a transaction someone else opened on this connection, units only get their
    // savepoints; that transaction's owner commits them.
    const outer = this.#db.inTransaction;
    // A unit alone in its own transaction needs no savepoint: the transaction is its undo.
    const alone = batch.length === 1 && !outer;
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    if (!outer) {
      try {
        this.#begin.run();
      } catch (error) {
        if (isBusyError(error)) return error;
        const failure = this.#toError(error);
        for (const unit of batch) unit.reject(failure);
        return undefined;
      }
    }
    try {
      try {
        if (!outer) this.#check?.();
        for (const unit of batch) outcomes.push(alone ? { ok: true, value: unit.work() } : this.#runInSavepoint(unit));
        if (!outer) {
          this.#commit.run();
          this.#onCommit?.();
        }
      } catch (error) {
        if (!outer && this.#db.inTransaction) this.#rollback.run();
        throw error;
      }
    } catch (error) {
      // BEGIN or COMMIT failed, the lone unit threw, or SQLite undid the whole transaction:
      // nothing of the batch is stored.
      const failure = this.#toError(error);
      for (const unit of batch) unit.reject(failure);
      return undefined;
    }
    batch.forEach((unit, index) => {
      const outcome = outcomes[index];
      if (outcome?.ok) unit.resolve(outcome.value);
      else unit.reject(this.#toError(outcome?.error));
    });
    return undefined;
  }

  #runInSavepoint(unit: Pending): { ok: true; value: unknown } | { ok: false; error: unknown } {
    this.#savepoint.run();
    try {
      const value = unit.work();
      this.#release.run();
      return { ok: true, value };
    } catch (error) {
      // Some errors (disk full, I/O) make SQLite roll back the whole transaction.
      if (!this.#db.inTransaction) throw error;
      this.#rollbackTo.run();
      this.#release.run();
      return { ok: false, error };
    }
  }
}
