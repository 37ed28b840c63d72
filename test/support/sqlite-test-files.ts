/**
 * A fresh temporary directory and database path for each test, and cleanup of everything a
 * test opened there: stores are disposed and raw connections closed, newest first.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database } from 'better-sqlite3';
import { afterEach, beforeEach } from 'vitest';
import type { MemoryStore } from '../../src/storage/store.js';

/** What {@link useSqliteTestFiles} gives a test file. */
export interface SqliteTestFiles {
  /** This test's directory. */
  readonly directory: string;
  /** `state.db` in {@link directory}. */
  readonly path: string;
  /** Registers a store or connection to be closed after the test; returns it. */
  track<T extends MemoryStore | Database>(handle: T): T;
}

/** Registers `beforeEach`/`afterEach` hooks in the calling suite. */
export function useSqliteTestFiles(prefix: string): SqliteTestFiles {
  let directory = '';
  const opened: Array<MemoryStore | Database> = [];
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), prefix));
  });
  afterEach(async () => {
    for (const handle of opened.splice(0).reverse()) {
      if ('dispose' in handle) await handle.dispose();
      else if (handle.open) handle.close();
    }
    rmSync(directory, { recursive: true, force: true });
  });
  return {
    get directory() {
      return directory;
    },
    get path() {
      return join(directory, 'state.db');
    },
    track(handle) {
      opened.push(handle);
      return handle;
    },
  };
}
