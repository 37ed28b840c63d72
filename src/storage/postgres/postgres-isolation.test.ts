import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresTestSchemas, postgresTestUrl } from '../../../test/support/postgres-schema.js';
import type { PostgresTestSchemas } from '../../../test/support/postgres-schema.js';
import { memoryIdOf } from '../../core/scope.js';
import type { Scope } from '../../core/scope.js';
import { ownPoolSettings } from './postgres-connection.js';
import { acquireReadLane } from './postgres-read-lane.js';
import { createPostgresRunStore } from './postgres-run-store.js';
import { createPostgresStore } from './postgres-store.js';
import type { MemoryStore } from '../store.js';

const url = postgresTestUrl();
const scope: Scope = { tenantId: 't1', conversationId: 'c1', agentId: 'default' };
const memoryId = memoryIdOf(scope);
const limits = { maxEntries: 100, maxTotalBytes: 1_000_000 };

/** `url` with `-c default_transaction_isolation=<level>` as its startup option, as an operator might set it. */
function withIsolation(connectionString: string, level: string): string {
  const target = new URL(connectionString);
  target.searchParams.set('options', `-c statement_timeout=4321 -c default_transaction_isolation=${level}`);
  return target.toString();
}

/** Rounds of concurrent writes of one scope through every store at once, as several replicas send them. */
async function writeConcurrently(stores: readonly MemoryStore[]): Promise<PromiseSettledResult<unknown>[]> {
  const settled: PromiseSettledResult<unknown>[] = [];
  for (let round = 0; round < 3; round++) {
    const writes = stores.flatMap((store, storeIndex) =>
      Array.from({ length: 12 }, (_, index) => {
        const key = `k${index % 3}`;
        if (index % 4 === 3) return store.deleteWorkingMemoryEntry(memoryId, key);
        if (index % 4 === 2)
          return store.appendMessages({
            scope,
            memoryId,
            messages: [
              {
                messageKey: `m-${round}-${storeIndex}-${index}`,
                role: 'user',
                content: 'hello',
                tokenCount: 1,
                name: '',
                toolCallId: '',
              },
            ],
          });
        return store.setWorkingMemoryEntry({ scope, memoryId, key, valueJson: String(index), limits });
      }),
    );
    settled.push(...(await Promise.allSettled(writes)));
  }
  return settled;
}

const failures = (settled: PromiseSettledResult<unknown>[]): string[] =>
  settled.flatMap((result) => (result.status === 'rejected' ? [String(result.reason)] : []));

describe.skipIf(!url)('postgres stores under a stricter default isolation', () => {
  const connectionString = url ?? '';
  let schemas: PostgresTestSchemas;
  beforeAll(() => {
    schemas = createPostgresTestSchemas(connectionString);
  });
  afterAll(async () => {
    await schemas.dropAll();
  });

  it('starts its own connections, and the read lane, in READ COMMITTED, keeping the other options', async () => {
    const pool = new pg.Pool(ownPoolSettings(withIsolation(connectionString, 'serializable'), 1));
    const lane = acquireReadLane(pool);
    try {
      const text = `SELECT current_setting('transaction_isolation') AS level, current_setting('statement_timeout') AS timeout`;
      const expected = { level: 'read committed', timeout: '4321ms' };
      expect((await pool.query(text)).rows[0]).toEqual(expected);
      expect((await lane.read(text, [])).rows[0]).toEqual(expected);
    } finally {
      await lane.release();
      await pool.end();
    }
  });

  it('answers every concurrent write of one scope when the connection string asks for SERIALIZABLE', async () => {
    const schema = schemas.next();
    const dsn = withIsolation(connectionString, 'serializable');
    const stores = [
      await createPostgresStore({ connectionString: dsn, schema, max: 6 }),
      await createPostgresStore({ connectionString: dsn, schema, max: 6 }),
    ];
    try {
      expect(failures(await writeConcurrently(stores))).toEqual([]);
    } finally {
      for (const store of stores) await store.dispose();
    }
  });

  for (const level of ['serializable', 'repeatable read']) {
    it(`answers every concurrent write of one scope on a caller's pool that defaults to ${level}`, async () => {
      const schema = schemas.next();
      const pools = [0, 1].map(
        () =>
          new pg.Pool({
            connectionString,
            max: 6,
            options: `-c default_transaction_isolation=${level.replace(' ', '\\ ')}`,
          }),
      );
      const stores: MemoryStore[] = [];
      try {
        expect((await pools[0]?.query('SHOW transaction_isolation'))?.rows[0]).toEqual({
          transaction_isolation: level,
        });
        for (const pool of pools) stores.push(await createPostgresStore({ pool, schema }));
        expect(failures(await writeConcurrently(stores))).toEqual([]);
        // The conversation's messages of the run store take its lock and then read, the same way.
        const runStores = await Promise.all(pools.map((pool) => createPostgresRunStore({ pool, schema })));
        const appends = runStores.flatMap((runStore, storeIndex) =>
          Array.from({ length: 10 }, (_, index) =>
            runStore.appendMessages(memoryId, [
              { messageId: `r-${storeIndex}-${index}`, runId: 'run-1', role: 'user', content: 'hi', tokenCount: 1 },
            ]),
          ),
        );
        expect(failures(await Promise.allSettled(appends))).toEqual([]);
        for (const runStore of runStores) await runStore.dispose();
      } finally {
        for (const store of stores) await store.dispose();
        for (const pool of pools) await pool.end();
      }
    });
  }
});
