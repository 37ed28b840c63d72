/**
 * Without a background worker (a library user who never calls `startWorker()`), no operation of
 * a scope waits forever: an operation whose process died holding its lease is taken over by the
 * scope's next observe or drain once the lease has expired, and an operation another process
 * queued while this one's ran is run by whoever finishes. On the in-memory store (its clock),
 * SQLite (two stores on one file) and Postgres (two stores on one schema).
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresTestSchemas, postgresTestUrl, recordStatements } from '../../test/support/postgres-schema.js';
import type { PostgresTestSchemas } from '../../test/support/postgres-schema.js';
import { scriptedObserver } from '../../test/support/scripted-models.js';
import { useSqliteTestFiles } from '../../test/support/sqlite-test-files.js';
import { memoryIdOf } from '../core/scope.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createPostgresStore } from '../storage/postgres/postgres-store.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import type { MemoryStore, Operation } from '../storage/store.js';
import type { ObserverInput } from './model-observer.js';
import { createObservationalMemory } from './observational-memory.js';
import type { ObservationalMemoryOptions } from './observational-memory.js';

const scope = { tenantId: 'tenant-a', conversationId: 'conv-recovery', agentId: 'agent-x' };
const memoryId = memoryIdOf(scope);

const says = (id: string, content: string) => [{ id, role: 'user', content }];

/** An observer writing one observation naming the seqs it was shown. */
const seqObserver = () =>
  scriptedObserver(
    (input: ObserverInput) => `IMPORTANCE:0.9\nSaw ${input.messages.map((message) => message.seq).join(',')}.`,
  );

function memoryOn(store: MemoryStore, options: Partial<ObservationalMemoryOptions> = {}) {
  return createObservationalMemory({
    store,
    observer: seqObserver(),
    defaultEnabled: true,
    defaults: { observeMinTokens: 1 },
    leaseMs: 60_000,
    ...options,
  });
}

/** What a process killed mid-operation leaves: its messages stored, its observe `processing`. */
async function crashedObserve(store: MemoryStore, leaseMs: number): Promise<Operation> {
  await store.appendMessages({
    scope,
    memoryId,
    messages: [
      {
        messageKey: 'id:m1',
        role: 'user',
        name: '',
        toolCallId: '',
        content: 'I am allergic to peanuts.',
        tokenCount: 8,
      },
    ],
  });
  await store.enqueueOperation({
    operationId: 'op-crashed',
    scope,
    memoryId,
    operationType: 'observe',
    payload: {},
    runId: 'r1',
    toolCallId: 'system',
  });
  const claimed = await store.claimOperation({ memoryId, leaseOwner: 'killed-process', leaseMs });
  expect(claimed?.operationId).toBe('op-crashed');
  return claimed as Operation;
}

/** Resolves once the wall clock (the SQLite and local Postgres clock) is past `iso`. */
async function past(iso: string): Promise<void> {
  while (Date.now() <= Date.parse(iso) + 1) await new Promise((resolve) => setTimeout(resolve, 2));
}

const statuses = async (store: MemoryStore) =>
  (await store.listOperations(memoryId)).map((operation) => [operation.operationId, operation.status]);

describe('operation recovery without a worker: in-memory store', () => {
  function setup() {
    let clock = Date.parse('2026-03-01T00:00:00.000Z');
    const now = () => new Date(clock);
    const store = createInMemoryStore({ now });
    const memory = memoryOn(store, { leaseMs: 1000, now });
    return { store, memory, advance: (ms: number) => void (clock += ms) };
  }

  it("the scope's next observe takes over an operation whose lease expired, and runs the scope on", async () => {
    const { store, memory, advance } = setup();
    await crashedObserve(store, 1000);
    // The lease still holds: the holder may be alive, so the observe waits its turn.
    const early = await memory.observe({ scope, runId: 'r2', messages: says('m2', 'And to shellfish.') });
    expect(early.status).toBe('queued');
    advance(1001);
    const later = await memory.observe({ scope, runId: 'r3', messages: says('m3', 'My deadline is Friday.') });
    expect(later).toMatchObject({ status: 'applied', observed: true });
    const operations = await store.listOperations(memoryId);
    expect(operations.map((operation) => operation.status)).toEqual(['applied', 'applied', 'applied']);
    expect(operations[0]).toMatchObject({ operationId: 'op-crashed', attempt: 2 });
    expect((await store.getRecord(memoryId))?.observedThroughMessageSeq).toBe(3);
    expect(await memory.snippet(scope)).toContain('Saw 1');
  });

  it('drain of the scope, and of every scope, recovers an operation whose lease expired', async () => {
    const { store, memory, advance } = setup();
    await crashedObserve(store, 1000);
    await expect(memory.drain(scope, { timeoutMs: 60 })).rejects.toMatchObject({ code: 'DRAIN_TIMEOUT' });
    advance(1001);
    await memory.drain(scope, { timeoutMs: 5000 });
    expect(await statuses(store)).toEqual([['op-crashed', 'applied']]);

    const other = { ...scope, conversationId: 'conv-other' };
    await store.enqueueOperation({
      operationId: 'op-other',
      scope: other,
      memoryId: memoryIdOf(other),
      operationType: 'observe',
      payload: {},
      runId: 'r',
      toolCallId: 'system',
    });
    await store.claimOperation({ memoryId: memoryIdOf(other), leaseOwner: 'killed-process', leaseMs: 1000 });
    advance(1001);
    await memory.drain(undefined, { timeoutMs: 5000 });
    expect(await store.countPendingOperations()).toBe(0);
  });
});

describe('operation recovery without a worker: SQLite, two stores on one file', () => {
  const files = useSqliteTestFiles('harness-memory-recovery-');
  const open = () => files.track(createSqliteStore({ path: files.path }));

  it('an observe through another store on the file takes over what a killed process left processing', async () => {
    const crashed = open();
    const stuck = await crashedObserve(crashed, 1);
    await crashed.dispose();
    await past(stuck.leaseExpiresAt as string);
    const store = open();
    const memory = memoryOn(store);
    const result = await memory.observe({ scope, runId: 'r2', messages: says('m2', 'And to shellfish.') });
    expect(result).toMatchObject({ status: 'applied', observed: true });
    expect((await store.listOperations(memoryId)).map((operation) => [operation.status, operation.attempt])).toEqual([
      ['applied', 2],
      ['applied', 1],
    ]);
    expect((await store.getRecord(memoryId))?.observedThroughMessageSeq).toBe(2);
  });

  it("runs the operation another process queued while this one's ran, when this one finishes", async () => {
    await twoWriters(open(), open());
  });
});

const url = postgresTestUrl();

describe.skipIf(!url)('operation recovery without a worker: Postgres, two stores on one schema', () => {
  const connectionString = url ?? '';
  let schemas: PostgresTestSchemas;
  let schema = '';
  const opened: Array<MemoryStore | pg.Pool> = [];
  beforeAll(() => {
    schemas = createPostgresTestSchemas(connectionString);
  });
  afterEach(async () => {
    for (const handle of opened.splice(0).reverse()) {
      if ('dispose' in handle) await handle.dispose();
      else await handle.end();
    }
  });
  afterAll(async () => {
    await schemas?.dropAll();
  });
  const open = async (): Promise<MemoryStore> => {
    schema ||= schemas.next();
    const store = await createPostgresStore({ connectionString, schema, max: 4 });
    opened.push(store);
    return store;
  };

  it('an observe through another store takes over what a killed process left processing', async () => {
    schema = schemas.next();
    const crashed = await open();
    const stuck = await crashedObserve(crashed, 1);
    await past(stuck.leaseExpiresAt as string);
    const memory = memoryOn(await open());
    const result = await memory.observe({ scope, runId: 'r2', messages: says('m2', 'And to shellfish.') });
    expect(result).toMatchObject({ status: 'applied', observed: true });
    expect((await crashed.listOperations(memoryId)).map((operation) => [operation.status, operation.attempt])).toEqual([
      ['applied', 2],
      ['applied', 1],
    ]);
    await memory.drain(scope, { timeoutMs: 5000 });
  });

  it("runs the operation another process queued while this one's ran, when this one finishes", async () => {
    schema = schemas.next();
    await twoWriters(await open(), await open());
  });

  it('an observe in a scope with nothing stuck costs the two statements it did', async () => {
    schema = schemas.next();
    const pool = new pg.Pool({ connectionString, max: 2 });
    opened.push(pool);
    const store = await createPostgresStore({ pool, schema });
    opened.push(store);
    const memory = memoryOn(store);
    // The first observe of a scope reads what it does not know yet; the next ones are the common path.
    await memory.observe({ scope, runId: 'r1', messages: says('m1', 'I prefer tabs.') });
    const statements = recordStatements(pool);
    expect(await memory.observe({ scope, runId: 'r2', messages: says('m2', 'I deploy on Fridays.') })).toMatchObject({
      status: 'applied',
    });
    expect(statements).toHaveLength(2);
  });
});

/**
 * Process A observes m1 and its observer is slow; process B observes m1 and m2 meanwhile and is
 * answered `queued` (A holds the scope). Once A's call is over, nothing is left queued and m2 is
 * observed, with no worker anywhere.
 */
async function twoWriters(storeA: MemoryStore, storeB: MemoryStore): Promise<void> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let started!: () => void;
  const called = new Promise<void>((resolve) => (started = resolve));
  // A's first call waits for the release; once released, every call answers at once.
  const observerA = scriptedObserver(async (input: ObserverInput) => {
    started();
    await released;
    return `IMPORTANCE:0.9\nSaw ${input.messages.map((message) => message.seq).join(',')}.`;
  });
  const a = memoryOn(storeA, { observer: observerA });
  const b = memoryOn(storeB);
  const first = a.observe({ scope, runId: 'run-a', messages: says('m1', 'I am allergic to peanuts.') });
  await called;
  const second = await b.observe({
    scope,
    runId: 'run-b',
    messages: [...says('m1', 'I am allergic to peanuts.'), ...says('m2', 'My deadline is Friday.')],
  });
  expect(second.status).toBe('queued');
  release();
  expect((await first).status).toBe('applied');
  expect((await storeA.listOperations(memoryId)).map((operation) => operation.status)).toEqual(['applied', 'applied']);
  expect(await storeB.countPendingOperations(memoryId)).toBe(0);
  expect((await storeB.getRecord(memoryId))?.observedThroughMessageSeq).toBe(2);
}
