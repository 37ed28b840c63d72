import { existsSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { memoryIdOf } from '../../core/scope.js';
import type { Scope } from '../../core/scope.js';
import type { MemoryStore } from '../store.js';
import { BACKSTOP_CHECKPOINT_PAGES } from './sqlite-connection.js';
import { createSqliteStore } from './sqlite-store.js';
import { useSqliteTestFiles } from '../../../test/support/sqlite-test-files.js';

const scope: Scope = { tenantId: 'acme', conversationId: 'conv-1', agentId: 'agent-x' };
const memoryId = memoryIdOf(scope);
const limits = { maxEntries: 100_000, maxTotalBytes: 100_000_000 };

/**
 * Resolves once `check` holds, polling. The deadline is only for liveness: a worker thread
 * can take seconds to start on a loaded machine.
 */
async function eventually(check: () => boolean, timeoutMs = 25_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((done) => setTimeout(done, 10));
  }
}

describe('sqlite store: background checkpoints', { timeout: 60_000 }, () => {
  const files = useSqliteTestFiles('harness-memory-checkpoints-');

  const open = (
    options: { checkpoints?: 'background' | 'inline' } = {},
  ): { store: MemoryStore; database: Database.Database } => {
    const database = files.track(new Database(files.path));
    const store = files.track(createSqliteStore({ path: files.path, database, ...options }));
    return { store, database };
  };
  const setCanary = (store: MemoryStore, canary: string) =>
    store.setWorkingMemoryEntry({ scope, memoryId, key: 'canary', valueJson: JSON.stringify(canary), limits });
  const fileHas = (file: string, text: string) => existsSync(file) && readFileSync(file).includes(Buffer.from(text));

  it('copies commits into the database file from the worker, while the store only keeps a backstop', async () => {
    const { store, database } = open();
    expect(database.pragma('wal_autocheckpoint', { simple: true })).toBe(BACKSTOP_CHECKPOINT_PAGES);
    const canary = 'CANARY_background_checkpoint_7f3a';
    await setCanary(store, canary);
    // A few pages, far below the backstop: only the worker can have copied them.
    await eventually(() => fileHas(files.path, canary));
  });

  it('leaves checkpoints to the committing connection when asked to (inline)', async () => {
    const { store, database } = open({ checkpoints: 'inline' });
    expect(database.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    const canary = 'CANARY_inline_checkpoint_51c2';
    await setCanary(store, canary);
    await new Promise((done) => setTimeout(done, 200));
    expect(fileHas(`${files.path}-wal`, canary)).toBe(true);
    expect(fileHas(files.path, canary)).toBe(false);
  });

  it('keeps the log bounded under writes that never pause: it restarts', async () => {
    const { store, database } = open();
    const walPages = () =>
      statSync(`${files.path}-wal`).size / ((database.pragma('page_size', { simple: true }) as number) + 24);
    // Bytes 12-15 of the log's header count its restarts (SQLite's checkpoint sequence).
    const restarts = () => readFileSync(`${files.path}-wal`).readUInt32BE(12);
    await setCanary(store, 'first write');
    const restartsBefore = restarts();
    let largest = 0;
    // Observe cycles back to back: each commits a dozen pages, mostly of tables that only
    // grow, so the worker's checkpoints always trail the log and it could never restart
    // without the store's own backstop checkpoint. About twice the backstop in all.
    for (let turn = 1; turn <= 1600; turn++) {
      await store.appendMessages({
        scope,
        memoryId,
        messages: [
          { messageKey: `m${turn}`, role: 'user', name: '', toolCallId: '', content: `turn ${turn}`, tokenCount: 2 },
        ],
      });
      await store.enqueueOperation({
        operationId: `op-${turn}`,
        scope,
        memoryId,
        operationType: 'observe',
        payload: {},
        runId: 'run-1',
        toolCallId: 'system',
      });
      const claimed = await store.claimOperation({ memoryId, leaseOwner: 'w', leaseMs: 60_000 });
      await store.completeObservation({
        operationId: claimed!.operationId,
        memoryId,
        leaseOwner: 'w',
        observations: [{ content: `The user said turn ${turn}.`, importance: 0.5, tokenCount: 6 }],
        throughMessageSeq: turn,
        markerIds: { start: `mk-${turn}-s`, end: `mk-${turn}-e` },
      });
      if (turn % 50 === 0) largest = Math.max(largest, walPages());
    }
    // How far past the backstop the log grows depends on how busy the machine is (the worker
    // may hold a checkpoint while commits go on), so the test asserts what does not: the log
    // restarted from its beginning instead of growing with every page written.
    expect(largest).toBeGreaterThan(BACKSTOP_CHECKPOINT_PAGES / 2);
    expect(restarts()).toBeGreaterThan(restartsBefore);
  });

  it('cuts the log file back once writes pause after a burst, instead of keeping its largest size', async () => {
    const { store } = open();
    const big = 'x'.repeat(1024 * 1024);
    for (let index = 0; index < 24; index++)
      await store.setWorkingMemoryEntry({
        scope,
        memoryId,
        key: `burst-${index}`,
        valueJson: JSON.stringify(`${index}${big}`),
        limits,
      });
    const walBytes = () => (existsSync(`${files.path}-wal`) ? statSync(`${files.path}-wal`).size : 0);
    expect(walBytes()).toBeGreaterThan(16 * 1024 * 1024);
    // About a second after the last commit the worker truncates the log.
    await eventually(() => walBytes() <= 16 * 1024 * 1024);
    // Nothing was lost on the way.
    expect(await store.getWorkingMemoryEntry(memoryId, 'burst-23')).toBeDefined();
  });

  it('goes back to inline checkpoints, with a warning, when the worker cannot open the file', async () => {
    // Waits for the warning itself (the switch back to inline checkpoints comes just before
    // it), however long the worker thread takes to start on a loaded machine.
    let listen!: (warning: Error) => void;
    const warned = new Promise<Error>((resolve) => {
      listen = (warning: Error) => {
        if ((warning as Error & { code?: string }).code === 'HARNESS_MEMORY_CHECKPOINTS') resolve(warning);
      };
    });
    process.on('warning', listen);
    try {
      // The file is gone before the store starts its checkpoints, so the worker (which opens
      // it by name, however soon) cannot; the store's connection keeps working on the
      // unlinked file and its log.
      const database = files.track(new Database(files.path));
      database.pragma('journal_mode = WAL');
      database.exec('CREATE TABLE IF NOT EXISTS created_before_unlink (x)');
      unlinkSync(files.path);
      const store = files.track(createSqliteStore({ path: files.path, database }));
      expect((await warned).message).toMatch(/Background checkpoints of .*state\.db stopped/);
      expect(database.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
      await setCanary(store, 'still works');
      expect((await store.getWorkingMemoryEntry(memoryId, 'canary'))?.valueJson).toBe('"still works"');
    } finally {
      process.off('warning', listen);
    }
  });

  it('lets go of the file at dispose, so the store closes last and removes the log', async () => {
    const store = createSqliteStore({ path: files.path });
    await setCanary(store, 'CANARY_dispose_2b9d');
    await store.dispose();
    expect(existsSync(`${files.path}-wal`)).toBe(false);
    expect(fileHas(files.path, 'CANARY_dispose_2b9d')).toBe(true);
  });
});
