/**
 * The working-memory purge on Postgres: expired rows leave the table, each scope's earliest
 * expiry stays the earliest of its rows, and rows or scopes another transaction holds are
 * skipped, never waited for, and purged at a later call.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresTestSchemas, postgresTestUrl } from '../../../test/support/postgres-schema.js';
import type { PostgresTestSchemas } from '../../../test/support/postgres-schema.js';
import { untilEntryExpired } from '../../../test/support/until-entry-expired.js';
import { memoryIdOf } from '../../core/scope.js';
import type { Scope } from '../../core/scope.js';
import type { MemoryStore } from '../store.js';
import { createPostgresStore } from './postgres-store.js';

const url = postgresTestUrl();
const scope: Scope = { tenantId: 'acme', conversationId: 'conv-1', agentId: 'agent-x' };
const memoryId = memoryIdOf(scope);
const limits = { maxEntries: 10, maxTotalBytes: 1_000 };

describe.skipIf(!url)('postgres: purgeExpiredWorkingMemory', () => {
  const connectionString = url ?? '';
  let schemas: PostgresTestSchemas;
  let schema = '';
  const opened: Array<MemoryStore | pg.Pool> = [];
  beforeAll(() => {
    schemas = createPostgresTestSchemas(connectionString);
  });
  afterAll(async () => {
    await schemas.dropAll();
  });
  afterEach(async () => {
    for (const handle of opened.splice(0).reverse()) await ('dispose' in handle ? handle.dispose() : handle.end());
    await schemas.drop(schema);
  });
  const open = async (): Promise<{ store: MemoryStore; pool: pg.Pool }> => {
    schema = schemas.next();
    const store = await createPostgresStore({ connectionString, schema, max: 4 });
    const pool = new pg.Pool({ connectionString, max: 4 });
    opened.push(store, pool);
    return { store, pool };
  };
  const rowsOf = async (pool: pg.Pool) =>
    (
      await pool.query<{ entry_key: string }>(
        `SELECT entry_key FROM "${schema}".working_memory_entries WHERE memory_id = $1 ORDER BY entry_key`,
        [memoryId],
      )
    ).rows.map((row) => row.entry_key);
  /** The stored earliest expiry and the earliest of the rows, equal when the bookkeeping holds. */
  const earliestOf = async (pool: pg.Pool) =>
    (
      await pool.query<{ stored: Date | null; rows: Date | null }>(
        `SELECT v.earliest_expiry AS stored, (SELECT min(e.expires_at) FROM "${schema}".working_memory_entries AS e
           WHERE e.memory_id = v.memory_id) AS rows
         FROM "${schema}".working_memory_versions AS v WHERE v.memory_id = $1`,
        [memoryId],
      )
    ).rows[0];

  it('deletes the expired rows, keeps the earliest expiry of the rest and changes the version', async () => {
    const { store, pool } = await open();
    await store.setWorkingMemoryEntry({ scope, memoryId, key: 'keep', valueJson: '1', limits });
    const long = await store.setWorkingMemoryEntry({
      scope,
      memoryId,
      key: 'long',
      valueJson: '2',
      limits,
      ttlMs: 3_600_000,
    });
    for (const key of ['a', 'b', 'c'])
      await store.setWorkingMemoryEntry({ scope, memoryId, key, valueJson: '"secret"', limits, ttlMs: 150 });
    await untilEntryExpired(store, memoryId, 'c');
    const before = await store.workingMemoryVersion!(memoryId);

    expect(await store.purgeExpiredWorkingMemory!({ limit: 2 })).toBe(2);
    expect(await rowsOf(pool)).toEqual(['c', 'keep', 'long']);
    const partial = await earliestOf(pool);
    expect(partial?.stored).toEqual(partial?.rows);
    expect(await store.workingMemoryVersion!(memoryId)).not.toBe(before);

    expect(await store.purgeExpiredWorkingMemory!({ limit: 2 })).toBe(1);
    expect(await store.purgeExpiredWorkingMemory!({ limit: 2 })).toBe(0);
    expect(await rowsOf(pool)).toEqual(['keep', 'long']);
    expect((await earliestOf(pool))?.stored?.toISOString()).toBe(long.expiresAt);
  });

  it('skips a scope or a row another transaction holds, and purges it at a later call', async () => {
    const { store, pool } = await open();
    for (const key of ['a', 'b'])
      await store.setWorkingMemoryEntry({ scope, memoryId, key, valueJson: '"secret"', limits, ttlMs: 150 });
    await untilEntryExpired(store, memoryId, 'b');
    const other = await pool.connect();
    try {
      // A writer holding the scope's version row (as a set does): the purge passes the scope.
      await other.query('BEGIN');
      await other.query(`SELECT 1 FROM "${schema}".working_memory_versions WHERE memory_id = $1 FOR UPDATE`, [
        memoryId,
      ]);
      expect(await store.purgeExpiredWorkingMemory!({ limit: 10 })).toBe(0);
      await other.query('ROLLBACK');
      // A delete of one expired row under way (uncommitted): the purge takes the other and keeps
      // the scope due, so the row held goes at a later call if the delete rolls back.
      await other.query('BEGIN');
      await other.query(`DELETE FROM "${schema}".working_memory_entries WHERE memory_id = $1 AND entry_key = 'a'`, [
        memoryId,
      ]);
      expect(await store.purgeExpiredWorkingMemory!({ limit: 10 })).toBe(1);
      expect((await earliestOf(pool))?.stored).not.toBeNull();
      await other.query('ROLLBACK');
    } finally {
      other.release();
    }
    expect(await rowsOf(pool)).toEqual(['a']);
    expect(await store.purgeExpiredWorkingMemory!({ limit: 10 })).toBe(1);
    expect(await rowsOf(pool)).toEqual([]);
    expect((await earliestOf(pool))?.stored).toBeNull();
  });
});
