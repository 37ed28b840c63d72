import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HarnessMemoryError } from '../../core/errors.js';
import { memoryIdOf } from '../../core/scope.js';
import type { Scope } from '../../core/scope.js';
import { newRun } from '../run-store.suite.js';
import { createSqliteRunStore } from './sqlite-run-store.js';
import { createSqliteStore } from './sqlite-store.js';
import { useSqliteTestFiles } from '../../../test/support/sqlite-test-files.js';

const scope: Scope = { tenantId: 'acme', conversationId: 'c1', agentId: 'default' };
const otherTenant: Scope = { tenantId: 'globex', conversationId: 'c1', agentId: 'default' };
const memoryId = memoryIdOf(scope);
const limits = { maxEntries: 10, maxTotalBytes: 10_000 };

describe('sqlite: another process holding the lock never stalls the event loop', () => {
  const files = useSqliteTestFiles('harness-memory-sqlite-busy-');
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.kill();
  });

  async function otherProcess(mode: 'write lock' | 'read snapshot'): Promise<OtherProcess> {
    const held = await holdingProcess(files.path, mode);
    children.push(held.child);
    return held;
  }

  it('keeps a write pending while another process holds the write lock, and commits it once released', async () => {
    const store = files.track(createSqliteStore({ path: files.path, busyTimeoutMs: 3000 }));
    const otherId = memoryIdOf(otherTenant);
    await store.setWorkingMemoryEntry({
      scope: otherTenant,
      memoryId: otherId,
      key: 'k',
      valueJson: '"theirs"',
      limits,
    });
    const lock = await otherProcess('write lock');

    let settled = false;
    const write = store.setWorkingMemoryEntry({ scope, memoryId, key: 'k', valueJson: '"mine"', limits });
    void write.then(
      () => (settled = true),
      () => (settled = true),
    );
    expect(await timerDelay()).toBeLessThan(100);
    const started = performance.now();
    expect((await store.getWorkingMemoryEntry(otherId, 'k'))?.valueJson).toBe('"theirs"');
    expect(performance.now() - started).toBeLessThan(100);
    expect(await timerDelay()).toBeLessThan(100);
    expect(settled).toBe(false);
    const outside = files.track(new Database(files.path, { readonly: true }));
    expect(
      outside.prepare('SELECT COUNT(*) FROM working_memory_entries WHERE memory_id = ?').pluck().get(memoryId),
    ).toBe(0);

    lock.release();
    await expect(write).resolves.toMatchObject({ key: 'k', valueJson: '"mine"' });
    expect((await store.getWorkingMemoryEntry(memoryId, 'k'))?.valueJson).toBe('"mine"');
  });

  it('lets a read of the same scope wait for that scope’s pending write (results as if run one by one)', async () => {
    const store = files.track(createSqliteStore({ path: files.path, busyTimeoutMs: 3000 }));
    await store.setWorkingMemoryEntry({ scope, memoryId, key: 'k', valueJson: '1', limits });
    const lock = await otherProcess('write lock');
    const write = store.setWorkingMemoryEntry({ scope, memoryId, key: 'k', valueJson: '2', limits });
    const read = store.getWorkingMemoryEntry(memoryId, 'k');
    expect(await timerDelay()).toBeLessThan(100);
    lock.release();
    await write;
    expect((await read)?.valueJson).toBe('2');
  });

  it('fails a write still locked out after the busy timeout with the clear StoreError, without blocking meanwhile', async () => {
    const store = files.track(createSqliteStore({ path: files.path, busyTimeoutMs: 200 }));
    await otherProcess('write lock');
    const write = store.setWorkingMemoryEntry({ scope, memoryId, key: 'k', valueJson: '1', limits });
    const failure = write.catch((error: unknown) => error);
    expect(await timerDelay()).toBeLessThan(100);
    const error = await failure;
    expect(HarnessMemoryError.isInstance(error) && error.code).toBe('STORE_FAILED');
    expect(String((error as Error).message)).toMatch(
      /locked by another process \(SQLITE_BUSY, still locked after waiting 200 ms\)/,
    );
  });

  it('keeps run-store writes on the shared connection pending too, and fails them as clearly', async () => {
    const store = files.track(createSqliteStore({ path: files.path, busyTimeoutMs: 3000 }));
    const runs = createSqliteRunStore({ path: files.path, busyTimeoutMs: 3000 });
    try {
      const lock = await otherProcess('write lock');
      const created = runs.createRun(newRun('run-1'));
      expect(await timerDelay()).toBeLessThan(100);
      expect(await store.getRecord(memoryId)).toBeUndefined();
      lock.release();
      await expect(created).resolves.toMatchObject({ runId: 'run-1' });
    } finally {
      await runs.dispose();
    }
    const shortRuns = createSqliteRunStore({ path: files.path, busyTimeoutMs: 200, checkpoints: 'inline' });
    try {
      await otherProcess('write lock');
      const created = shortRuns.createRun(newRun('run-2')).catch((error: unknown) => error);
      expect(await timerDelay()).toBeLessThan(100);
      expect(String(((await created) as Error).message)).toMatch(/locked by another process/);
    } finally {
      await shortRuns.dispose();
    }
  });

  it('forgets a scope while another process reads an old snapshot: resolves, warns, and empties the log once it can', async () => {
    const store = files.track(createSqliteStore({ path: files.path, busyTimeoutMs: 200 }));
    const canary = 'CANARY-ZZ-4711';
    await store.setWorkingMemoryEntry({ scope, memoryId, key: 'warm', valueJson: '"up"', limits });
    const reader = await otherProcess('read snapshot');
    await store.setWorkingMemoryEntry({ scope, memoryId, key: 'secret', valueJson: JSON.stringify(canary), limits });
    const warnings: Array<Error & { code?: string }> = [];
    const onWarning = (warning: Error & { code?: string }): void => void warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const forgetting = store.forget(memoryId);
      expect(await timerDelay()).toBeLessThan(100);
      await expect(forgetting).resolves.toBeUndefined();
      expect(await store.listWorkingMemoryEntries(memoryId)).toEqual([]);
      await vi.waitFor(() => expect(warnings.map((warning) => warning.code)).toContain('HARNESS_MEMORY_FORGET_LOG'));
      expect(warnings.find((warning) => warning.code === 'HARNESS_MEMORY_FORGET_LOG')?.message).toMatch(
        /deleted.*-wal/s,
      );
    } finally {
      process.off('warning', onWarning);
    }
    reader.release();
    const onDisk = (): boolean =>
      [files.path, `${files.path}-wal`].some((file) => existsSync(file) && readFileSync(file).includes(canary));
    await vi.waitFor(() => expect(onDisk()).toBe(false), { timeout: 5000, interval: 20 });
  });
});

interface OtherProcess {
  readonly child: ChildProcess;
  /** Tells the process to let go (it ends its transaction and exits). */
  release(): void;
}

/** Another process on `path` holding the write lock or a read snapshot, once it says so. */
async function holdingProcess(path: string, mode: 'write lock' | 'read snapshot'): Promise<OtherProcess> {
  const begin =
    mode === 'write lock'
      ? `db.exec('BEGIN IMMEDIATE');`
      : `db.exec('BEGIN'); db.prepare('SELECT COUNT(*) FROM working_memory_entries').get();`;
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const db = new (require('better-sqlite3'))(${JSON.stringify(path)}, { timeout: 0 }); ${begin} ` +
        `console.log('locked'); process.stdin.on('data', () => { db.exec('ROLLBACK'); db.close(); process.exit(0); });`,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('locked')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`the other process exited (${code})`)));
  });
  return { child, release: () => child.stdin?.write('release\n') };
}

/** How long a zero-delay timer takes to fire: long when something blocks the event loop. */
async function timerDelay(): Promise<number> {
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, 0));
  return performance.now() - started;
}
