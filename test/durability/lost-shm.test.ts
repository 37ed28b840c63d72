/**
 * A lost shared-memory file (the reliability catalogue's A6): a process is SIGKILLed with
 * commits in the write-ahead log that were never copied into the database file, and its
 * `-shm` file (the log's index) is deleted. The next processes to open the file rebuild the
 * index from the log: nothing committed is lost, and the interrupted work is replayed once.
 */
import { copyFileSync, existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import {
  audit,
  coveredSeqs,
  invariantProblems,
  messagesObservedAndCleared,
  range,
  runChild,
} from './durability-support.js';
import { useSqliteTestFiles } from '../support/sqlite-test-files.js';
import type { ChildResult } from './durability-support.js';

const MEMORY_ID = '8:tenant-a/10:conv-crash/7:agent-x';
const MESSAGE_COUNT = 10;

describe('durability: the -shm file deleted while the -wal file holds commits', () => {
  const files = useSqliteTestFiles('harness-memory-lost-shm-');

  /** A copy of the database file alone (`withLog`: with its -wal and -shm files) in a folder of its own. */
  const copyOf = (name: string, withLog: boolean): string => {
    mkdirSync(join(files.directory, name));
    const copy = join(files.directory, name, 'state.db');
    for (const suffix of withLog ? ['', '-wal', '-shm'] : [''])
      copyFileSync(`${files.path}${suffix}`, `${copy}${suffix}`);
    return copy;
  };

  /**
   * Runs a recovering child. One that failed with SQLITE_BUSY_RECOVERY (another process was
   * rebuilding the index; the catalogue tolerates it) runs again, at most twice more.
   */
  const restart = async (): Promise<ChildResult> => {
    // A lease the other restarting process cannot see expire, however loaded the machine.
    const env = { DB_PATH: files.path, OBSERVES: '5', PER_OBSERVE: '2', RECOVER: '1', LEASE_MS: '10000' };
    for (let attempt = 1; ; attempt++) {
      const result = await runChild('./crash-child.ts', env);
      if (result.code === 0 || attempt === 3 || !result.stderr.includes('SQLITE_BUSY_RECOVERY')) return result;
    }
  };

  it('loses nothing committed when two processes restart at once, and replays the interrupted operation', async () => {
    // Killed before its third observe's apply commits: the first two are committed. With inline
    // checkpoints nothing reaches the database file before the log holds 1000 pages.
    const crashed = await runChild('./crash-child.ts', {
      DB_PATH: files.path,
      OBSERVES: '5',
      PER_OBSERVE: '2',
      FAULT_POINT: 'before_mark_applied',
      FAULT_AT: '3',
      CHECKPOINTS: 'inline',
    });
    expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
    expect(statSync(`${files.path}-wal`).size).toBeGreaterThan(0);
    expect(existsSync(`${files.path}-shm`)).toBe(true);

    // What was committed, read from a copy of all three files.
    const committed = audit(copyOf('committed', true));
    expect(invariantProblems(committed)).toEqual([]);
    expect(committed.observations).toHaveLength(2);
    expect(committed.operations.map((row) => row.status)).toEqual(['applied', 'applied', 'processing']);
    // None of it is in the database file: it lives in the log only.
    const bare = new Database(copyOf('bare', false));
    try {
      const tables = bare.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'om_observations'").pluck().get();
      const stored = tables === 0 ? 0 : bare.prepare('SELECT count(*) FROM om_observations').pluck().get();
      expect(stored).toBe(0);
    } finally {
      bare.close();
    }

    rmSync(`${files.path}-shm`);
    // Both rebuild the index as they open the file; one may have to wait for the other.
    const restarted = await Promise.all([restart(), restart()]);
    for (const result of restarted) expect(result.code, result.stderr).toBe(0);

    const rows = audit(files.path);
    expect(invariantProblems(rows)).toEqual([]);
    // Everything committed is there as it was.
    expect(rows.observations.slice(0, committed.observations.length)).toEqual(committed.observations);
    expect(rows.messages.slice(0, committed.messages.length).map((row) => row.message_key)).toEqual(
      committed.messages.map((row) => row.message_key),
    );
    const appliedBefore = committed.operations.filter((row) => row.status === 'applied');
    for (const operation of appliedBefore)
      expect(rows.operations.find((row) => row.operation_id === operation.operation_id)).toEqual(operation);
    // The interrupted operation was replayed once, and every message observed exactly once.
    for (const operation of rows.operations) expect(operation.status, operation.operation_id).toBe('applied');
    const interrupted = committed.operations.find((row) => row.status === 'processing')!;
    expect(rows.operations.find((row) => row.operation_id === interrupted.operation_id)?.attempt).toBe(2);
    expect(rows.records[0]).toMatchObject({
      last_message_seq: MESSAGE_COUNT,
      observed_through_message_seq: MESSAGE_COUNT,
    });
    expect(coveredSeqs(rows, MEMORY_ID)).toEqual(range(MESSAGE_COUNT));
    expect(messagesObservedAndCleared(rows)).toEqual([]);
  }, 60_000);
});
