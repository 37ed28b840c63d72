/**
 * `startWorker().stop({ timeoutMs })`: the operation in hand is waited for that long, then its
 * model call is aborted and it goes back to the queue (attempt not counted), so the next worker
 * or observe runs it at once; `stop()` still waits for it; a store that does not answer holds
 * `stop` 2 s at most, and the operation it could not give back is reported as left for its lease.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HarnessMemoryError } from '../core/errors.js';
import type { Fault } from '../core/fault.js';
import type { ParsedObservation } from '../core/observation.js';
import { memoryIdOf } from '../core/scope.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import type { MemoryStore } from '../storage/store.js';
import type { Observer, ObserverInput } from './model-observer.js';
import { createObservationalMemory } from './observational-memory.js';
import type { ObservationalMemoryEvent } from './observational-memory.js';
import { WORKER_RELEASE_GRACE_MS } from './worker-loop.js';

const scope = { tenantId: 't', conversationId: 'c-worker-stop', agentId: 'a' };
const memoryId = memoryIdOf(scope);
const TABS: ParsedObservation[] = [{ content: 'User prefers tabs', importance: 0.9 }];

afterEach(() => {
  vi.useRealTimers();
});

/**
 * An observer that fails its first call (so the operation is left queued for the worker), then
 * holds each call until it is aborted or answered by hand.
 */
function heldObserver() {
  const calls: ObserverInput[] = [];
  const answers: Array<(observations: ParsedObservation[]) => void> = [];
  const observer: Observer = {
    observe(input) {
      calls.push(input);
      if (calls.length === 1) return Promise.reject(new Error('the model is down'));
      return new Promise((resolve, reject) => {
        answers.push(resolve);
        input.abortSignal?.addEventListener('abort', () => reject(input.abortSignal?.reason), { once: true });
      });
    },
  };
  return { observer, calls, answer: (observations = TABS) => answers.at(-1)?.(observations) };
}

/** A memory whose first observe leaves its operation queued, and a worker holding its retry's model call. */
async function workerHolding(store: MemoryStore = createInMemoryStore()) {
  const held = heldObserver();
  const events: ObservationalMemoryEvent[] = [];
  const faults: Fault[] = [];
  const memory = createObservationalMemory({
    store,
    observer: held.observer,
    defaultEnabled: true,
    defaults: { observeMinTokens: 1 },
    retryDelayMs: 0,
    onEvent: (event) => events.push(event),
    onFault: (fault) => faults.push(fault),
  });
  await expect(
    memory.observe({ scope, runId: 'r1', messages: [{ id: 'm1', role: 'user', content: 'I prefer tabs.' }] }),
  ).rejects.toThrow('the model is down');
  const worker = memory.startWorker({ pollMs: 5 });
  await vi.waitFor(() => expect(held.calls).toHaveLength(2), { timeout: 5_000, interval: 2 });
  return { memory, worker, held, events, faults };
}

const operationOf = async (store: MemoryStore) => (await store.listOperations(memoryId))[0];

describe('startWorker().stop', () => {
  it(
    'with timeoutMs, aborts the model call in hand and puts its operation back in the queue, uncounted',
    { timeout: 10_000 },
    async () => {
      const store = createInMemoryStore();
      const { memory, worker, held, events, faults } = await workerHolding(store);
      expect(await operationOf(store)).toMatchObject({ status: 'processing', attempt: 2 });

      await worker.stop({ timeoutMs: 20 });
      expect(held.calls[1]?.abortSignal?.aborted).toBe(true);
      // The failed first attempt counts; the worker's does not. Its error text is the failure's.
      expect(await operationOf(store)).toMatchObject({
        status: 'queued',
        attempt: 1,
        leaseOwner: null,
        errorText: expect.stringContaining('the model is down'),
      });
      expect(events.map((event) => event.type)).not.toContain('memory.worker.failed');
      expect(events.filter((event) => event.type === 'memory.operation.failed')).toHaveLength(1);
      expect(faults).toEqual([]);

      // Available at once: the scope's next drain runs it, no lease to wait out.
      const drained = memory.drain(scope, { timeoutMs: 5_000 });
      await vi.waitFor(() => expect(held.calls).toHaveLength(3), { timeout: 5_000, interval: 2 });
      held.answer();
      await drained;
      expect(await operationOf(store)).toMatchObject({ status: 'applied', attempt: 2 });
    },
  );

  it('without options, waits for the operation in hand', async () => {
    const store = createInMemoryStore();
    const { worker, held, faults } = await workerHolding(store);
    let stopped = false;
    const stopping = worker.stop().then(() => (stopped = true));
    // Turns of the event loop: the worker holds the call, so stop does not resolve.
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(stopped).toBe(false);
    expect(held.calls[1]?.abortSignal?.aborted).toBe(false);
    held.answer();
    await stopping;
    expect(await operationOf(store)).toMatchObject({ status: 'applied' });
    expect(faults).toEqual([]);
  });

  it('waits 2 s at most for a store that does not answer, then reports the operation left for its lease', async () => {
    const inner = createInMemoryStore();
    let answerRelease: ((error: Error) => void) | undefined;
    // The release (a failOperation not counting the attempt) hangs until the test fails it.
    const store = new Proxy(inner, {
      get(target, key, receiver) {
        if (key !== 'failOperation') return Reflect.get(target, key, receiver);
        return (input: Parameters<MemoryStore['failOperation']>[0]) =>
          input.notAttempted
            ? new Promise((_resolve, reject) => (answerRelease = reject))
            : target.failOperation(input);
      },
    });
    const { worker, events, faults } = await workerHolding(store);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let stopped = false;
    const stopping = worker.stop({ timeoutMs: 20 }).then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(20);
    expect(answerRelease).toBeDefined();
    await vi.advanceTimersByTimeAsync(WORKER_RELEASE_GRACE_MS - 1);
    expect(stopped).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await stopping;
    expect(WORKER_RELEASE_GRACE_MS).toBe(2_000);

    // The store fails the release later (closed under it, say): not "retries at its next poll".
    const operation = await operationOf(inner);
    answerRelease?.(new HarnessMemoryError({ code: 'STORE_FAILED', component: 'store', message: 'closed' }));
    await vi.waitFor(() => expect(faults).toHaveLength(1), { timeout: 5_000, interval: 2 });
    expect(faults[0]).toMatchObject({ component: 'memory-worker', operationId: operation?.operationId });
    expect(faults[0]?.message).toContain('stays processing until its lease runs out (300 s)');
    expect(events.map((event) => event.type)).not.toContain('memory.worker.failed');
    expect(operation).toMatchObject({ status: 'processing' });
  });
});
