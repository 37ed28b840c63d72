/**
 * Postgres connections killed under a running process (`pg_terminate_backend`, a failover, an
 * idle-connection killer, a restarted pgbouncer): the next reads answer (read once more on a
 * new connection), the next writes go through or fail saying whether they were applied, nothing
 * is stored twice, and the event hub's next notification still reaches the other replicas.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresTestSchemas, postgresTestUrl } from '../../../test/support/postgres-schema.js';
import type { PostgresTestSchemas } from '../../../test/support/postgres-schema.js';
import { HarnessMemoryError } from '../../core/errors.js';
import { memoryIdOf, resolveScope } from '../../core/scope.js';
import type { Scope } from '../../core/scope.js';
import type { RunEvent, RunStore } from '../run-store.js';
import type { MemoryStore } from '../store.js';
import { newRun } from '../run-store.suite.js';
import { createPostgresEventHub } from './postgres-event-hub.js';
import type { PostgresEventHub } from './postgres-event-hub.js';
import { createPostgresRunStore } from './postgres-run-store.js';
import { createPostgresStore } from './postgres-store.js';

const url = postgresTestUrl();
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

// Run by killBackends in a process of its own: terminates the backends named APP, then waits
// until the server lists none of them (by then each has sent its goodbye and closed).
const KILLER = `
const pg = require('pg');
(async () => {
  const client = new pg.Client({ connectionString: process.env.HM_URL });
  await client.connect();
  const app = process.env.HM_APP;
  const killed = await client.query(
    'SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS killed FROM pg_stat_activity ' +
      'WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = $1', [app]);
  const deadline = Date.now() + 15000;
  for (;;) {
    const left = await client.query('SELECT count(*)::int AS left FROM pg_stat_activity WHERE application_name = $1', [app]);
    if (left.rows[0].left === 0) break;
    if (Date.now() > deadline) throw new Error(left.rows[0].left + ' backends still alive');
  }
  await client.end();
  process.stdout.write(String(killed.rows[0].killed));
})().catch((error) => { console.error(error); process.exit(1); });
`;

/**
 * Terminates every backend named `application` from another process and returns how many it
 * killed, once the server has none left. This process's event loop waits meanwhile, so it has
 * not yet read what the server said on the killed connections: its pools still hold them as
 * idle (and the read lane as open) when the next call is made. That is the window every kill
 * leaves open (a call made before the process noticed), made certain.
 */
function killBackends(application: string): number {
  const child = spawnSync(process.execPath, ['-e', KILLER], {
    cwd: ROOT,
    env: { ...process.env, HM_URL: url ?? '', HM_APP: application },
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (child.status !== 0) throw new Error(`the killer failed: ${child.stderr}`);
  return Number(child.stdout);
}

/** Each call's answer, or its error's message, by name, once all have settled. */
async function settle(
  calls: Readonly<Record<string, () => Promise<unknown>>>,
): Promise<{ answers: Record<string, unknown>; errors: Record<string, unknown> }> {
  const names = Object.keys(calls);
  // Every call is made before the first await: in the same turn of the event loop.
  const settled = await Promise.allSettled(names.map((name) => calls[name]!()));
  const answers: Record<string, unknown> = {};
  const errors: Record<string, unknown> = {};
  settled.forEach((result, index) => {
    if (result.status === 'fulfilled') answers[names[index]!] = result.value;
    else errors[names[index]!] = result.reason;
  });
  return { answers, errors };
}

/** Four reads at once on each store's pool, so each holds four idle connections afterwards. */
async function fillPools(store: MemoryStore, runs: RunStore): Promise<void> {
  await Promise.all(
    Array.from({ length: 4 }, () => [
      store.listOperations('none'),
      runs.listRuns({ tenantId: 'none', limit: 1 }),
    ]).flat(),
  );
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

describe.skipIf(!url)('postgres: connections killed under a running process', () => {
  const connectionString = url ?? '';
  let schemas: PostgresTestSchemas;
  let admin: pg.Pool;
  const opened: Array<MemoryStore | RunStore> = [];
  const hubs: PostgresEventHub[] = [];
  const pools: pg.Pool[] = [];
  /** The connection string with `application_name` set, so the test finds the store's backends. */
  const named = (application: string): string => {
    const address = new URL(connectionString);
    address.searchParams.set('application_name', application);
    return address.toString();
  };
  const scopeOf = (conversationId: string): { scope: Scope; memoryId: string } => {
    const scope = resolveScope({ tenantId: 'acme', conversationId, agentId: 'agent' });
    return { scope, memoryId: memoryIdOf(scope) };
  };
  const count = async (text: string, values: unknown[]): Promise<number> =>
    (await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${text}`, values)).rows[0]!.n;

  beforeAll(() => {
    schemas = createPostgresTestSchemas(connectionString);
    admin = new pg.Pool({ connectionString, max: 2 });
  });
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.dispose();
    for (const hub of hubs.splice(0)) await hub.close();
    for (const pool of pools.splice(0)) await pool.end();
  });
  afterAll(async () => {
    await admin.end();
    await schemas.dropAll();
  });

  /** A memory store and a run store on one schema, with data to read, and every read they make. */
  const openStores = async (
    application: string,
    options: { readLane?: boolean } = {},
  ): Promise<{
    store: MemoryStore;
    runs: RunStore;
    schema: string;
    reads: Record<string, () => Promise<unknown>>;
  }> => {
    const schema = schemas.next();
    const store = await createPostgresStore({ connectionString: named(application), schema, max: 4, ...options });
    opened.push(store);
    const runs = await createPostgresRunStore({ connectionString: named(application), schema, max: 4, ...options });
    opened.push(runs);
    const { scope, memoryId } = scopeOf('killed');
    const limits = { maxEntries: 100, maxTotalBytes: 32_768 };
    await store.setWorkingMemoryEntry({ scope, memoryId, key: 'city', valueJson: '"Lisbon"', limits });
    await store.importObservations!({
      scope,
      memoryId,
      runId: 'run_1',
      toolCallId: '',
      operationId: 'op_import',
      observations: [1, 2, 3].map((index) => ({ content: `fact ${index}`, importance: 0.5, tokenCount: 2 })),
    });
    await store.appendMessages({
      scope,
      memoryId,
      messages: [{ messageKey: 'k1', role: 'user', name: '', toolCallId: '', content: 'hello', tokenCount: 3 }],
    });
    await runs.createRun({ ...newRun('run_1'), scope });
    await runs.appendMessages(memoryId, [
      { messageId: 'm1', runId: 'run_1', role: 'user', content: 'hello', tokenCount: 3 },
      { messageId: 'm2', runId: 'run_1', role: 'assistant', content: 'hi', tokenCount: 2 },
    ]);
    const reads: Record<string, () => Promise<unknown>> = {
      getRecord: () => store.getRecord(memoryId),
      listObservations: () => store.listObservations(memoryId),
      listObservationsAfter: () => store.listObservations(memoryId, { afterSeq: 1 }),
      findObservations: () => store.findObservations(memoryId, { words: ['fact'], limit: 10 }),
      listUnobservedMessages: () => store.listUnobservedMessages(memoryId, 10),
      getWorkingMemoryEntry: () => store.getWorkingMemoryEntry(memoryId, 'city'),
      listWorkingMemoryEntries: () => store.listWorkingMemoryEntries(memoryId),
      workingMemoryVersion: () => store.workingMemoryVersion!(memoryId),
      scopeGeneration: () => store.scopeGeneration!(memoryId),
      listOperations: () => store.listOperations(memoryId),
      countPendingOperations: () => store.countPendingOperations(),
      listScopes: () => store.listScopes({ tenantId: 'acme', limit: 10 }),
      recentHistory: () => runs.recentHistory!(memoryId, 1_000),
      recentMessages: () => runs.recentMessages(memoryId, 1_000),
      conversationGeneration: () => runs.conversationGeneration!(memoryId),
      listRuns: () => runs.listRuns({ tenantId: 'acme', limit: 10 }),
    };
    return { store, runs, schema, reads };
  };

  it.each([
    { readLane: true, lane: 'on' },
    { readLane: false, lane: 'off' },
  ])('answers every read made just after its connections were killed (read lane $lane)', async ({ readLane }) => {
    const application = `hm_killed_reads_${process.pid}_${readLane ? 'lane' : 'pool'}`;
    const { store, runs, reads } = await openStores(application, { readLane });
    const expected = (await settle(reads)).answers;
    expect(Object.keys(expected)).toHaveLength(Object.keys(reads).length);
    for (let round = 1; round <= 2; round++) {
      // Every pool holds several idle connections (and the lane its own) when they are killed.
      await fillPools(store, runs);
      await settle(reads);
      expect(killBackends(application)).toBe(readLane ? 10 : 8);
      const { answers, errors } = await settle(reads);
      expect(Object.fromEntries(Object.entries(errors).map(([name, error]) => [name, messageOf(error)]))).toEqual({});
      expect(answers).toEqual(expected);
    }
  });

  it('destroys every client whose connection was killed: the pool never lends one again', async () => {
    const application = `hm_killed_pool_${process.pid}`;
    const pool = new pg.Pool({ connectionString: named(application), max: 4 });
    pools.push(pool);
    // Idle clients that hear of the kill emit 'error' on the pool.
    pool.on('error', () => {});
    const held = new Set<pg.Client>();
    pool.on('connect', (client) => held.add(client));
    pool.on('remove', (client) => held.delete(client));
    const schema = schemas.next();
    const store = await createPostgresStore({ pool, schema });
    opened.push(store);
    const { memoryId } = scopeOf('pool');
    const reads = () => Promise.all(Array.from({ length: 4 }, () => store.listOperations(memoryId)));
    await reads();
    expect(pool.idleCount).toBe(4);
    expect(killBackends(application)).toBe(4);
    expect(await reads()).toEqual([[], [], [], []]);
    const alive = (
      await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [application])
    ).rows.map((row) => row.pid);
    const lent = [...held].map((client) => (client as unknown as { processID: number }).processID);
    expect(lent.length).toBeGreaterThan(0);
    for (const pid of lent) expect(alive).toContain(pid);
  });

  it('fails a write whose connection was killed saying whether it was applied, and stores nothing twice', async () => {
    const application = `hm_killed_writes_${process.pid}`;
    const { store, runs, schema } = await openStores(application);
    const s = `"${schema}".`;
    await runs.createRun({ ...newRun('run_events'), scope: scopeOf('killed').scope, status: 'running' });
    // Each write of the memory store in a scope of its own, so none waits for another.
    const [append, enqueue, set, remove] = ['append', 'enqueue', 'set', 'delete'].map(scopeOf);
    const limits = { maxEntries: 100, maxTotalBytes: 32_768 };
    await store.setWorkingMemoryEntry({ ...remove!, key: 'gone', valueJson: '1', limits });
    const conversation = scopeOf('conversation').memoryId;
    const writes: Record<string, () => Promise<unknown>> = {
      // Transactions: lost before their COMMIT, so rolled back.
      appendMessages: () =>
        store.appendMessages({
          ...append!,
          messages: [{ messageKey: 'w1', role: 'user', name: '', toolCallId: '', content: 'w', tokenCount: 1 }],
        }),
      enqueueOperation: () =>
        store.enqueueOperation({
          ...enqueue!,
          operationId: 'op_w',
          operationType: 'observe',
          payload: {},
          runId: 'run_1',
          toolCallId: '',
        }),
      // One statement each: its answer may be lost after its commit.
      setWorkingMemoryEntry: () => store.setWorkingMemoryEntry({ ...set!, key: 'new', valueJson: '2', limits }),
      deleteWorkingMemoryEntry: () => store.deleteWorkingMemoryEntry(remove!.memoryId, 'gone'),
      createRun: () => runs.createRun({ ...newRun('run_new'), scope: append!.scope }),
      appendEvent: () => runs.appendEvent('run_events', 'step', { n: 1 }),
      appendRunMessages: () =>
        runs.appendMessages(conversation, [
          { messageId: 'w2', runId: 'run_1', role: 'user', content: 'w', tokenCount: 1 },
        ]),
    };
    const stored: Record<string, () => Promise<number>> = {
      appendMessages: () => count(`${s}om_messages WHERE memory_id = $1 AND message_key = 'w1'`, [append!.memoryId]),
      enqueueOperation: () => count(`${s}om_operation_log WHERE operation_id = 'op_w'`, []),
      setWorkingMemoryEntry: () =>
        count(`${s}working_memory_entries WHERE memory_id = $1 AND entry_key = 'new'`, [set!.memoryId]),
      deleteWorkingMemoryEntry: async () =>
        1 - (await count(`${s}working_memory_entries WHERE memory_id = $1 AND entry_key = 'gone'`, [remove!.memoryId])),
      createRun: () => count(`${s}harness_runs WHERE run_id = 'run_new'`, []),
      appendEvent: () => count(`${s}harness_run_events WHERE run_id = 'run_events'`, []),
      appendRunMessages: () => count(`${s}harness_conversation_messages WHERE message_id = 'w2'`, []),
    };
    const transactions = new Set(['appendMessages', 'enqueueOperation']);
    await fillPools(store, runs);
    killBackends(application);
    const { errors } = await settle(writes);
    // The memory store's four writes took its four killed connections.
    expect(Object.keys(errors)).toEqual(
      expect.arrayContaining([
        'appendMessages',
        'enqueueOperation',
        'setWorkingMemoryEntry',
        'deleteWorkingMemoryEntry',
      ]),
    );
    for (const [name, error] of Object.entries(errors)) {
      expect(HarnessMemoryError.isInstance(error), name).toBe(true);
      const failure = error as HarnessMemoryError;
      expect(failure.code, name).toBe('STORE_FAILED');
      expect(failure.message, name).toMatch(/The connection to Postgres was lost/);
      expect(failure.data, name).toMatchObject({ connectionLost: true });
      if (transactions.has(name)) {
        expect(failure.data['outcome'], name).toBe('not-applied');
        expect(failure.message, name).toMatch(/nothing of this call was stored, and it is safe to make again/);
        expect(await stored[name]!(), name).toBe(0);
      } else {
        expect(failure.data['outcome'], name).toBe('unknown');
        expect(failure.message, name).toMatch(/read back what it writes before making it again/);
      }
    }
    // What the caller does next: read back, make again what is not there. Each write is then
    // stored exactly once.
    for (const name of Object.keys(errors)) if ((await stored[name]!()) === 0) await writes[name]!();
    for (const name of Object.keys(writes)) expect(await stored[name]!(), name).toBe(1);
  });

  it('wakes the other replicas with a notification published just after its connections were killed, and listens again', async () => {
    const schema = schemas.next();
    const replica = async (application: string): Promise<PostgresEventHub> => {
      const hub = await createPostgresEventHub({ connectionString: named(application), schema });
      hubs.push(hub);
      return hub;
    };
    const application = `hm_killed_hub_${process.pid}`;
    const [killed, other] = await Promise.all([replica(application), replica(`hm_killed_hub_other_${process.pid}`)]);
    /** The first event `hub` delivers to a subscriber of `runId` that `accept` takes; what it waits for, if none comes. */
    const next = (
      hub: PostgresEventHub,
      runId: string,
      accept: (event: RunEvent) => boolean,
      awaited: string,
    ): Promise<RunEvent> =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${awaited} did not come within 15 s`)), 15_000);
        const stop = hub.subscribe(runId, (event) => {
          if (!accept(event)) return;
          clearTimeout(timer);
          stop();
          resolve(event);
        });
      });
    const event = (seq: number): RunEvent => ({
      id: `run_1:${seq}`,
      runId: 'run_1',
      seq,
      type: 'test.event',
      timestamp: new Date().toISOString(),
      payload: {},
    });
    // A first notification leaves the publisher's pool an idle connection, next to its LISTEN one.
    const first = next(other!, 'run_1', (received) => received.seq === 1, 'the first notification');
    killed!.publish(event(1));
    await first;
    const woken = next(other!, 'run_1', (received) => received.seq === 2, 'the notification sent after the kill');
    const relistened = next(killed!, 'run_1', (received) => received.type === 'reconnected', 'the reconnected wake-up');
    expect(killBackends(application)).toBe(2);
    killed!.publish(event(2));
    expect(await woken).toMatchObject({ runId: 'run_1', seq: 2, type: 'notification' });
    await relistened;
    const back = next(killed!, 'run_1', (received) => received.seq === 3, 'a notification to the killed replica');
    other!.publish(event(3));
    expect(await back).toMatchObject({ runId: 'run_1', seq: 3, type: 'notification' });
  });
});
