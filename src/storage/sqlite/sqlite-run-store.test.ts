import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { newRun, runRunStoreSuite } from '../run-store.suite.js';
import { createSqliteRunStore } from './sqlite-run-store.js';

let directory = '';
runRunStoreSuite({
  name: 'sqlite',
  create: () => {
    directory = mkdtempSync(join(tmpdir(), 'hm-runs-'));
    return createSqliteRunStore({ path: join(directory, 'state.db') });
  },
  cleanup: () => rmSync(directory, { recursive: true, force: true }),
  openPeer: () => createSqliteRunStore({ path: join(directory, 'state.db') }),
});

describe('SQLite run store: opening', () => {
  it('reports a file another process keeps locked as a StoreError, and leaves no connection open', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'hm-runs-locked-'));
    const path = join(folder, 'state.db');
    const blocker = await lockedByAnotherProcess(path);
    try {
      const openFiles = () =>
        readdirSync('/proc/self/fd').filter((fd) => readlinkOr(`/proc/self/fd/${fd}`).startsWith(path));
      let thrown: unknown;
      try {
        createSqliteRunStore({ path, busyTimeoutMs: 50 });
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toMatchObject({ code: 'STORE_FAILED' });
      expect(String((thrown as Error).message)).toMatch(/locked by another process/);
      expect(openFiles()).toEqual([]);
    } finally {
      blocker.kill();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe('SQLite run store: a run that ended, written by an older version', () => {
  it('is refused by the file itself: no change of its status or output, no event but its first terminal one', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'hm-runs-ended-'));
    const path = join(folder, 'state.db');
    const store = createSqliteRunStore({ path });
    // The statements of a version before the run store left ended runs alone.
    const older = new Database(path);
    try {
      await store.createRun(newRun('run_1'));
      await store.updateRun('run_1', { status: 'running' });
      await store.abandonStaleRun('run_1', 0, { code: 'RUN_ABANDONED', message: 'gone' });
      const olderUpdate = older.prepare(
        "UPDATE harness_runs SET status = 'completed', output = 'late' WHERE run_id = ?",
      );
      expect(() => olderUpdate.run('run_1')).toThrow(/the run ended; it is not changed again/);
      const olderEvent = older.prepare(
        "INSERT INTO harness_run_events (run_id, seq, type, timestamp, payload_json) VALUES ('run_1', ?, ?, '', '{}')",
      );
      expect(() => olderEvent.run(0, 'assistant.message')).toThrow(/only its first terminal event/);
      olderEvent.run(0, 'run.failed');
      expect(() => olderEvent.run(1, 'run.completed')).toThrow(/only its first terminal event/);
      expect(await store.getRun('run_1')).toMatchObject({ status: 'failed', output: null });
      // Times are not guarded: an operator may still age a run (the retention test does).
      older.prepare("UPDATE harness_runs SET updated_at = '2000-01-01T00:00:00.000Z' WHERE run_id = ?").run('run_1');
    } finally {
      older.close();
      await store.dispose();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

/** A process holding the file's write lock, once it says so. */
async function lockedByAnotherProcess(path: string): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const db = new (require('better-sqlite3'))(${JSON.stringify(path)}); db.exec('BEGIN IMMEDIATE'); ` +
        `console.log('locked'); setInterval(() => {}, 1000);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('locked')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`the locking process exited (${code})`)));
  });
  return child;
}

function readlinkOr(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return '';
  }
}
