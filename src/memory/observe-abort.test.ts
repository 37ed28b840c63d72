/**
 * `observe({ signal })` through the real HTTP client: an abort stops the model call at once
 * (the connection to the model server is closed), the call rejects `CANCELLED`, the messages
 * stay stored and the operation goes back to the queue, untouched, for the next observe.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startScriptedOpenAIServer } from '../../test/support/scripted-openai-server.js';
import type { ScriptedReply, ScriptedServer } from '../../test/support/scripted-openai-server.js';
import { useSqliteTestFiles } from '../../test/support/sqlite-test-files.js';
import { createPostgresTestSchemas, postgresTestUrl } from '../../test/support/postgres-schema.js';
import { HarnessMemoryError } from '../core/errors.js';
import { memoryIdOf } from '../core/scope.js';
import { withCircuitBreaker } from '../llm/circuit-breaker.js';
import type { CircuitBreakerModel } from '../llm/circuit-breaker.js';
import { createOpenAICompatibleModel } from '../llm/openai-compatible.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import { createPostgresStore } from '../storage/postgres/postgres-store.js';
import type { MemoryStore } from '../storage/store.js';
import { createObservationalMemory } from './observational-memory.js';
import type { ObservationalMemory, ObservationalMemoryEvent } from './observational-memory.js';

const scope = { tenantId: 't', conversationId: 'c', agentId: 'a' };
const memoryId = memoryIdOf(scope);
const GOOD = { text: 'IMPORTANCE:0.9\nUser prefers tabs' };
const REFLECTION = { text: 'SUMMARY:\n- The user prefers tabs.\nSUPERSESSIONS:\n- none\nCONTRADICTIONS:\n- none' };
/** An answer that would come after ten minutes: only an abort ends the call sooner. */
const NEVER = { delayMs: 600_000, reply: GOOD };

/**
 * A TCP proxy in front of the scripted server, counting the connections to it that were
 * closed: what the server sees when the client aborts a request (its socket destroyed).
 */
async function startProxy(
  target: ScriptedServer,
): Promise<{ url: string; closed: () => number; close(): Promise<void> }> {
  const port = Number(new URL(target.origin).port);
  const sockets = new Set<Socket>();
  let closed = 0;
  const server: Server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => {
      closed++;
      client.destroy();
    });
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${own}/v1`,
    closed: () => closed,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

const files = useSqliteTestFiles('hm-observe-abort-');
let server: ScriptedServer;
let proxy: Awaited<ReturnType<typeof startProxy>>;
let model: CircuitBreakerModel;

beforeEach(async () => {
  server = await startScriptedOpenAIServer();
  proxy = await startProxy(server);
  // One failure would open the circuit: an abort must not count as one.
  model = withCircuitBreaker(
    createOpenAICompatibleModel({ baseURL: proxy.url, modelId: 'memory-model', apiKey: 'test', timeout: 120_000 }),
    { failureThreshold: 1, resetMs: 600_000 },
  );
});

afterEach(async () => {
  await proxy.close();
  await server.close();
});

function memoryOver(store: MemoryStore, reflectThresholdTokens = 1_000_000) {
  const events: ObservationalMemoryEvent[] = [];
  const memory = createObservationalMemory({
    store,
    model,
    defaultEnabled: true,
    defaults: { observeMinTokens: 1, reflectThresholdTokens },
    retryDelayMs: 20,
    onEvent: (event) => events.push(event),
  });
  return { memory, events };
}

let nextId = 0;
function observe(memory: ObservationalMemory, signal?: AbortSignal, content = 'I prefer tabs over spaces, always.') {
  nextId++;
  return memory.observe({
    scope,
    runId: 'run-1',
    messages: [{ id: `m${nextId}`, role: 'user', content }],
    ...(signal ? { signal } : {}),
  });
}

/** The rejection of `work`, and how long it took once `abort` was called. */
async function rejectionAfter(work: Promise<unknown>, abort: () => void): Promise<{ error: unknown; ms: number }> {
  const settled = work.then(
    () => ({ error: undefined }),
    (error: unknown) => ({ error }),
  );
  const start = performance.now();
  abort();
  const { error } = await settled;
  return { error, ms: performance.now() - start };
}

const requestsReach = (count: number) =>
  vi.waitFor(() => expect(server.requests).toHaveLength(count), { timeout: 10_000, interval: 5 });
const unobserved = async (store: MemoryStore) => (await store.listUnobservedMessages(memoryId, 1_000_000)).length;
const contents = async (store: MemoryStore) => (await store.listObservations(memoryId)).map((item) => item.content);

const url = postgresTestUrl();
const schemas = url ? createPostgresTestSchemas(url) : undefined;
afterAll(async () => {
  await schemas?.dropAll();
});

// Postgres claims the observe in the transaction storing its messages (`appendMessagesAndClaim`).
const stores: Array<[string, () => Promise<MemoryStore>, boolean]> = [
  ['in-memory', async () => createInMemoryStore(), true],
  ['sqlite', async () => files.track(createSqliteStore({ path: files.path })), true],
  [
    'postgres',
    async () => files.track(await createPostgresStore({ connectionString: url ?? '', schema: schemas?.next() ?? '' })),
    url !== undefined,
  ],
];

describe.each(stores)('observe abort (%s store)', (_name, createStore, available) => {
  it.skipIf(!available)(
    'aborts the observer call at once, keeps the messages, and leaves the operation queued for the next observe',
    async () => {
      const store = await createStore();
      const { memory, events } = memoryOver(store);
      server.enqueue(NEVER);
      const controller = new AbortController();
      const reason = new Error('the user pressed stop');
      const observing = observe(memory, controller.signal);
      await requestsReach(1);

      const { error, ms } = await rejectionAfter(observing, () => controller.abort(reason));
      expect(error).toMatchObject({ code: 'CANCELLED', cause: reason });
      expect(HarnessMemoryError.isInstance(error)).toBe(true);
      // Generous: the model call would have taken ten minutes (its own timeout is two).
      expect(ms).toBeLessThan(5_000);
      // The model server saw the request's connection closed.
      await vi.waitFor(() => expect(proxy.closed()).toBeGreaterThanOrEqual(1), { timeout: 10_000, interval: 5 });

      expect(await unobserved(store)).toBe(1);
      const [operation] = await store.listOperations(memoryId);
      expect(operation).toMatchObject({ status: 'queued', attempt: 0, errorText: '', leaseOwner: null });
      expect((error as HarnessMemoryError).data).toEqual({ operationId: operation?.operationId });
      // Not a model failure: no failure event, and the circuit (open after one failure) is closed.
      expect(events.map((event) => event.type)).toEqual(['memory.observe.started', 'memory.observe.completed']);
      expect(events[1]).toMatchObject({ status: 'queued', observed: false });
      expect(model.state).toBe('closed');

      // The lease was given back: the next observe (no signal) runs the operation at once.
      server.enqueue(GOOD);
      const next = await observe(memory, undefined, 'And four-space tabs.');
      expect(next).toMatchObject({ status: 'applied', observed: true });
      expect(await contents(store)).toEqual(['User prefers tabs']);
      expect(await unobserved(store)).toBe(0);
      expect((await store.listOperations(memoryId))[0]).toMatchObject({ status: 'applied', attempt: 1 });
      expect(JSON.stringify(server.requests.at(-1)?.body)).toContain('I prefer tabs over spaces');
    },
  );

  it.skipIf(!available)('rejects at once for a signal aborted already, storing nothing', async () => {
    const store = await createStore();
    const { memory, events } = memoryOver(store);
    const reason = new Error('gone');
    const error = await observe(memory, AbortSignal.abort(reason)).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'CANCELLED', cause: reason, data: {} });
    expect(await store.getRecord(memoryId)).toBeUndefined();
    expect(await store.listOperations(memoryId)).toEqual([]);
    expect(server.requests).toEqual([]);
    expect(events).toEqual([]);
  });

  it.skipIf(!available)(
    'aborts the reflection after the observation, which stays applied; the reflection stays queued',
    async () => {
      const store = await createStore();
      const { memory, events } = memoryOver(store, 1);
      server.enqueue(GOOD, NEVER);
      const controller = new AbortController();
      const observing = observe(memory, controller.signal);
      await requestsReach(2);
      const { error, ms } = await rejectionAfter(observing, () => controller.abort());
      expect(error).toMatchObject({ code: 'CANCELLED' });
      expect(ms).toBeLessThan(5_000);
      await vi.waitFor(() => expect(proxy.closed()).toBeGreaterThanOrEqual(1), { timeout: 10_000, interval: 5 });

      expect(await contents(store)).toEqual(['User prefers tabs']);
      expect((await store.getRecord(memoryId))?.reflection).toBeNull();
      const operations = await store.listOperations(memoryId);
      expect(operations.map((operation) => [operation.operationType, operation.status, operation.attempt])).toEqual([
        ['observe', 'applied', 1],
        ['reflect', 'queued', 0],
      ]);
      expect(events.map((event) => event.type)).toEqual(['memory.observe.started', 'memory.observe.completed']);
      expect(events[1]).toMatchObject({ status: 'applied', observed: true, reflected: false });
      expect(model.state).toBe('closed');

      server.enqueue(REFLECTION);
      await memory.drain(scope, { timeoutMs: 30_000 });
      expect((await store.getRecord(memoryId))?.reflection?.raw).toContain('The user prefers tabs.');
    },
  );
});

describe.each(stores)('reflectNow abort (%s store)', (_name, createStore, available) => {
  it.skipIf(!available)(
    'aborts the reflector call at once; the reflection stays queued, untouched, and runs at the next drain',
    async () => {
      const store = await createStore();
      const { memory, events } = memoryOver(store);
      server.enqueue(GOOD);
      await observe(memory);
      server.enqueue(NEVER);
      const controller = new AbortController();
      const reason = new Error('the user closed the inspector');
      const reflecting = memory.reflectNow(scope, { signal: controller.signal });
      await requestsReach(2);

      const { error, ms } = await rejectionAfter(reflecting, () => controller.abort(reason));
      expect(error).toMatchObject({ code: 'CANCELLED', cause: reason });
      expect((error as Error).message).toContain('the reflect_now call was cancelled by its signal');
      expect(ms).toBeLessThan(5_000);
      await vi.waitFor(() => expect(proxy.closed()).toBeGreaterThanOrEqual(1), { timeout: 10_000, interval: 5 });

      const reflectOperation = (await store.listOperations(memoryId)).at(-1);
      expect(reflectOperation).toMatchObject({ operationType: 'reflect_now', status: 'queued', attempt: 0 });
      expect((error as HarnessMemoryError).data).toEqual({ operationId: reflectOperation?.operationId });
      expect((await store.getRecord(memoryId))?.reflection).toBeNull();
      expect(events.map((event) => event.type)).not.toContain('memory.reflection.completed');
      expect(model.state).toBe('closed');

      // The released reflection runs as it was, at the scope's next drain.
      server.enqueue(REFLECTION);
      await memory.drain(scope, { timeoutMs: 30_000 });
      expect((await store.getRecord(memoryId))?.reflection?.raw).toContain('The user prefers tabs.');
      const operations = await store.listOperations(memoryId);
      expect(operations.filter((operation) => operation.status !== 'applied')).toEqual([]);
    },
  );

  it.skipIf(!available)('rejects at once for a signal aborted already, storing nothing', async () => {
    const store = await createStore();
    const { memory } = memoryOver(store);
    server.enqueue(GOOD);
    await observe(memory);
    const before = await store.listOperations(memoryId);
    const reason = new Error('gone');
    const error = await memory
      .reflectNow(scope, { signal: AbortSignal.abort(reason) })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'CANCELLED', cause: reason, data: {} });
    expect(await store.listOperations(memoryId)).toEqual(before);
    expect(server.requests).toHaveLength(1);
  });
});

describe('observe abort: other callers of the scope', () => {
  it('lets a caller waiting behind the aborted call go on, observing both calls’ messages', async () => {
    const store = createInMemoryStore();
    const { memory } = memoryOver(store);
    server.enqueue(NEVER, GOOD);
    const controller = new AbortController();
    const first = observe(memory, controller.signal, 'I prefer tabs over spaces, always.');
    await requestsReach(1);
    const second = observe(memory, undefined, 'And four-space tabs.');
    // The second caller stored its message and waits for the scope's lock.
    await vi.waitFor(async () => expect(await unobserved(store)).toBe(2), { timeout: 10_000, interval: 5 });
    const { error } = await rejectionAfter(first, () => controller.abort());
    expect(error).toMatchObject({ code: 'CANCELLED' });
    await expect(second).resolves.toMatchObject({ status: 'applied', observed: true });
    expect(await contents(store)).toEqual(['User prefers tabs']);
    expect(await unobserved(store)).toBe(0);
    const prompt = JSON.stringify(server.requests[1]?.body);
    expect(prompt).toContain('I prefer tabs over spaces');
    expect(prompt).toContain('four-space tabs');
  });

  it('stops waiting for the scope at once when aborted behind another caller, who is unaffected', async () => {
    const store = createInMemoryStore();
    const { memory } = memoryOver(store);
    let answer: (reply: ScriptedReply) => void = () => {};
    server.enqueue(() => new Promise<ScriptedReply>((resolve) => (answer = resolve)));
    const first = observe(memory, undefined, 'I prefer tabs over spaces, always.');
    await requestsReach(1);
    const controller = new AbortController();
    const second = observe(memory, controller.signal, 'And four-space tabs.');
    await vi.waitFor(async () => expect(await unobserved(store)).toBe(2), { timeout: 10_000, interval: 5 });
    const { error, ms } = await rejectionAfter(second, () => controller.abort());
    expect(error).toMatchObject({ code: 'CANCELLED' });
    expect(ms).toBeLessThan(5_000);
    // Its operation was never claimed: queued, untouched.
    expect((await store.listOperations(memoryId))[1]).toMatchObject({ status: 'queued', attempt: 0 });

    // The caller left holding the scope runs what was left queued behind it, this operation too.
    server.enqueue({ text: 'IMPORTANCE:0.5\nUser uses four-space tabs' });
    answer(GOOD);
    await expect(first).resolves.toMatchObject({ status: 'applied', observed: true });
    expect(await contents(store)).toEqual(['User prefers tabs', 'User uses four-space tabs']);
    expect(await unobserved(store)).toBe(0);
    expect((await store.listOperations(memoryId))[1]).toMatchObject({ status: 'applied', attempt: 1 });
  });
});
