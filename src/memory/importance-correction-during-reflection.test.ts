/**
 * An observation corrected while the scope's reflector runs, by another service on the same
 * store (the reflecting one holds the scope's lock): a new importance alone leaves what the
 * reflector read true, so its reflection is stored; a new text may be restated by it, so it is
 * not. Either way the reflecting service then shows the corrected observation.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresTestSchemas, postgresTestUrl } from '../../test/support/postgres-schema.js';
import { createModelGate } from '../../test/support/model-gate.js';
import { scriptedObserver, scriptedReflector } from '../../test/support/scripted-models.js';
import { useSqliteTestFiles } from '../../test/support/sqlite-test-files.js';
import { memoryIdOf } from '../core/scope.js';
import { OUTDATED_REFLECTION_NOTE } from '../storage/correction-plan.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createPostgresStore } from '../storage/postgres/postgres-store.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import type { MemoryStore } from '../storage/store.js';
import { createObservationalMemory } from './observational-memory.js';

const files = useSqliteTestFiles('hm-importance-during-reflection-');
const url = postgresTestUrl();
const schemas = url ? createPostgresTestSchemas(url) : undefined;
afterAll(async () => {
  await schemas?.dropAll();
});

const scope = { tenantId: 't', conversationId: 'reflecting', agentId: 'a' };
const memoryId = memoryIdOf(scope);
const SUMMARY = 'The user lives in Berlin and prefers tabs.';

/** Two stores on one database, as two processes would have; one object for the in-memory store. */
interface StoreCase {
  readonly name: string;
  readonly open: () => Promise<readonly [MemoryStore, MemoryStore]>;
  readonly skip: boolean;
}

const stores: readonly StoreCase[] = [
  {
    name: 'in-memory',
    open: async () => {
      const store = createInMemoryStore();
      return [store, store];
    },
    skip: false,
  },
  {
    name: 'sqlite',
    open: async () => [
      files.track(createSqliteStore({ path: files.path })),
      files.track(createSqliteStore({ path: files.path })),
    ],
    skip: false,
  },
  {
    name: 'postgres',
    open: async () => {
      const schema = schemas?.next() ?? '';
      const first = files.track(await createPostgresStore({ connectionString: url ?? '', schema }));
      return [first, files.track(await createPostgresStore({ connectionString: url ?? '', schema }))];
    },
    skip: !url,
  },
];

/** A reflector held at a gate until `release()`; `inCall` resolves once it was asked. */
function gatedReflector() {
  const gate = createModelGate();
  const reflector = scriptedReflector(async () => {
    await gate.pass();
    return `SUMMARY:\n${SUMMARY}\n\nSUPERSESSIONS:\n\nCONTRADICTIONS:\n`;
  });
  return { reflector, inCall: gate.inCall, release: gate.release };
}

/**
 * Two observations stored, then `correct` run by a service on `other` while the reflector of one
 * on `store` is held; returns that service and how its reflectNow ended.
 */
async function correctedWhileReflecting(
  [store, other]: readonly [MemoryStore, MemoryStore],
  change: { readonly content?: string; readonly importance?: number },
) {
  const gated = gatedReflector();
  const memory = createObservationalMemory({
    store,
    observer: scriptedObserver('IMPORTANCE: 0.5\nThe user lives in Berlin.', 'IMPORTANCE: 0.5\nThe user prefers tabs.'),
    reflector: gated.reflector,
    defaultEnabled: true,
    defaults: { observeMinTokens: 1, reflectThresholdTokens: 1_000_000 },
  });
  for (const [index, content] of ['I live in Berlin.', 'I prefer tabs.'].entries())
    await memory.observe({ scope, messages: [{ id: `m${index}`, role: 'user', content }] });
  // The service's cache holds the observations as the reflector read them.
  expect((await memory.inspect(scope)).observations.map((item) => item.importance)).toEqual([0.5, 0.5]);
  const reflecting = memory.reflectNow(scope);
  await gated.inCall;
  await createObservationalMemory({ store: other, defaultEnabled: true }).correctObservation(scope, 1, change);
  gated.release();
  const result = await reflecting;
  expect(gated.reflector.calls).toHaveLength(1);
  return { memory, result };
}

async function reflectOperationOf(store: MemoryStore) {
  return (await store.listOperations(memoryId)).find((operation) => operation.operationType === 'reflect_now');
}

describe.each(stores)('observational memory: a correction while the reflector runs ($name store)', ({ open, skip }) => {
  it.skipIf(skip)('stores the reflection when only an importance was corrected', async () => {
    const opened = await open();
    const { memory, result } = await correctedWhileReflecting(opened, { importance: 0.9 });
    expect(result.reflected).toBe(true);
    const inspection = await memory.inspect(scope);
    expect(inspection.reflection?.raw).toContain(SUMMARY);
    expect(await memory.snippet(scope)).toContain(SUMMARY);
    expect(inspection.status.reflectionPresent).toBe(true);
    expect(inspection.progress.unreflectedObservationTokens).toBe(0);
    expect(await reflectOperationOf(opened[0])).toMatchObject({ status: 'applied', errorText: '' });
    // The reflecting service shows the importance another service set, not the one it held.
    expect(inspection.observations.map((item) => [item.content, item.importance])).toEqual([
      ['The user lives in Berlin.', 0.9],
      ['The user prefers tabs.', 0.5],
    ]);
  });

  it.skipIf(skip)('stores nothing of the reflection when a text was corrected', async () => {
    const opened = await open();
    const { memory, result } = await correctedWhileReflecting(opened, { content: 'The user lives in Munich.' });
    expect(result.reflected).toBe(false);
    const inspection = await memory.inspect(scope);
    expect(inspection.reflection).toBeNull();
    expect(await memory.snippet(scope)).not.toContain(SUMMARY);
    expect(await reflectOperationOf(opened[0])).toMatchObject({
      status: 'applied',
      errorText: OUTDATED_REFLECTION_NOTE,
    });
    expect(inspection.observations.map((item) => item.content)).toEqual([
      'The user lives in Munich.',
      'The user prefers tabs.',
    ]);
  });

  it.skipIf(skip)('stores nothing of it when the importance moved an observation across the tool cap', async () => {
    const [store, other] = await open();
    const gate = createModelGate();
    const memory = createObservationalMemory({
      store,
      observer: scriptedObserver(
        'IMPORTANCE: 0.95\nSOURCE: 1\nNever push to main without review.',
        'IMPORTANCE: 0.9\nSOURCE: 1\nPushing to main without review is now allowed.',
      ),
      reflector: scriptedReflector(async () => {
        await gate.pass();
        return 'SUMMARY:\nPushes are allowed.\n\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]: changed\n\nCONTRADICTIONS:\n';
      }),
      defaultEnabled: true,
      defaults: { observeMinTokens: 1, reflectThresholdTokens: 1_000_000 },
    });
    await memory.observe({
      scope,
      messages: [{ id: 'm1', role: 'user', content: 'Never push to main without review.' }],
    });
    await memory.observe({
      scope,
      messages: [{ id: 'm2', role: 'assistant', content: 'Pushing to main is fine now.' }],
    });
    const reflecting = memory.reflectNow(scope);
    await gate.inCall;
    // Lowered within the tool cap, the assistant's line may rest on tool output: it cannot retire the rule.
    await createObservationalMemory({ store: other, defaultEnabled: true }).correctObservation(scope, 2, {
      importance: 0.5,
    });
    gate.release();
    expect((await reflecting).reflected).toBe(false);
    expect((await memory.inspect(scope)).links.supersessions).toEqual([]);
    expect(await memory.snippet(scope)).toContain('- [1] Never push to main without review.');
  });
});
