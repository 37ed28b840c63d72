import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createPostgresTestSchemas,
  postgresTestUrl,
  recordCheckedOut,
  recordStatements,
} from '../../../test/support/postgres-schema.js';
import type { PostgresTestSchemas } from '../../../test/support/postgres-schema.js';
import { HarnessMemoryError } from '../../core/errors.js';
import type { MemoryRecord } from '../../core/observation.js';
import { memoryIdOf } from '../../core/scope.js';
import type { Scope } from '../../core/scope.js';
import type { MemoryStore, NewMessage } from '../store.js';
import { createPostgresStore } from './postgres-store.js';

const url = postgresTestUrl();
const scope: Scope = { tenantId: 'acme', conversationId: 'conv-1', agentId: 'agent-x' };
const memoryId = memoryIdOf(scope);
const isCode = (code: string) => (error: unknown) => HarnessMemoryError.isInstance(error) && error.code === code;
const message = (key: string): NewMessage => ({
  messageKey: key,
  role: 'user',
  name: '',
  toolCallId: '',
  content: `message ${key}`,
  tokenCount: 10,
});
// The service's rule: the record's settings over the defaults (observe from 1 token).
const settings = (record: MemoryRecord | undefined) => ({
  enabled: record?.enabled ?? true,
  minTokens: record?.config.observeMinTokens ?? 1,
});
let counter = 0;
const appendAndClaim = (store: MemoryStore, key: string, generation?: number) => {
  if (!store.appendMessagesAndClaim) throw new Error('the Postgres store has appendMessagesAndClaim');
  return store.appendMessagesAndClaim({
    scope,
    memoryId,
    messages: [message(key)],
    ...(generation === undefined ? {} : { generation }),
    settings,
    operation: { operationId: `op-${++counter}`, payload: {}, runId: 'run-1', toolCallId: 'system' },
    leaseOwner: 'worker-a',
    leaseMs: 60_000,
  });
};
const complete = (store: MemoryStore, operationId: string, throughMessageSeq: number, contents: string[]) =>
  store.completeObservation({
    operationId,
    memoryId,
    leaseOwner: 'worker-a',
    observations: contents.map((content) => ({ content, importance: 0.5, tokenCount: 4 })),
    throughMessageSeq,
    markerIds: { start: `start-${operationId}`, end: `end-${operationId}` },
  });

describe.skipIf(!url)('postgres observe path (two statements, checked premises)', () => {
  const connectionString = url ?? '';
  let schemas: PostgresTestSchemas;
  let schema: string;
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
  const replicas = async (count: number): Promise<MemoryStore[]> => {
    schema = schemas.next();
    const stores: MemoryStore[] = [];
    for (let index = 0; index < count; index++) {
      const store = await createPostgresStore({ connectionString, schema, max: 2 });
      opened.push(store);
      stores.push(store);
    }
    return stores;
  };

  /** A store on the test schema whose pool records the text of every statement sent through it. */
  const countedStore = async (): Promise<{ store: MemoryStore; statements: string[] }> => {
    const pool = new pg.Pool({ connectionString, max: 2 });
    opened.push(pool);
    const store = await createPostgresStore({ pool, schema });
    opened.push(store);
    return { store, statements: recordStatements(pool) };
  };

  it('stores, claims and applies an observe in two statements', async () => {
    schema = schemas.next();
    const { store, statements } = await countedStore();
    const claimed = await appendAndClaim(store, 'm1');
    expect(claimed.disabled).toBeUndefined();
    if (claimed.disabled) return;
    expect(claimed.claimed?.operationId).toBe(claimed.operation?.operationId);
    expect(claimed.prefetched?.messages.map((item) => item.messageKey)).toEqual(['m1']);
    const applied = await complete(store, claimed.claimed?.operationId ?? '', 1, ['The user wrote m1.']);
    expect(applied.observations.map((item) => [item.seq, item.content])).toEqual([[1, 'The user wrote m1.']]);
    expect(applied.record).toMatchObject({ observedThroughMessageSeq: 1, observationCount: 1, lastObservationSeq: 1 });
    expect(statements).toHaveLength(2);
    expect(await store.getRecord(memoryId)).toEqual(applied.record);
    expect((await store.listOperations(memoryId)).map((item) => item.status)).toEqual(['applied']);
    expect((await store.listMarkers(memoryId)).map((item) => item.markerType)).toEqual([
      'observation_start',
      'observation_end',
    ]);
  });

  it('acts on settings another replica changed since it last saw the record', async () => {
    const [a, b] = (await replicas(2)) as [MemoryStore, MemoryStore];
    const first = await appendAndClaim(a, 'm1');
    if (first.disabled || !first.claimed) throw new Error('expected a claim');
    await complete(a, first.claimed.operationId, 1, ['first']);
    const off = await b.updateSettings({
      scope,
      memoryId,
      enabled: false,
      runId: 'run-1',
      toolCallId: 't',
      operationId: 'op-off',
    });
    expect(await appendAndClaim(a, 'm2')).toEqual({ disabled: true, record: off });
    expect(await a.listUnobservedMessages(memoryId, 100)).toEqual([]);
    await b.updateSettings({
      scope,
      memoryId,
      enabled: true,
      config: { observeMinTokens: 1000 },
      runId: 'run-1',
      toolCallId: 't',
      operationId: 'op-on',
    });
    const below = await appendAndClaim(a, 'm3');
    expect(below.disabled).toBeUndefined();
    if (below.disabled) return;
    expect(below.operation).toBeUndefined();
    expect(below.unobservedTokens).toBe(10);
  });

  /**
   * Replica `a` observes the scope first; `b`, on a pool whose statements (and transactions)
   * are recorded, has never seen it. `before` runs before each of b's pool statements.
   */
  const afterAnotherReplica = async (before?: (text: string) => Promise<void>) => {
    const [a] = (await replicas(1)) as [MemoryStore];
    const pool = new pg.Pool({ connectionString, max: 2 });
    opened.push(pool);
    const b = await createPostgresStore({ pool, schema });
    opened.push(b);
    const statements = recordStatements(pool, before);
    const transactions = recordCheckedOut(pool);
    const first = await appendAndClaim(a, 'm1');
    if (first.disabled || !first.claimed) throw new Error('expected a claim');
    await complete(a, first.claimed.operationId, 1, ['first']);
    return { a, b, statements, transactions };
  };
  const appendCalls = (statements: readonly string[]) =>
    statements.filter((text) => text.includes('om_observe_append_and_claim')).length;

  it('takes a scope another replica made with one read and the function again, not the transaction', async () => {
    const { a, b, statements, transactions } = await afterAnotherReplica();
    // b assumes no record, misses, reads the record without the lock and calls again.
    const claimed = await appendAndClaim(b, 'm2');
    if (claimed.disabled || !claimed.claimed) throw new Error('expected a claim');
    expect(transactions).toEqual([]);
    expect(appendCalls(statements)).toBe(2);
    expect(claimed.record).toMatchObject({ lastMessageSeq: 2, observedThroughMessageSeq: 1 });
    expect(claimed.prefetched?.messages.map((item) => item.messageKey)).toEqual(['m2']);
    statements.length = 0;
    const applied = await complete(b, claimed.claimed.operationId, 2, ['second']);
    expect(statements).toHaveLength(1);
    expect(applied.observations.map((item) => [item.seq, item.content])).toEqual([[2, 'second']]);
    // Seen now: the next observe is one statement.
    statements.length = 0;
    const next = await appendAndClaim(b, 'm3');
    if (next.disabled || !next.claimed) throw new Error('expected a claim');
    expect(statements).toHaveLength(1);
    expect((await a.listUnobservedMessages(memoryId, 100)).map((item) => item.messageKey)).toEqual(['m3']);
  });

  it('takes the transaction when the settings change again between the read and the second call', async () => {
    let calls = 0;
    let turnOff: (() => Promise<unknown>) | undefined;
    const { a, b, statements, transactions } = await afterAnotherReplica(async (text) => {
      // Right before b's second call, a turns the scope off.
      if (text.includes('om_observe_append_and_claim') && ++calls === 2) await turnOff?.();
    });
    turnOff = () =>
      a.updateSettings({ scope, memoryId, enabled: false, runId: 'r', toolCallId: 't', operationId: 'op-off' });
    const answer = await appendAndClaim(b, 'm2');
    expect(calls).toBe(2);
    expect(answer).toMatchObject({ disabled: true, record: { enabled: false } });
    expect(appendCalls(statements)).toBe(2);
    expect(transactions[0]).toMatch(/^BEGIN/);
    expect(transactions.at(-1)).toBe('COMMIT');
    expect(await a.listUnobservedMessages(memoryId, 100)).toEqual([]);
  });

  it('applies in one statement an observe that waited behind another replica and was claimed later', async () => {
    const [a] = (await replicas(1)) as [MemoryStore];
    const { store: b, statements } = await countedStore();
    const first = await appendAndClaim(a, 'm1');
    if (first.disabled || !first.claimed) throw new Error('expected a claim');
    const waiting = await appendAndClaim(b, 'm2');
    if (waiting.disabled) throw new Error('expected the scope to observe');
    expect(waiting.claimed).toBeUndefined();
    await complete(a, first.claimed.operationId, 1, ['first']);
    const claimed = await b.claimOperation({ memoryId, leaseOwner: 'worker-a', leaseMs: 60_000 });
    expect(claimed?.operationId).toBe(waiting.operation?.operationId);
    // What the worker reads after a claim that prefetched nothing.
    expect(await b.getRecord(memoryId)).toMatchObject({ observedThroughMessageSeq: 1, lastObservationSeq: 1 });
    statements.length = 0;
    const applied = await complete(b, claimed?.operationId ?? '', 2, ['second']);
    expect(statements).toHaveLength(1);
    expect(applied.observations.map((item) => [item.seq, item.sourceStartSeq, item.sourceEndSeq])).toEqual([[2, 2, 2]]);
    expect(applied.record).toMatchObject({ observedThroughMessageSeq: 2, observationCount: 2, lastObservationSeq: 2 });
    expect((await a.listOperations(memoryId)).map((item) => item.status)).toEqual(['applied', 'applied']);
  });

  it('applies correctly when the record it last read is older than the scope', async () => {
    const [a, b] = (await replicas(2)) as [MemoryStore, MemoryStore];
    const first = await appendAndClaim(a, 'm1');
    if (first.disabled || !first.claimed) throw new Error('expected a claim');
    const waiting = await appendAndClaim(b, 'm2');
    await complete(a, first.claimed.operationId, 1, ['first']);
    const claimed = await b.claimOperation({ memoryId, leaseOwner: 'worker-a', leaseMs: 60_000 });
    expect(claimed?.operationId).toBe(waiting.disabled ? undefined : waiting.operation?.operationId);
    expect(await b.getRecord(memoryId)).toMatchObject({ lastObservationSeq: 1 });
    await a.importObservations?.({
      scope,
      memoryId,
      observations: [{ content: 'imported', importance: 0.4, tokenCount: 3 }],
      runId: 'run-1',
      toolCallId: 't',
      operationId: 'op-import',
    });
    const applied = await complete(b, claimed?.operationId ?? '', 2, ['observed after the import']);
    expect(applied.observations.map((item) => item.seq)).toEqual([3]);
    expect(applied.record).toMatchObject({ observationCount: 3, lastObservationSeq: 3, observedThroughMessageSeq: 2 });
  });

  it('applies correctly after another replica imported observations between the claim and the apply', async () => {
    const [a, b] = (await replicas(2)) as [MemoryStore, MemoryStore];
    const claimed = await appendAndClaim(a, 'm1');
    if (claimed.disabled || !claimed.claimed) throw new Error('expected a claim');
    await b.importObservations?.({
      scope,
      memoryId,
      observations: [
        { content: 'imported one', importance: 0.4, tokenCount: 3 },
        { content: 'imported two', importance: 0.4, tokenCount: 3 },
      ],
      runId: 'run-1',
      toolCallId: 't',
      operationId: 'op-import',
    });
    const applied = await complete(a, claimed.claimed.operationId, 1, ['observed after the import']);
    expect(applied.observations.map((item) => item.seq)).toEqual([3]);
    expect(applied.record).toMatchObject({ observationCount: 3, lastObservationSeq: 3, observedThroughMessageSeq: 1 });
    expect((await a.listObservations(memoryId)).map((item) => item.content)).toEqual([
      'imported one',
      'imported two',
      'observed after the import',
    ]);
  });

  it('refuses the apply and the append once another replica forgot the scope', async () => {
    const [a, b] = (await replicas(2)) as [MemoryStore, MemoryStore];
    const generation = await a.scopeGeneration?.(memoryId);
    const claimed = await appendAndClaim(a, 'm1', generation);
    if (claimed.disabled || !claimed.claimed) throw new Error('expected a claim');
    await b.forget(memoryId);
    await expect(complete(a, claimed.claimed.operationId, 1, ['too late'])).rejects.toSatisfy(
      isCode('OPERATION_LEASE_LOST'),
    );
    await expect(appendAndClaim(a, 'm2', generation)).rejects.toSatisfy(isCode('SCOPE_FORGOTTEN'));
    expect(await b.getRecord(memoryId)).toBeUndefined();
    expect(await b.listObservations(memoryId)).toEqual([]);
  });

  it('skips message keys already stored and repeated within a batch, as the transaction path does', async () => {
    const [a] = (await replicas(1)) as [MemoryStore];
    const result = await a.appendMessagesAndClaim?.({
      scope,
      memoryId,
      messages: [message('m1'), message('m2'), message('m1')],
      settings: () => ({ enabled: true, minTokens: 1000 }),
      operation: { operationId: 'op-x', payload: {}, runId: 'run-1', toolCallId: 'system' },
      leaseOwner: 'worker-a',
      leaseMs: 60_000,
    });
    expect(result).toMatchObject({ inserted: 2, unobservedTokens: 20 });
    const again = await appendAndClaim(a, 'm2');
    expect(again).toMatchObject({ inserted: 0 });
    expect((await a.listUnobservedMessages(memoryId, 100)).map((item) => [item.seq, item.messageKey])).toEqual([
      [1, 'm1'],
      [2, 'm2'],
    ]);
  });
});
