import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresTestSchemas, postgresTestUrl } from '../../../test/support/postgres-schema.js';
import type { PostgresTestSchemas } from '../../../test/support/postgres-schema.js';
import { memoryIdOf, resolveScope } from '../../core/scope.js';
import { scopeLockClass } from './postgres-connection.js';
import { createPostgresRunStore } from './postgres-run-store.js';
import { newRun } from '../run-store.suite.js';
import type { ConversationMessage, RunStore } from '../run-store.js';

const url = postgresTestUrl();
const POOL_SIZE = 10;
const HELD_WRITES = 12;

/** A promise's settlement, readable without awaiting it. */
function track<T>(work: Promise<T>): { promise: Promise<T>; readonly settled: boolean } {
  const tracked = { promise: work, settled: false };
  work.then(
    () => (tracked.settled = true),
    () => (tracked.settled = true),
  );
  return tracked;
}

/**
 * Settles with `work`, or fails as soon as a query of the store waits for a free connection of
 * its pool: the sign that the held writes took every connection.
 */
async function withoutPoolWait<T>(pool: pg.Pool, work: Promise<T>): Promise<T> {
  let done = false;
  const watch = (async () => {
    while (!done) {
      if (pool.waitingCount > 0)
        throw new Error(`a query waited for a pooled connection: all ${pool.totalCount} were taken`);
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  try {
    return await Promise.race([work, watch as Promise<never>]);
  } finally {
    done = true;
    await watch.catch(() => {});
  }
}

describe.skipIf(!url)('postgres run store: a conversation or run held by another session', () => {
  const connectionString = url ?? '';
  let schemas: PostgresTestSchemas;
  let admin: pg.Pool;
  const opened: Array<{ store: RunStore; pool: pg.Pool }> = [];
  beforeAll(() => {
    schemas = createPostgresTestSchemas(connectionString);
    admin = new pg.Pool({ connectionString, max: 2 });
  });
  afterEach(async () => {
    for (const { store, pool } of opened.splice(0)) {
      await store.dispose();
      await pool.end();
    }
  });
  afterAll(async () => {
    await admin.end();
    await schemas.dropAll();
  });

  const held = resolveScope({ tenantId: 'held', conversationId: 'c1' });
  const other = resolveScope({ tenantId: 'other', conversationId: 'c1' });

  /** A store on a pool of {@link POOL_SIZE}, whose connections pg_stat_activity tells by name. */
  async function openStore(): Promise<{ store: RunStore; pool: pg.Pool; schema: string; application: string }> {
    const schema = schemas.next();
    const application = `hm_run_writes_${randomBytes(4).toString('hex')}`;
    const dsn = new URL(connectionString);
    dsn.searchParams.set('application_name', application);
    const pool = new pg.Pool({ connectionString: dsn.toString(), max: POOL_SIZE });
    const store = await createPostgresRunStore({ pool, schema });
    opened.push({ store, pool });
    await store.createRun({ ...newRun('run-held'), scope: held, status: 'running' });
    await store.createRun({ ...newRun('run-other'), scope: other, status: 'running' });
    return { store, pool, schema, application };
  }

  /** How many of the store's connections wait on a lock. */
  async function waitingOnLock(application: string): Promise<number> {
    const found = await admin.query<{ waiting: number }>(
      `SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
      [application],
    );
    return found.rows[0]?.waiting ?? 0;
  }

  /** Makes the held writes: the first, then, once it waits on the lock, the rest at once. */
  async function heldWrites(
    application: string,
    write: (index: number) => Promise<unknown>,
  ): Promise<Array<ReturnType<typeof track>>> {
    const writes = [track(write(0))];
    while ((await waitingOnLock(application)) < 1) await new Promise((resolve) => setImmediate(resolve));
    for (let index = 1; index < HELD_WRITES; index++) writes.push(track(write(index)));
    return writes;
  }

  /** The conversation's stored message ids, in position order. */
  async function storedIds(schema: string, memoryId: string): Promise<string[]> {
    const landed = await admin.query<{ message_id: string }>(
      `SELECT message_id FROM "${schema}".harness_conversation_messages WHERE memory_id = $1 ORDER BY position`,
      [memoryId],
    );
    return landed.rows.map((row) => row.message_id);
  }

  /** A client of its own holding the conversation's lock in an open transaction. */
  async function holdConversation(schema: string, memoryId: string): Promise<pg.PoolClient> {
    const locker = await admin.connect();
    await locker.query('BEGIN');
    await locker.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [
      scopeLockClass(schema, 'conversation'),
      memoryId,
    ]);
    return locker;
  }

  const message = (id: string, runId: string): ConversationMessage => ({
    messageId: id,
    runId,
    role: 'user',
    content: `content ${id}`,
    tokenCount: 1,
  });

  it('keeps appending other conversations while writes of one wait on its lock, and lands the held ones in order', async () => {
    const { store, pool, schema, application } = await openStore();
    const heldId = memoryIdOf(held);
    const generation = await store.conversationGeneration(heldId);
    // What a forget of the conversation in another replica holds until it commits.
    const locker = await holdConversation(schema, heldId);
    try {
      const writes = await heldWrites(application, (index) =>
        store.appendMessages(heldId, [message(`m${index}`, 'run-held')], { generation }),
      );

      await withoutPoolWait(
        pool,
        Promise.all([
          store.appendMessages(memoryIdOf(other), [message('x', 'run-other')]),
          store.appendEvent('run-other', 'test.event', {}),
          store.updateRun('run-other', { steps: 1 }),
          store.getRun('run-other'),
        ]),
      );
      expect(writes.filter((write) => write.settled)).toHaveLength(0);
      // The held writes tie up one connection; the rest wait in the store.
      expect(await waitingOnLock(application)).toBe(1);

      await locker.query('ROLLBACK');
      await Promise.all(writes.map((write) => write.promise));
      expect(await storedIds(schema, heldId)).toEqual(Array.from({ length: HELD_WRITES }, (_, index) => `m${index}`));
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
      locker.release();
    }
  });

  it('answers bad append arguments with a rejection, never a throw, and an empty append at once', async () => {
    const { store, schema } = await openStore();
    const heldId = memoryIdOf(held);
    let rejected: Promise<void> | undefined;
    expect(() => {
      rejected = store.appendMessages(heldId, undefined as never);
    }).not.toThrow();
    await expect(rejected).rejects.toThrow();
    await expect(store.appendMessages(heldId, [message('m0', 'run-held')], null as never)).rejects.toThrow();
    await store.appendMessages(heldId, []);
    expect(await storedIds(schema, heldId)).toEqual([]);
  });

  it('applies a forget made among appends of the conversation in its turn', async () => {
    const { store, schema, application } = await openStore();
    const heldId = memoryIdOf(held);
    const locker = await holdConversation(schema, heldId);
    try {
      const writes = await heldWrites(application, (index) =>
        index === HELD_WRITES / 2
          ? store.forgetConversation(heldId)
          : store.appendMessages(heldId, [message(`m${index}`, 'run-held')]),
      );
      await locker.query('ROLLBACK');
      await Promise.all(writes.map((write) => write.promise));
      expect(await storedIds(schema, heldId)).toEqual(
        Array.from({ length: HELD_WRITES }, (_, index) => `m${index}`).slice(HELD_WRITES / 2 + 1),
      );
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
      locker.release();
    }
  });

  it('keeps writing other runs while writes of one wait on its locked row, and lands the held ones in order', async () => {
    const { store, pool, schema, application } = await openStore();
    const locker = await admin.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`SELECT * FROM "${schema}".harness_runs WHERE run_id = 'run-held' FOR UPDATE`);
      // Events, and every third write a heartbeat, as a run's loop and maintenance make them.
      const writes = await heldWrites(application, (index) =>
        index % 3 === 2 ? store.updateRun('run-held', {}) : store.appendEvent('run-held', 'test.event', { index }),
      );

      await withoutPoolWait(
        pool,
        Promise.all([
          store.appendEvent('run-other', 'test.event', {}),
          store.updateRun('run-other', { steps: 1 }),
          store.appendMessages(memoryIdOf(other), [message('x', 'run-other')]),
          store.listEvents('run-other', -1),
        ]),
      );
      expect(writes.filter((write) => write.settled)).toHaveLength(0);
      // The held writes tie up one connection; the rest wait in the store.
      expect(await waitingOnLock(application)).toBe(1);

      await locker.query('ROLLBACK');
      await Promise.all(writes.map((write) => write.promise));
      const events = await store.listEvents('run-held', -1);
      expect(events.map((event) => event.payload['index'])).toEqual(
        Array.from({ length: HELD_WRITES }, (_, index) => index).filter((index) => index % 3 !== 2),
      );
      expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
      locker.release();
    }
  });
});
