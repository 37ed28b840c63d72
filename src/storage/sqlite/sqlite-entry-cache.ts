/**
 * Working-memory entries read recently by this connection, kept while no connection of any
 * process has committed since (see {@link SqliteChangeStamp}).
 * @module
 */
import type { WorkingMemoryEntry } from '../store.js';
import type { SqliteChangeStamp } from './sqlite-change-stamp.js';

// Entries (or known absences) kept at most; past it the cache starts over.
const MAX_KEPT = 10_000;

/** A read-through cache of `getWorkingMemoryEntry`, exact across processes. */
export class SqliteEntryCache {
  readonly #stamp: SqliteChangeStamp | undefined;
  readonly #kept = new Map<string, WorkingMemoryEntry | null>();

  /** Without a stamp (an in-memory database) every read goes to the database. */
  constructor(stamp: SqliteChangeStamp | undefined) {
    this.#stamp = stamp;
  }

  /**
   * The entry, from the cache when nothing was committed since it was read, else from `read`.
   * `direct` skips the cache (a transaction is open on the connection: its writes are not
   * committed, so the stamp does not show them).
   */
  get(
    memoryId: string,
    key: string,
    read: () => WorkingMemoryEntry | undefined,
    direct: boolean,
  ): WorkingMemoryEntry | undefined {
    if (this.#stamp === undefined || direct) return read();
    // The stamp is taken before the read: a commit in between makes the next check fail.
    if (!this.#stamp.unchanged()) this.#kept.clear();
    const id = `${memoryId}\u0000${key}`;
    const kept = this.#kept.get(id);
    if (kept !== undefined) return kept ?? undefined;
    const entry = read();
    // An entry that expires is read each time: it goes at its expiry, with no commit to tell.
    if (entry?.expiresAt != null) return entry;
    if (this.#kept.size >= MAX_KEPT) this.#kept.clear();
    this.#kept.set(id, entry ?? null);
    return entry;
  }

  /** Lets go of the stamp's file. */
  close(): void {
    this.#kept.clear();
    this.#stamp?.close();
  }
}
