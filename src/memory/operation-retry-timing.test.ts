/**
 * When a failed operation is tried again. A model call stopped at 80% of the lease timed out: it
 * is retried with backoff, and the model's circuit counts it (a hanging provider opens it). A
 * `Retry-After` longer than the lease is honoured: the operation waits in the queue that long,
 * up to 24 h, instead of being tried again after a lease.
 */
import { describe, expect, it } from 'vitest';
import { useScriptedOpenAIServer } from '../../test/support/use-scripted-openai-server.js';
import { scriptedObserver } from '../../test/support/scripted-models.js';
import { ModelCallError } from '../core/errors.js';
import { memoryIdOf } from '../core/scope.js';
import { withCircuitBreaker, type CircuitState } from '../llm/circuit-breaker.js';
import { createOpenAICompatibleModel } from '../llm/openai-compatible.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import type { Observer } from './model-observer.js';
import { createObservationalMemory } from './observational-memory.js';
import type { ObservationalMemoryEvent, ObservationalMemoryOptions } from './observational-memory.js';

const scope = { tenantId: 'tenant-a', conversationId: 'conv-timing', agentId: 'agent-x' };
const memoryId = memoryIdOf(scope);
const HOUR = 3_600_000;

const server = useScriptedOpenAIServer({ text: 'IMPORTANCE:0.9\nUser is allergic to peanuts.' });

function setup(options: Partial<ObservationalMemoryOptions>) {
  let clock = Date.parse('2026-03-01T00:00:00.000Z');
  const now = () => new Date(clock);
  const store = createInMemoryStore({ now });
  const events: ObservationalMemoryEvent[] = [];
  const memory = createObservationalMemory({
    store,
    defaultEnabled: true,
    defaults: { observeMinTokens: 1 },
    leaseMs: 1000,
    retryDelayMs: 10,
    maxOperationAttempts: 5,
    now,
    onEvent: (event) => events.push(event),
    ...options,
  });
  const first = async () => (await store.listOperations(memoryId))[0];
  return { store, memory, events, first, now, advance: (ms: number) => void (clock += ms) };
}

const observe = (memory: ReturnType<typeof setup>['memory'], id: string) =>
  memory.observe({ scope, runId: 'r', messages: [{ id, role: 'user', content: `I am allergic to peanuts (${id}).` }] });

describe("a model call stopped at 80% of the operation's lease", () => {
  it('is a timeout: retried with backoff, counted by the circuit, and says the call outlasted the lease', async () => {
    // The provider hangs for ten minutes; the model's own timeout (90 s) is far longer than the lease.
    server.setDefaultReply({ delayMs: 600_000, reply: { text: 'IMPORTANCE:0.9\nlate' } });
    const states: CircuitState[] = [];
    // Counted as sent: a request aborted at once may never be read whole by the server on a busy machine.
    let sent = 0;
    const fetch: typeof globalThis.fetch = (input, init) => {
      sent += 1;
      return globalThis.fetch(input, init);
    };
    const model = withCircuitBreaker(createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm', fetch }), {
      failureThreshold: 2,
      onStateChange: (state) => states.push(state),
    });
    const { memory, events, first, advance } = setup({ model, leaseMs: 200 });

    const error = await observe(memory, 'm1').catch((thrown: unknown) => thrown);
    expect(ModelCallError.isInstance(error)).toBe(true);
    expect((error as ModelCallError).isRetryable).toBe(true);
    expect((error as Error).message).toMatch(/outlasted the operation's lease.*stopped after 160 ms/);
    expect((error as Error).message).toMatch(/stale_operation_seconds.*model's timeout/);
    expect((error as Error).message).not.toMatch(/aborted by the caller/);
    expect(await first()).toMatchObject({ status: 'queued', attempt: 1, errorText: expect.stringMatching(/lease/) });
    expect(events).toContainEqual(expect.objectContaining({ type: 'memory.operation.failed', willRetry: true }));

    // The next observe runs the retry, which hangs too: the second timeout opens the circuit.
    advance(60_000);
    await observe(memory, 'm2').catch(() => undefined);
    expect(states).toEqual(['open']);
    expect(model.state).toBe('open');
    expect(sent).toBe(2);
    expect(await first()).toMatchObject({ status: 'queued', attempt: 2 });
  });

  it('is a timeout whatever a custom observer throws when its signal fires', async () => {
    // Rejects with a plain error once its signal fires.
    const observer: Observer = {
      observe: ({ abortSignal }) =>
        new Promise((_, reject) => abortSignal?.addEventListener('abort', () => reject(new Error('gave up')))),
    };
    const { memory, first } = setup({ observer, leaseMs: 50 });
    const error = await observe(memory, 'm1').catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({
      isRetryable: true,
      message: expect.stringMatching(/outlasted the operation's lease/),
    });
    expect(await first()).toMatchObject({ status: 'queued', attempt: 1 });
  });
});

describe('Retry-After longer than the lease', () => {
  const rateLimited = (retryAfterMs: number) =>
    new ModelCallError({ message: 'HTTP 429: slow down.', statusCode: 429, retryAfterMs, retryable: true });

  it('keeps the operation queued until the time the server asked for, then runs it', async () => {
    const observer = scriptedObserver(rateLimited(HOUR), 'IMPORTANCE:0.9\nUser is allergic to peanuts.');
    const { memory, first, now, advance } = setup({ observer });
    const asked = now().getTime() + HOUR;
    await expect(observe(memory, 'm1')).rejects.toMatchObject({ statusCode: 429 });
    expect(await first()).toMatchObject({ status: 'queued', attempt: 1 });
    expect(Date.parse((await first())!.availableAt)).toBe(asked);
    // Leases come and go: it is not tried before the hour is over.
    advance(HOUR - 1000);
    await expect(memory.drain(scope, { timeoutMs: 60 })).rejects.toMatchObject({ code: 'DRAIN_TIMEOUT' });
    expect(observer.calls).toHaveLength(1);
    advance(1000);
    await memory.drain(scope, { timeoutMs: 5000 });
    expect(observer.calls).toHaveLength(2);
    expect(await first()).toMatchObject({ status: 'applied', attempt: 2 });
  });

  it('waits 24 h at most, and says so', async () => {
    const observer = scriptedObserver(rateLimited(10 * 24 * HOUR));
    const { memory, first, now } = setup({ observer });
    const cap = now().getTime() + 24 * HOUR;
    await expect(observe(memory, 'm1')).rejects.toMatchObject({ statusCode: 429 });
    const operation = await first();
    expect(Date.parse(operation!.availableAt)).toBe(cap);
    expect(operation!.errorText).toMatch(/server asked to wait 864000 s; the operation waits 24 h at most/);
  });

  it("honours an HTTP 429's Retry-After header from an OpenAI-compatible server", async () => {
    server.enqueue({ status: 429, headers: { 'retry-after': '3600' }, body: { error: { message: 'Rate limit' } } });
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' });
    const { memory, first, now, advance } = setup({ model });
    const asked = now().getTime() + HOUR;
    await expect(observe(memory, 'm1')).rejects.toMatchObject({ statusCode: 429 });
    expect(Date.parse((await first())!.availableAt)).toBe(asked);
    advance(HOUR);
    await memory.drain(scope, { timeoutMs: 5000 });
    expect(server.requests).toHaveLength(2);
    expect(await first()).toMatchObject({ status: 'applied' });
  });
});
