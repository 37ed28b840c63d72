import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveScope } from '../../core/scope.js';
import { newRun } from '../run-store.suite.js';
import { createSqliteRunStore } from './sqlite-run-store.js';
import { holdSqliteConnection } from './sqlite-shared-connection.js';
import type { SqliteConnectionSettings } from './sqlite-shared-connection.js';
import { createSqliteStore } from './sqlite-store.js';

let folder = '';
beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), 'hm-shared-connection-'));
});
afterEach(() => {
  rmSync(folder, { recursive: true, force: true });
});

const settingsOf = (path: string, changes: Partial<SqliteConnectionSettings> = {}): SqliteConnectionSettings => ({
  path,
  synchronous: 'NORMAL',
  busyTimeoutMs: 5000,
  checkpoints: 'background',
  ...changes,
});

/** An `open` that counts its calls. */
function opener(path: string): { open: () => Database.Database; readonly calls: number } {
  let calls = 0;
  return {
    open: () => {
      calls++;
      return new Database(path);
    },
    get calls() {
      return calls;
    },
  };
}

describe('SQLite shared connection: who shares', () => {
  it('gives the memory store and the run store of one file one connection, opened once', () => {
    const path = join(folder, 'state.db');
    const counted = opener(path);
    const memory = holdSqliteConnection('memory', settingsOf(path), counted.open);
    const runs = holdSqliteConnection('runs', settingsOf(path), counted.open);
    expect(runs.db).toBe(memory.db);
    expect([memory.opened, runs.opened]).toEqual([true, false]);
    expect(counted.calls).toBe(1);
    runs.release();
    memory.release();
  });

  it('gives a second holder of the same kind a connection of its own, as another process would have', () => {
    const path = join(folder, 'state.db');
    const counted = opener(path);
    const first = holdSqliteConnection('memory', settingsOf(path), counted.open);
    const second = holdSqliteConnection('memory', settingsOf(path), counted.open);
    const runs = holdSqliteConnection('runs', settingsOf(path), counted.open);
    expect(second.db).not.toBe(first.db);
    expect(runs.db).toBe(first.db);
    expect(counted.calls).toBe(2);
    for (const hold of [runs, second, first]) hold.release();
  });

  it('never shares between other settings, other files, or private databases', () => {
    const path = join(folder, 'state.db');
    const memory = holdSqliteConnection('memory', settingsOf(path), () => new Database(path));
    const others = [
      holdSqliteConnection('runs', settingsOf(path, { synchronous: 'FULL' }), () => new Database(path)),
      holdSqliteConnection('runs', settingsOf(path, { busyTimeoutMs: 50 }), () => new Database(path)),
      holdSqliteConnection('runs', settingsOf(path, { checkpoints: 'inline' }), () => new Database(path)),
      holdSqliteConnection('runs', settingsOf(join(folder, 'other.db')), () => new Database(join(folder, 'other.db'))),
    ];
    for (const other of others) expect(other.db).not.toBe(memory.db);
    const inMemory = holdSqliteConnection('memory', settingsOf(':memory:'), () => new Database(':memory:'));
    const inMemoryRuns = holdSqliteConnection('runs', settingsOf(':memory:'), () => new Database(':memory:'));
    expect(inMemoryRuns.db).not.toBe(inMemory.db);
    for (const hold of [...others, memory, inMemory, inMemoryRuns]) hold.release();
  });

  it('closes the connection with its last holder, and counts a release once', () => {
    const path = join(folder, 'state.db');
    const memory = holdSqliteConnection('memory', settingsOf(path), () => new Database(path));
    const runs = holdSqliteConnection('runs', settingsOf(path), () => new Database(path));
    memory.release();
    memory.release();
    expect(runs.db.open).toBe(true);
    runs.release();
    expect(runs.db.open).toBe(false);
    // A closed connection is not handed out again.
    const again = holdSqliteConnection('memory', settingsOf(path), () => new Database(path));
    expect(again.db).not.toBe(runs.db);
    expect(again.db.open).toBe(true);
    again.release();
  });
});

describe('SQLite shared connection: the stores on it', () => {
  it('keeps the run store working after the memory store is disposed, and closes the file with the last', async () => {
    const path = join(folder, 'state.db');
    const store = createSqliteStore({ path });
    const runStore = createSqliteRunStore({ path });
    const scope = resolveScope({ conversationId: 'c1' });
    await store.updateSettings({
      scope,
      memoryId: 'm1',
      enabled: true,
      runId: 'run_1',
      toolCallId: 'system',
      operationId: 'op_1',
    });
    await runStore.createRun(newRun('run_1'));
    await store.dispose();
    await expect(store.getRecord('m1')).rejects.toMatchObject({ code: 'STORE_DISPOSED' });
    await runStore.updateRun('run_1', { status: 'running' });
    expect((await runStore.getRun('run_1'))?.status).toBe('running');
    // A memory store made later joins the run store's connection and reads what the first wrote.
    const later = createSqliteStore({ path });
    expect((await later.getRecord('m1'))?.enabled).toBe(true);
    await later.dispose();
    await runStore.dispose();
    // The last connection to the file checkpointed it and removed its log as it closed.
    expect(existsSync(`${path}-wal`)).toBe(false);
  });
});
