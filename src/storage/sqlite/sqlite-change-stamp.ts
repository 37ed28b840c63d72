/**
 * A cheap "has any connection committed since?" for a SQLite file in WAL mode, across
 * processes: the WAL-index header, read straight from the `-shm` file.
 * @module
 */
import { closeSync, openSync, readSync } from 'node:fs';

// The WAL-index header (https://www.sqlite.org/walformat.html, "The WAL-Index Header"): its
// first copy is the first 48 bytes of the -shm file. Every commit rewrites it with iChange
// incremented (and mxFrame, the salts and checksums as they are), before the commit returns.
const HEADER_BYTES = 48;

/**
 * Why not `PRAGMA data_version`: it is a statement, so it takes the WAL read lock like any
 * read and costs as much as the point lookup it would guard (about 6-9 µs here); the header
 * is one `pread` of 48 bytes (about 2 µs), and SQLite maps the -shm file shared, so a commit
 * by any process is in it the moment that commit returns.
 */
export class SqliteChangeStamp {
  readonly #fd: number;
  readonly #seen = Buffer.alloc(HEADER_BYTES);
  readonly #now = Buffer.alloc(HEADER_BYTES);
  #closed = false;

  private constructor(fd: number) {
    this.#fd = fd;
  }

  /** Opens the stamp of the database file at `path`, or undefined when it has no -shm file to read. */
  static open(path: string): SqliteChangeStamp | undefined {
    try {
      return new SqliteChangeStamp(openSync(`${path}-shm`, 'r'));
    } catch {
      return undefined;
    }
  }

  /**
   * Whether no commit happened since the last call (false on the first). Call it before
   * reading what you will keep: something read after a `false` stays valid while the next
   * calls answer `true`.
   */
  unchanged(): boolean {
    if (this.#closed) return false;
    let read = 0;
    try {
      read = readSync(this.#fd, this.#now, 0, HEADER_BYTES, 0);
    } catch {
      read = 0;
    }
    if (read !== HEADER_BYTES) {
      // Unreadable: never claim "unchanged", and make the next full read differ from this one.
      this.#seen.fill(0xff);
      return false;
    }
    if (this.#now.equals(this.#seen)) return true;
    this.#now.copy(this.#seen);
    return false;
  }

  /** Lets go of the -shm file. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    closeSync(this.#fd);
  }
}
