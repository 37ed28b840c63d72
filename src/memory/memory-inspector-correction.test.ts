/**
 * `correctObservation` with a new importance alone, through the public API on every store: the
 * text stays (the one stored when the store writes, not one read before), and so do the
 * reflection and the supersessions naming the observation, so a fact it superseded stays held
 * back from the snippet.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresTestSchemas, postgresTestUrl } from '../../test/support/postgres-schema.js';
import { scriptedObserver, scriptedReflector } from '../../test/support/scripted-models.js';
import { useSqliteTestFiles } from '../../test/support/sqlite-test-files.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createPostgresStore } from '../storage/postgres/postgres-store.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import type { MemoryStore } from '../storage/store.js';
import { createObservationalMemory } from './observational-memory.js';
import type { ObservationalMemory } from './observational-memory.js';

const files = useSqliteTestFiles('hm-importance-correction-');
const url = postgresTestUrl();
const schemas = url ? createPostgresTestSchemas(url) : undefined;
afterAll(async () => {
  await schemas?.dropAll();
});

const scope = { tenantId: 't', conversationId: 'moving', agentId: 'a' };
const REFLECTION =
  'SUMMARY:\nThe user relocated for work.\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]: moved\n' +
  'CONTRADICTIONS:\n- [seq:3] vs [seq:4]: indentation\n';
/** How the snippet shows the superseded fact, and how it shows it back at full weight. */
const SUPERSEDED = '- [1] (superseded by [2]) The user lives in Paris.';
const AT_FULL_WEIGHT = '- [1] The user lives in Paris.';

interface StoreCase {
  readonly name: string;
  readonly create: () => Promise<MemoryStore> | MemoryStore;
  readonly skip: boolean;
}

const stores: readonly StoreCase[] = [
  { name: 'in-memory', create: () => createInMemoryStore(), skip: false },
  { name: 'sqlite', create: () => files.track(createSqliteStore({ path: files.path })), skip: false },
  {
    name: 'postgres',
    create: async () =>
      files.track(await createPostgresStore({ connectionString: url ?? '', schema: schemas?.next() ?? '' })),
    skip: !url,
  },
];

/** Memory on `store` after four observations (`2` supersedes `1`, `3` and `4` contradict) and a reflection. */
async function reflectedOn(store: MemoryStore): Promise<ObservationalMemory> {
  const memory = createObservationalMemory({
    store,
    observer: scriptedObserver(
      'IMPORTANCE: 1.0\nThe user lives in Paris.',
      'IMPORTANCE: 0.3\nThe user moved to Berlin.',
      'IMPORTANCE: 0.5\nThe user prefers tabs.',
      'IMPORTANCE: 0.5\nThe user prefers spaces.',
    ),
    reflector: scriptedReflector(REFLECTION),
    defaultEnabled: true,
    defaults: { observeMinTokens: 1 },
  });
  for (let index = 0; index < 4; index++)
    await memory.observe({ scope, messages: [{ id: `m${index}`, role: 'user', content: `message ${index}` }] });
  await memory.reflectNow(scope);
  return memory;
}

/** `store` whose next `correctObservation` first lets `meanwhile` run, as another process would between a read and a write. */
function interleaved(store: MemoryStore, meanwhile: () => Promise<unknown>): MemoryStore {
  let pending = true;
  return new Proxy(store, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (key === 'correctObservation' && typeof value === 'function')
        return async (input: Parameters<MemoryStore['correctObservation']>[0]) => {
          if (pending) {
            pending = false;
            await meanwhile();
          }
          return (value as MemoryStore['correctObservation']).call(target, input);
        };
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe.each(stores)('correctObservation with importance alone ($name store)', ({ create, skip }) => {
  it.skipIf(skip)(
    'keeps the superseded fact held back and the reflection in force, and changes the importance',
    async () => {
      const memory = await reflectedOn(await create());
      const before = await memory.snippet(scope);
      expect(before).toContain('The user relocated for work.');
      expect(before).toContain(SUPERSEDED);

      const { observation, status } = await memory.correctObservation(scope, 2, { importance: 0.9 });
      expect(observation).toMatchObject({ seq: 2, content: 'The user moved to Berlin.', importance: 0.9 });
      const after = await memory.snippet(scope);
      expect(after).toContain(SUPERSEDED);
      expect(after).not.toContain(AT_FULL_WEIGHT);
      expect(after).toContain('The user relocated for work.');
      expect(after).toContain('- [2] The user moved to Berlin.');
      expect(status).toMatchObject({ reflectionPresent: true, activeSupersessions: 1, activeContradictions: 1 });
      // The superseded one's importance changes too, and it stays superseded.
      const older = await memory.correctObservation(scope, 1, { importance: 0.8 });
      expect(older.observation).toMatchObject({ importance: 0.8, supersededBy: 2 });
      expect(await memory.snippet(scope)).toContain(SUPERSEDED);

      // A new text still takes the reflection and the supersession out of force.
      await memory.correctObservation(scope, 2, { content: 'The user visited Berlin.' });
      const rewritten = await memory.snippet(scope);
      expect(rewritten).toContain(AT_FULL_WEIGHT);
      expect(rewritten).not.toContain('The user relocated for work.');
    },
  );

  it.skipIf(skip)('keeps a text another process corrected while the importance was being changed', async () => {
    const store = await create();
    await reflectedOn(store);
    const other = createObservationalMemory({ store, defaultEnabled: true });
    const memory = createObservationalMemory({
      store: interleaved(store, () => other.correctObservation(scope, 2, { content: 'The user moved to Munich.' })),
      defaultEnabled: true,
    });
    const { observation } = await memory.correctObservation(scope, 2, { importance: 0.9 });
    expect(observation).toMatchObject({ seq: 2, content: 'The user moved to Munich.', importance: 0.9 });
    const [stored] = (await memory.observationPage(scope, { limit: 1, query: 'moved' })).items;
    expect(stored).toMatchObject({ content: 'The user moved to Munich.', importance: 0.9 });
  });
});
