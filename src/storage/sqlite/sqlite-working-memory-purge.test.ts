/**
 * The working-memory purge on a SQLite file: an expired entry's value leaves the file and its
 * write-ahead log, the scope's usage row stays equal to its rows, and the scopes due are read
 * through the index on their earliest expiry.
 */
import { existsSync, readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { useSqliteTestFiles } from '../../../test/support/sqlite-test-files.js';
import { untilEntryExpired } from '../../../test/support/until-entry-expired.js';
import { memoryIdOf } from '../../core/scope.js';
import type { Scope } from '../../core/scope.js';
import { createSqliteStore } from './sqlite-store.js';

const scope: Scope = { tenantId: 'acme', conversationId: 'conv-1', agentId: 'agent-x' };
const memoryId = memoryIdOf(scope);
const limits = { maxEntries: 10, maxTotalBytes: 10_000 };
const SECRET = '12 Secret Lane, Springfield';

describe('sqlite: purgeExpiredWorkingMemory', () => {
  const files = useSqliteTestFiles('harness-memory-sqlite-purge-');
  const { track } = files;
  const holds = (path: string): boolean => existsSync(path) && readFileSync(path).includes(SECRET);

  it("deletes an expired entry's value from the file and its log, leaving the usage row equal to the rows", async () => {
    const store = track(createSqliteStore({ path: files.path }));
    await store.setWorkingMemoryEntry({ scope, memoryId, key: 'keep', valueJson: '1', limits });
    await store.setWorkingMemoryEntry({ scope, memoryId, key: 'long', valueJson: '2', limits, ttlMs: 3_600_000 });
    for (const key of ['home_address', 'old_address'])
      await store.setWorkingMemoryEntry({
        scope,
        memoryId,
        key,
        valueJson: JSON.stringify(SECRET),
        limits,
        ttlMs: 150,
      });
    await untilEntryExpired(store, memoryId, 'old_address');
    expect(holds(files.path) || holds(`${files.path}-wal`)).toBe(true);

    expect(await store.purgeExpiredWorkingMemory!({ limit: 1 })).toBe(1);
    const raw = track(new Database(files.path, { readonly: true }));
    const rows = () =>
      raw
        .prepare('SELECT entry_key FROM working_memory_entries WHERE memory_id = ? ORDER BY entry_key')
        .pluck()
        .all(memoryId);
    const usage = () =>
      raw
        .prepare('SELECT entry_count, total_bytes, earliest_expiry FROM working_memory_versions WHERE memory_id = ?')
        .raw()
        .get(memoryId);
    const counted = () =>
      raw
        .prepare(
          `SELECT COUNT(*), SUM(length(CAST(entry_key AS BLOB)) + length(CAST(entry_json AS BLOB))), MIN(expires_at)
           FROM working_memory_entries WHERE memory_id = ?`,
        )
        .raw()
        .get(memoryId);
    expect(rows()).toEqual(['keep', 'long', 'old_address']);
    expect(usage()).toEqual(counted());
    // The expired row left over keeps the scope due.
    expect((usage() as [number, number, string])[2] <= new Date().toISOString()).toBe(true);

    expect(await store.purgeExpiredWorkingMemory!({ limit: 1_000 })).toBe(1);
    expect(rows()).toEqual(['keep', 'long']);
    expect(usage()).toEqual(counted());
    // The log is emptied after the purge, as after a forget (polled: a reader may hold it a moment).
    for (let deadline = Date.now() + 20_000; holds(`${files.path}-wal`) && Date.now() < deadline;)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(holds(`${files.path}-wal`)).toBe(false);
    expect(holds(files.path)).toBe(false);
  });

  it("commits no page of the expiry index for a set that keeps the scope's earliest expiry", async () => {
    const store = track(createSqliteStore({ path: files.path, checkpoints: 'inline' }));
    await store.setWorkingMemoryEntry({ scope, memoryId, key: 'first', valueJson: '1', limits, ttlMs: 3_600_000 });
    await store.setWorkingMemoryEntry({ scope, memoryId, key: 'later', valueJson: '0', limits });
    const side = track(new Database(files.path));
    /** Log frames (pages) the sets commit, after the log is emptied. */
    const framesOf = async (ttlMs: number | undefined): Promise<number> => {
      side.pragma('wal_checkpoint(TRUNCATE)');
      for (let index = 0; index < 10; index++)
        await store.setWorkingMemoryEntry({
          scope,
          memoryId,
          key: 'later',
          valueJson: String(index),
          limits,
          ...(ttlMs === undefined ? {} : { ttlMs }),
        });
      return (side.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>)[0]?.log ?? -1;
    };
    // The entry's page and the usage row's page, with or without an expiry (a later one).
    expect(await framesOf(7_200_000)).toBe(20);
    expect(await framesOf(undefined)).toBe(20);
  });

  it('reads the scopes due through the index on their earliest expiry', () => {
    const store = track(createSqliteStore({ path: files.path }));
    expect(store.name).toBe('sqlite');
    const raw = track(new Database(files.path, { readonly: true }));
    const plan = raw
      .prepare(
        'EXPLAIN QUERY PLAN SELECT memory_id FROM working_memory_versions WHERE earliest_expiry <= ? ' +
          'ORDER BY earliest_expiry LIMIT ?',
      )
      .all('2026-01-01T00:00:00.000Z', 1000) as Array<{ detail: string }>;
    expect(plan.map((step) => step.detail).join('\n')).toContain('working_memory_versions_expiry_idx');
  });
});
