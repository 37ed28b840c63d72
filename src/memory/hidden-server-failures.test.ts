/**
 * `hideServerFailures`: what the observational memory service lets a tenant read of a store's
 * failure (the operation log, the `memory.*` events, an observe's reflection error) names the
 * failure by its code; the detail goes to `onFault`, and the error `observe` throws keeps it.
 */
import { describe, expect, it } from 'vitest';
import { withInjectedFaults } from '../../test/support/failing-stores.js';
import { messages, scriptedObserver, scriptedReflector } from '../../test/support/scripted-models.js';
import type { Fault } from '../core/fault.js';
import { memoryIdOf } from '../core/scope.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import type { MemoryStore } from '../storage/store.js';
import { createObservationalMemory } from './observational-memory.js';
import type { ObservationalMemoryEvent } from './observational-memory.js';

const scope = { tenantId: 'acme', conversationId: 'conv-1', agentId: 'agent-x' };
const GENERIC = 'internal error (STORE_FAILED); see the server log';
// What the injected store failure says: the detail a tenant must not read.
const DETAIL = 'injected fault in';

function setup(hideServerFailures: boolean | undefined, failing: string) {
  const wrapped = withInjectedFaults<MemoryStore>(createInMemoryStore(), 'sqlite');
  wrapped.faults.inject({ method: failing });
  const events: ObservationalMemoryEvent[] = [];
  const faults: Fault[] = [];
  const memory = createObservationalMemory({
    store: wrapped.store,
    observer: scriptedObserver('IMPORTANCE:0.9\nUser prefers tabs over spaces'),
    reflector: scriptedReflector('SUMMARY:\nThe user prefers tabs.\n\nSUPERSESSIONS:\n\nCONTRADICTIONS:\n'),
    defaultEnabled: true,
    defaults: { observeMinTokens: 1, reflectThresholdTokens: 1 },
    maxOperationAttempts: 1,
    onEvent: (event) => events.push(event),
    onFault: (fault) => faults.push(fault),
    ...(hideServerFailures === undefined ? {} : { hideServerFailures }),
  });
  return { memory, store: wrapped.store, events, faults };
}

const errorsOf = (events: readonly ObservationalMemoryEvent[]) =>
  events.flatMap((event) => ('error' in event ? [[event.type, event.error]] : []));

describe('observational memory: hideServerFailures', () => {
  it('names a failed observe apply by its code in the events and the operation log; the fault and the thrown error keep the detail', async () => {
    const { memory, store, events, faults } = setup(true, 'completeObservation');
    const thrown = await memory.observe({ scope, runId: 'run-1', messages: messages(0, 2) }).catch((e: unknown) => e);
    expect(thrown).toMatchObject({ code: 'STORE_FAILED' });
    expect((thrown as Error).message).toContain(DETAIL);
    expect(errorsOf(events)).toEqual([
      ['memory.operation.failed', GENERIC],
      ['memory.observe.failed', GENERIC],
    ]);
    const [operation] = await store.listOperations(memoryIdOf(scope));
    expect(operation).toMatchObject({ status: 'failed', errorText: GENERIC });
    expect(faults).toHaveLength(1);
    expect(faults[0]).toMatchObject({
      component: 'memory-worker',
      runId: 'run-1',
      operationId: operation?.operationId,
    });
    expect(String((faults[0]?.error as Error | undefined)?.message)).toContain(DETAIL);
  });

  it("names a failed reflection by its code in the observe's result and events", async () => {
    const { memory, events, faults } = setup(true, 'completeReflection');
    const result = await memory.observe({ scope, runId: 'run-1', messages: messages(0, 2) });
    expect(result).toMatchObject({ status: 'applied', observed: true, reflectionError: GENERIC });
    expect(errorsOf(events)).toEqual([
      ['memory.operation.failed', GENERIC],
      ['memory.observe.failed', GENERIC],
    ]);
    expect(faults.map((fault) => fault.message)).toEqual([expect.stringMatching(/^reflect operation \S+ failed$/)]);
  });

  it.each([
    ['off by default', undefined],
    ['off', false],
  ])('%s: the failure is shown as it is, and nothing is reported as a fault', async (_name, hide) => {
    const { memory, store, events, faults } = setup(hide, 'completeObservation');
    await expect(memory.observe({ scope, runId: 'run-1', messages: messages(0, 2) })).rejects.toMatchObject({
      code: 'STORE_FAILED',
    });
    for (const [, error] of errorsOf(events)) expect(error).toContain(DETAIL);
    const [operation] = await store.listOperations(memoryIdOf(scope));
    expect(operation?.errorText).toContain(DETAIL);
    expect(faults).toEqual([]);
  });
});
