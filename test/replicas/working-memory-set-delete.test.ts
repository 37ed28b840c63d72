/**
 * Catalogue case B13: sets and deletes of one working-memory key at once, from two writers
 * that share nothing but the database: two harness processes on one SQLite file (over HTTP),
 * and two Postgres stores on one schema (each with its own working-memory service). After
 * every round the key is either absent (and a delete of the round said it removed it) or holds
 * exactly one value a set of the round wrote, the same for both writers; at the end the
 * scope's bookkeeping (SQLite's entry count and bytes, Postgres' scope listing) equals its
 * rows, and the limits the next set checks count exactly those rows.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { memoryIdOf, resolveScope } from '../../src/core/scope.js';
import type { Scope } from '../../src/core/scope.js';
import { createWorkingMemory } from '../../src/memory/working-memory.js';
import { createPostgresStore } from '../../src/storage/postgres/postgres-store.js';
import { createSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import type { MemoryStore } from '../../src/storage/store.js';
import { createPostgresTestSchemas, postgresTestUrl } from '../support/postgres-schema.js';
import { startReplicas, stopReplicas } from './replica-support.js';
import type { Replica } from './replica-support.js';

// Rounds over HTTP to two processes cost far more than rounds against two stores in this one.
const SQLITE_ROUNDS = 40;
const POSTGRES_ROUNDS = 150;
const HOT = 'hot';
const scope: Scope = resolveScope({ tenantId: 'tenant-b13', conversationId: 'conv-b13', agentId: 'agent-b13' });
const memoryId = memoryIdOf(scope);

/** One writer's view of the scope's working memory. */
interface Writer {
  set(key: string, value: unknown): Promise<void>;
  /** Whether an entry was removed. */
  delete(key: string): Promise<boolean>;
  /** The scope's entries, decoded. */
  entries(): Promise<Map<string, unknown>>;
}

/** A value of writer `writer` in `round`, of a size that changes with both, in two-byte letters. */
function valueOf(writer: string, round: number): { writer: string; round: number; pad: string } {
  return { writer, round, pad: (writer === 'a' ? 'é' : 'ü').repeat((round * (writer === 'a' ? 37 : 53)) % 300) };
}

/**
 * `rounds` rounds; in each, both writers set the hot key twice and delete it twice, all eight
 * at once (in an order that turns each round), and a steady key grows or shrinks beside them.
 */
async function contend(writers: readonly [Writer, Writer], rounds: number): Promise<void> {
  const [first, second] = writers;
  await first.set('steady', valueOf('a', 0));
  for (let round = 0; round < rounds; round++) {
    const sets = writers.flatMap((_, index) => [0, 1].map((nth) => valueOf(index === 0 ? 'a' : 'b', round * 2 + nth)));
    const operations: Array<() => Promise<boolean | undefined>> = [
      ...sets.flatMap((value, index) => {
        const writer = writers[index % 2] as Writer;
        const other = writers[(index + 1) % 2] as Writer;
        return [() => writer.set(HOT, value).then(() => undefined), () => other.delete(HOT)];
      }),
      () => (round % 2 === 0 ? second : first).set('steady', valueOf('a', round)).then(() => undefined),
    ];
    const turned = [...operations.slice(round % 9), ...operations.slice(0, round % 9)];
    const answers = await Promise.all(turned.map((operation) => operation()));
    const [seenFirst, seenSecond] = await Promise.all([first.entries(), second.entries()]);
    expect(seenSecond).toEqual(seenFirst);
    if (seenFirst.has(HOT)) expect(sets).toContainEqual(seenFirst.get(HOT));
    // Absent at the end of the round: a delete came last, and removed what a set had stored.
    else expect(answers).toContain(true);
    expect(seenFirst.get('steady')).toEqual(valueOf('a', round));
  }
}

const utf8 = (text: string): number => Buffer.byteLength(text, 'utf8');

/**
 * The limits a set checks count exactly the scope's rows: one entry or one byte more than
 * they leave room for is refused, naming the total the rows make with it; exactly enough is not.
 */
async function expectLimitsCountTheRows(store: MemoryStore): Promise<void> {
  const rows = await store.listWorkingMemoryEntries(memoryId);
  const bytes = rows.reduce((sum, row) => sum + utf8(row.key) + utf8(row.valueJson), 0);
  const probe = { scope, memoryId, key: 'probe', valueJson: '"x"' };
  const withProbe = bytes + utf8('probe') + utf8('"x"');
  await expect(
    store.setWorkingMemoryEntry({ ...probe, limits: { maxEntries: rows.length, maxTotalBytes: 1_000_000 } }),
  ).rejects.toMatchObject({ code: 'WORKING_MEMORY_LIMIT', data: { limit: 'entries', actual: rows.length + 1 } });
  await expect(
    store.setWorkingMemoryEntry({ ...probe, limits: { maxEntries: 1000, maxTotalBytes: withProbe - 1 } }),
  ).rejects.toMatchObject({ code: 'WORKING_MEMORY_LIMIT', data: { limit: 'total_bytes', actual: withProbe } });
  await store.setWorkingMemoryEntry({ ...probe, limits: { maxEntries: rows.length + 1, maxTotalBytes: withProbe } });
  expect(await store.deleteWorkingMemoryEntry(memoryId, 'probe')).toBe(true);
}

describe('replicas: working-memory set and delete of one key at once (catalogue B13)', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  }, 30_000);

  it('two harness processes on one SQLite file end each round at one written value or none', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'hm-b13-'));
    cleanups.push(async () => rmSync(folder, { recursive: true, force: true }));
    const path = join(folder, 'state.db');
    const replicas = await startReplicas(2, {
      HARNESS_MEMORY_SQLITE_PATH: path,
      HARNESS_MAX_WRITES_PER_SECOND: '1000000',
    });
    cleanups.push(() => stopReplicas(replicas));
    const base = `/v1/memory/${scope.tenantId}/${scope.conversationId}/${scope.agentId}/working`;
    const writerOf = (replica: Replica): Writer => ({
      async set(key, value) {
        const answer = await replica.apiJson(`${base}/${key}`, { method: 'PUT', json: { value } });
        expect(answer.status).toBe(200);
      },
      async delete(key) {
        const answer = await replica.apiJson(`${base}/${key}`, { method: 'DELETE' });
        expect(answer.status).toBe(200);
        return answer.body['deleted'] === true;
      },
      async entries() {
        const answer = await replica.apiJson(base);
        const entries = (answer.body['entries'] ?? []) as Array<{ key: string; value: unknown }>;
        return new Map(entries.map((entry) => [entry.key, entry.value]));
      },
    });
    await contend([writerOf(replicas[0] as Replica), writerOf(replicas[1] as Replica)], SQLITE_ROUNDS);

    const db = new Database(path, { readonly: true });
    cleanups.push(async () => db.close());
    const kept = db
      .prepare('SELECT entry_count AS count, total_bytes AS bytes FROM working_memory_versions WHERE memory_id = ?')
      .get(memoryId);
    const actual = db
      .prepare(
        'SELECT COUNT(*) AS count, SUM(length(CAST(entry_key AS BLOB)) + length(CAST(entry_json AS BLOB))) AS bytes ' +
          'FROM working_memory_entries WHERE memory_id = ?',
      )
      .get(memoryId);
    expect(kept).toEqual(actual);
    // A third connection's set is checked against the same rows.
    const store = createSqliteStore({ path });
    cleanups.push(() => store.dispose());
    await expectLimitsCountTheRows(store);
  }, 60_000);

  const url = postgresTestUrl();
  const schemas = url ? createPostgresTestSchemas(url) : undefined;
  afterAll(async () => {
    await schemas?.dropAll();
  });

  it.skipIf(!url)(
    'two Postgres stores on one schema end each round at one written value or none',
    async () => {
      const schema = schemas!.next();
      const stores = await Promise.all(
        [0, 1].map(() => createPostgresStore({ connectionString: url!, schema, max: 4, readLane: false })),
      );
      for (const store of stores) cleanups.push(() => store.dispose());
      const writerOf = (store: MemoryStore): Writer => {
        const workingMemory = createWorkingMemory({ store });
        return {
          async set(key, value) {
            await workingMemory.set(scope, key, value);
          },
          async delete(key) {
            return (await workingMemory.delete(scope, key)).deleted;
          },
          async entries() {
            const { entries } = await workingMemory.list(scope);
            const decoded = new Map(Object.entries(entries).map(([key, json]) => [key, JSON.parse(json) as unknown]));
            // The snippet each service holds is the one for these entries, the hot key's value included.
            const snippet = await workingMemory.snippet(scope);
            if (decoded.has(HOT)) expect(snippet).toContain(`${HOT}: ${entries[HOT]}`);
            else expect(snippet).not.toContain(`${HOT}:`);
            return decoded;
          },
        };
      };
      await contend([writerOf(stores[0] as MemoryStore), writerOf(stores[1] as MemoryStore)], POSTGRES_ROUNDS);

      const pool = new pg.Pool({ connectionString: url!, max: 1 });
      cleanups.push(() => pool.end());
      const rows = await pool.query<{ count: string }>(
        `SELECT COUNT(*) AS count FROM "${schema}".working_memory_entries WHERE memory_id = $1`,
        [memoryId],
      );
      const [listed] = await (stores[1] as MemoryStore).listScopes({ tenantId: scope.tenantId, limit: 10 });
      expect(listed?.workingMemoryEntries).toBe(Number(rows.rows[0]?.count));
      await expectLimitsCountTheRows(stores[0] as MemoryStore);
    },
    60_000,
  );
});
