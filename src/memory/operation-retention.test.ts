/**
 * Operation retention through the service (`deleteSettledOperations`): settled operations past
 * the age go, and the scope remembers, observes, reflects, imports, exports and lists its dead
 * operations as before.
 */
import { describe, expect, it } from 'vitest';
import { storeDeadOperation } from '../../test/support/dead-operation.js';
import { messages, scriptedObserver, scriptedReflector } from '../../test/support/scripted-models.js';
import { memoryIdOf } from '../core/scope.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import type { MemoryStore } from '../storage/store.js';
import { createObservationalMemory } from './observational-memory.js';

const scope = { tenantId: 'tenant-a', conversationId: 'conv-retention', agentId: 'agent-x' };
const other = { tenantId: 'tenant-b', conversationId: 'conv-retention', agentId: 'agent-x' };
const DAY_MS = 86_400_000;

function setup(store?: MemoryStore) {
  let clock = Date.parse('2026-01-01T00:00:00.000Z');
  const now = () => new Date(clock);
  const memoryStore = store ?? createInMemoryStore({ now });
  const observer = scriptedObserver(
    (input) => `IMPORTANCE:0.5\nobserved ${input.messages.map((message) => message.seq).join(',')}`,
  );
  const reflector = scriptedReflector('SUMMARY:\nThe user observes things.\n\nSUPERSESSIONS:\n\nCONTRADICTIONS:\n');
  const memory = createObservationalMemory({
    store: memoryStore,
    observer,
    reflector,
    defaultEnabled: true,
    defaults: { observeMinTokens: 1, reflectThresholdTokens: 100_000 },
    now,
  });
  return { store: memoryStore, memory, observer, advance: (ms: number) => void (clock += ms) };
}

describe('observational memory: operation retention', () => {
  it('deletes settled operations past the age; the scope remembers and works on as before', async () => {
    const { store, memory, advance } = setup();
    const memoryId = memoryIdOf(scope);
    for (let turn = 0; turn < 3; turn++)
      await memory.observe({ scope, runId: `run-${turn}`, messages: messages(turn * 2, 2) });
    await memory.reflectNow(scope);
    await memory.importObservations(scope, [{ content: 'imported fact', importance: 0.7 }]);
    await storeDeadOperation(store, scope, 'model down');
    await memory.observe({ scope: other, runId: 'run-other', messages: messages(0, 2) });
    const snippet = await memory.snippet(scope);
    const exported = (await memory.export(scope, 'json')).content;
    const status = await memory.status(scope);
    const logged = (await store.listOperations(memoryId)).length;
    const loggedOther = (await store.listOperations(memoryIdOf(other))).length;
    expect(logged).toBeGreaterThanOrEqual(6);

    advance(DAY_MS - 1);
    expect(await memory.deleteSettledOperations?.({ olderThanSeconds: 86_400, limit: 1000 })).toBe(0);
    advance(1);
    // Every settled operation but each scope's newest, the other tenant's scope included.
    expect(await memory.deleteSettledOperations?.({ olderThanSeconds: 86_400, limit: 1000 })).toBe(
      logged - 1 + loggedOther - 1,
    );
    expect((await store.listOperations(memoryId)).map((operation) => operation.status)).toEqual(['dead']);
    expect((await store.listOperations(memoryIdOf(other))).map((operation) => operation.status)).toEqual(['applied']);
    expect(await store.listMarkers(memoryId)).toEqual([]);

    // What the scope remembers is where it was.
    expect(await memory.snippet(scope)).toBe(snippet);
    expect((await memory.export(scope, 'json')).content).toBe(exported);
    expect(await memory.status(scope)).toEqual(status);
    const dead = await memory.operationPage(scope, { status: 'dead' });
    expect(dead.items.map((operation) => operation.operationId)).toEqual(['op-dead']);

    // It goes on: a retried dead operation runs, observes and reflections apply, an import appends.
    const retried = await memory.retryOperation(scope, 'op-dead');
    expect(retried.status).toBe('queued');
    await memory.drain(scope);
    await memory.observe({ scope, runId: 'run-late', messages: messages(10, 2) });
    expect((await memory.reflectNow(scope)).reflected).toBe(true);
    const imported = await memory.importObservations(scope, [{ content: 'a later fact', importance: 0.4 }]);
    const observations = (await memory.inspect(scope)).observations;
    expect(observations.at(-1)).toMatchObject({ content: 'a later fact', seq: imported.observations[0]?.seq });
    expect(new Set(observations.map((observation) => observation.seq)).size).toBe(observations.length);
    const sequences = (await store.listOperations(memoryId)).map((operation) => operation.scopeSequence);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    expect(new Set(sequences).size).toBe(sequences.length);
    expect(await memory.snippet(scope)).toContain('a later fact');
  });

  it('is missing over a store without it, and refuses bad arguments naming them', async () => {
    const { deleteSettledOperations: _, ...withoutRetention } = createInMemoryStore();
    expect(setup(withoutRetention as MemoryStore).memory.deleteSettledOperations).toBeUndefined();
    const { memory } = setup();
    await expect(memory.deleteSettledOperations?.({ olderThanSeconds: -1, limit: 10 })).rejects.toMatchObject({
      code: 'OPTION_INVALID',
      data: { option: 'olderThanSeconds' },
    });
    await expect(memory.deleteSettledOperations?.({ olderThanSeconds: 0, limit: 5000 })).rejects.toMatchObject({
      code: 'OPTION_INVALID',
      data: { option: 'limit' },
    });
  });
});
