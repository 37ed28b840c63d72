/**
 * Group commit for one SQLite connection: write units submitted before the microtask queue
 * drains share one IMMEDIATE transaction, each inside its own savepoint.
 * @module
 */
import type { Database, Statement } from 'better-sqlite3';

/** A synchronous unit of writes and reads; it throws to undo everything it did. */
export type WriteUnit<T> = () => T;

interface Pending {
  readonly work: WriteUnit<unknown>;
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
  #queue: Pending[] = [];
  #scheduled = false;

  /**
   * `toError` turns what a unit or the commit threw into the error its caller sees;
   * `onCommit` runs after each commit this batcher makes; `check` runs first in each
   * transaction it begins, and a throw fails the whole batch (nothing written).
   */
  constructor(db: Database, toError: (error: unknown) => unknown, onCommit?: () => void, check?: () => void) {
    this.#db = db;
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

  /** Runs `work` in the next group commit; settles once that commit is durable (or failed). */
  submit<T>(work: WriteUnit<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        queueMicrotask(() => this.flush());
      }
    });
  }

  /** Commits whatever is waiting now. Cheap when nothing is. */
  flush(): void {
    this.#scheduled = false;
    if (this.#queue.length === 0) return;
    const batch = this.#queue;
    this.#queue = [];
    this.#run(batch);
  }

  #run(batch: readonly Pending[]): void {
    // Inside a transaction someone else opened on this connection, units only get their
    // savepoints; that transaction's owner commits them.
    const outer = this.#db.inTransaction;
    // A unit alone in its own transaction needs no savepoint: the transaction is its undo.
    const alone = batch.length === 1 && !outer;
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    try {
      if (!outer) this.#begin.run();
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
      return;
    }
    batch.forEach((unit, index) => {
      const outcome = outcomes[index];
      if (outcome?.ok) unit.resolve(outcome.value);
      else unit.reject(this.#toError(outcome?.error));
    });
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
