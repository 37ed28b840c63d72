import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresTestSchemas, postgresTestUrl } from '../../../test/support/postgres-schema.js';
import type { PostgresTestSchemas } from '../../../test/support/postgres-schema.js';
import { memoryIdOf } from '../../core/scope.js';
import type { Scope } from '../../core/scope.js';
import { scopeLockClass } from './postgres-connection.js';
import { createScopeWrites, SCOPE_WRITES_IN_FLIGHT } from './postgres-scope-writes.js';
import { createPostgresStore } from './postgres-store.js';
import type { MemoryStore } from '../store.js';

const url = postgresTestUrl();
const limits = { maxEntries: 100, maxTotalBytes: 1_000_000 };
const scopeOf = (tenantId: string): Scope => ({ tenantId, conversationId: 'c1', agentId: 'default' });

/** A promise and its resolver. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** Fails unless `work` settles within `ms`: a bound on a wait that should be prompt, not a sleep. */
async function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still waiting after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('createScopeWrites', () => {
  it('runs a scope’s writes one at a time by default, in the order made', async () => {
    expect(SCOPE_WRITES_IN_FLIGHT).toBe(1);
    const writes = createScopeWrites();
    const gates = Array.from({ length: 3 }, deferred);
    const started: number[] = [];
    const runs = gates.map((gate, index) =>
      writes.run('a', async () => {
        started.push(index);
        await gate.promise;
        return index;
      }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([0]);
    gates[2]?.resolve();
    gates[1]?.resolve();
    gates[0]?.resolve();
    expect(await Promise.all(runs)).toEqual([0, 1, 2]);
    expect(started).toEqual([0, 1, 2]);
  });

  it('runs a scope’s writes at most two at a time when asked, in order, and other scopes’ beside them', async () => {
    const writes = createScopeWrites(2);
    const gates = Array.from({ length: 4 }, deferred);
    const started: string[] = [];
    const runs = gates.map((gate, index) =>
      writes.run('a', async () => {
        started.push(`a${index}`);
        await gate.promise;
        return index;
      }),
    );
    const other = writes.run('b', async () => 'b');
    expect(await other).toBe('b');
    expect(started).toEqual(['a0', 'a1']);
    gates[1]?.resolve();
    await runs[1];
    expect(started).toEqual(['a0', 'a1', 'a2']);
    gates[0]?.resolve();
    gates[2]?.resolve();
    gates[3]?.resolve();
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3]);
    expect(writes.size).toBe(0);
  });

  it('hands the turn on after a write that failed', async () => {
    const writes = createScopeWrites(1);
    const failed = writes.run('a', () => Promise.reject(new Error('boom')));
    const next = writes.run('a', async () => 'next');
    await expect(failed).rejects.toThrow('boom');
    expect(await next).toBe('next');
    expect(writes.size).toBe(0);
  });
});

describe.skipIf(!url)('postgres store: a scope held by another session', () => {
  const connectionString = url ?? '';
  let schemas: PostgresTestSchemas;
  let admin: pg.Pool;
  beforeAll(() => {
    schemas = createPostgresTestSchemas(connectionString);
    admin = new pg.Pool({ connectionString, max: 2 });
  });
  afterAll(async () => {
    await admin.end();
    await schemas.dropAll();
  });

  /** A store on a pool of three, its connections named so that pg_stat_activity tells them. */
  async function openStore(): Promise<{ store: MemoryStore; schema: string; application: string }> {
    const schema = schemas.next();
    const application = `hm_scope_writes_${randomBytes(4).toString('hex')}`;
    const dsn = new URL(connectionString);
    dsn.searchParams.set('application_name', application);
    const store = await createPostgresStore({ connectionString: dsn.toString(), schema, max: 3, readLane: false });
    return { store, schema, application };
  }

  /** Waits until `count` of the store's connections wait on a lock. */
  async function untilWaiting(application: string, count: number): Promise<void> {
    for (;;) {
      const found = await admin.query<{ waiting: number }>(
        `SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
        [application],
      );
      if ((found.rows[0]?.waiting ?? 0) >= count) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  it('keeps writing other scopes while writes of one wait on its locked working-memory row', async () => {
    const { store, schema, application } = await openStore();
    const held = scopeOf('t1');
    const memoryId = memoryIdOf(held);
    await store.setWorkingMemoryEntry({ scope: held, memoryId, key: 'k', valueJson: '0', limits });
    const locker = await admin.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`SELECT * FROM "${schema}".working_memory_entries WHERE entry_key = 'k' FOR UPDATE`);
      const blocked = Array.from({ length: 6 }, (_, index) =>
        index % 3 === 2
          ? store.deleteWorkingMemoryEntry(memoryId, 'k')
          : store.setWorkingMemoryEntry({ scope: held, memoryId, key: 'k', valueJson: String(index), limits }),
      );
      // One waits on the row; the rest wait in the process.
      await untilWaiting(application, SCOPE_WRITES_IN_FLIGHT);
      const other = scopeOf('t2');
      const written = await within(
        5_000,
        store.setWorkingMemoryEntry({ scope: other, memoryId: memoryIdOf(other), key: 'z', valueJson: '1', limits }),
      );
      expect(written.key).toBe('z');
      await locker.query('ROLLBACK');
      await Promise.all(blocked);
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
      locker.release();
      await store.dispose();
    }
  });

  it("keeps writing other scopes while another session holds one scope's lock", async () => {
    const { store, schema, application } = await openStore();
    const held = scopeOf('t1');
    const memoryId = memoryIdOf(held);
    const locker = await admin.connect();
    const lockKey = [scopeLockClass(schema, 'memory'), memoryId];
    try {
      await locker.query('SELECT pg_advisory_lock($1, hashtext($2))', lockKey);
      const message = (key: string) => ({
        messageKey: key,
        role: 'user',
        name: '',
        toolCallId: '',
        content: 'hi',
        tokenCount: 1,
      });
      const blocked = [
        ...Array.from({ length: 3 }, (_, index) =>
          store.appendMessages({ scope: held, memoryId, messages: [message(`m${index}`)] }),
        ),
        ...Array.from({ length: 3 }, (_, index) =>
          store.setWorkingMemoryEntry({ scope: held, memoryId, key: `k${index}`, valueJson: '1', limits }),
        ),
      ];
      await untilWaiting(application, SCOPE_WRITES_IN_FLIGHT);
      const other = scopeOf('t2');
      const appended = await within(
        5_000,
        store.appendMessages({ scope: other, memoryId: memoryIdOf(other), messages: [message('x')] }),
      );
      expect(appended.inserted).toBe(1);
      await locker.query('SELECT pg_advisory_unlock($1, hashtext($2))', lockKey);
      await Promise.all(blocked);
    } finally {
      await locker.query('SELECT pg_advisory_unlock_all()').catch(() => {});
      locker.release();
      await store.dispose();
    }
  });
});
