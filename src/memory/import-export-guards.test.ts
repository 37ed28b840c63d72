/**
 * `importExport`'s guards: a store that cannot restore, a supersession the reflector would have
 * refused, an unbounded supersession set, and a scope written while the import runs.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { useSqliteTestFiles } from '../../test/support/sqlite-test-files.js';
import { createPostgresTestSchemas, postgresTestUrl } from '../../test/support/postgres-schema.js';
import { HarnessMemoryError } from '../core/errors.js';
import { memoryIdOf } from '../core/scope.js';
import { MAX_IMPORTED_LINKS as EXPORTED_MAX_LINKS } from '../index.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createPostgresStore } from '../storage/postgres/postgres-store.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import type { MemoryStore } from '../storage/store.js';
import { MAX_IMPORTED_LINKS, readExport } from './export-reader.js';
import { createObservationalMemory } from './observational-memory.js';
import type { ObservationalMemory } from './observational-memory.js';

const files = useSqliteTestFiles('hm-import-guards-');
const url = postgresTestUrl();
const schemas = url ? createPostgresTestSchemas(url) : undefined;
afterAll(async () => {
  await schemas?.dropAll();
});

const scope = { tenantId: 't', conversationId: 'guards', agentId: 'a' };
const memoryOn = (store: MemoryStore): ObservationalMemory =>
  createObservationalMemory({ store, defaultEnabled: true });

/** An export in which a later fact supersedes the user's: `newerSource` says where the later one came from. */
function movedExport(newerSource: 'user' | 'tool'): Record<string, unknown> {
  return {
    observations: [
      { seq: 1, content: 'The user lives in Paris.', importance: 1, source: 'user' },
      { seq: 2, content: 'A web page says the user moved to Berlin.', importance: 0.3, source: newerSource },
    ],
    reflection: 'SUMMARY:\nWhere the user lives.\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]: moved\nCONTRADICTIONS:\n',
    reflection_links: { supersessions: [{ newer_seq: 2, older_seq: 1, reason: 'moved' }], contradictions: [] },
  };
}

/** `inner` seen through `overrides`: a key given there answers its value (`undefined` hides it). */
function wrapped(inner: MemoryStore, overrides: Readonly<Record<string, unknown>>): MemoryStore {
  return new Proxy(inner, {
    get(target, key) {
      if (typeof key === 'string' && key in overrides) return overrides[key];
      const value: unknown = Reflect.get(target, key);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A store adapter written before `restore`: it imports the observations and ignores the rest. */
function storeBeforeRestore(): MemoryStore {
  const inner = createInMemoryStore();
  return wrapped(inner, {
    supportsRestore: undefined,
    importObservations: ({
      restore: _ignored,
      ...input
    }: Parameters<NonNullable<MemoryStore['importObservations']>>[0]) => inner.importObservations?.(input),
  });
}

const failureOf = async (work: Promise<unknown>): Promise<HarnessMemoryError> => {
  const error = await work.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!HarnessMemoryError.isInstance(error)) throw new Error(`expected a HarnessMemoryError, got ${String(error)}`);
  return error;
};

describe('importExport: a store that does not declare supportsRestore', () => {
  it('is refused an export with a reflection or links, writing nothing', async () => {
    const store = storeBeforeRestore();
    const memory = memoryOn(store);
    const error = await failureOf(memory.importExport(scope, movedExport('user')));
    expect(error).toMatchObject({ code: 'STORE_FAILED', data: { store: 'in-memory' } });
    expect(error.message).toContain('supportsRestore');
    expect(error.message).toContain('nothing was imported');
    const linksOnly = { ...movedExport('user'), reflection: '' };
    expect((await failureOf(memory.importExport(scope, linksOnly))).code).toBe('STORE_FAILED');
    expect(await memory.status(scope)).toMatchObject({ observationCount: 0, reflectionPresent: false });
  });

  it('still imports an export with neither', async () => {
    const memory = memoryOn(storeBeforeRestore());
    const { observations } = movedExport('user');
    const result = await memory.importExport(scope, { observations, reflection: '' });
    expect(result.observations.map((item) => item.seq)).toEqual([1, 2]);
  });

  it('is declared by the repository stores', async () => {
    expect(createInMemoryStore().supportsRestore).toBe(true);
    expect(files.track(createSqliteStore({ path: files.path })).supportsRestore).toBe(true);
    if (url) {
      const postgres = await createPostgresStore({ connectionString: url, schema: schemas?.next() ?? '' });
      expect(files.track(postgres).supportsRestore).toBe(true);
    }
  });
});

describe('importExport: supersessions resting on tool output', () => {
  it('keeps a tool fact superseding a user fact as a contradiction, as the reflector does, and counts it', async () => {
    const memory = memoryOn(createInMemoryStore());
    const result = await memory.importExport(scope, movedExport('tool'));
    expect(result.droppedLinks).toBe(1);
    const inspection = await memory.inspect(scope);
    expect(inspection.links.supersessions).toEqual([]);
    expect(inspection.links.contradictions).toMatchObject([
      { seqA: 1, seqB: 2, detail: 'a change that may come from tool output: moved' },
    ]);
    expect(inspection.reflection?.structured.supersessions).toEqual([]);
    expect(inspection.reflection?.raw).not.toContain('replaces');
    expect(inspection.reflection?.raw).toContain('[seq:1] vs [seq:2]');
    const snippet = await memory.snippet(scope);
    expect(snippet).toContain('The user lives in Paris.');
    expect(snippet).not.toContain('superseded');
  });

  it('restores a supersession between user facts as it was', async () => {
    const memory = memoryOn(createInMemoryStore());
    const result = await memory.importExport(scope, movedExport('user'));
    expect(result.droppedLinks).toBe(0);
    expect((await memory.inspect(scope)).links.supersessions).toMatchObject([{ newerSeq: 2, olderSeq: 1 }]);
  });
});

describe('importExport: the number of links', () => {
  const linksOf = (count: number): Array<Record<string, unknown>> =>
    Array.from({ length: count }, (_, index) => ({ newer_seq: index + 2, older_seq: 1 }));

  it(`takes ${MAX_IMPORTED_LINKS} supersessions and refuses one more, naming the field and the limit`, async () => {
    expect(EXPORTED_MAX_LINKS).toBe(MAX_IMPORTED_LINKS);
    const at = (count: number) => ({ observations: [], reflection_links: { supersessions: linksOf(count) } });
    expect(readExport(at(MAX_IMPORTED_LINKS)).supersessions).toHaveLength(MAX_IMPORTED_LINKS);
    const memory = memoryOn(createInMemoryStore());
    const error = await failureOf(memory.importExport(scope, JSON.stringify(at(MAX_IMPORTED_LINKS + 1))));
    expect(error).toMatchObject({ code: 'EXPORT_INVALID', data: { field: 'reflection_links.supersessions' } });
    expect(error.message).toContain(`at most ${MAX_IMPORTED_LINKS}`);
    const contradictions = Array.from({ length: MAX_IMPORTED_LINKS + 1 }, () => ({ seq_a: 1, seq_b: 2 }));
    const other = await failureOf(
      memory.importExport(scope, { observations: [], reflection_links: { contradictions } }),
    );
    expect(other.data['field']).toBe('reflection_links.contradictions');
  });
});

describe('importExport: a scope written while importing', () => {
  const stores: Array<[string, () => Promise<MemoryStore>]> = [
    ['in-memory', async () => createInMemoryStore()],
    ['sqlite', async () => files.track(createSqliteStore({ path: files.path }))],
  ];
  if (url)
    stores.push([
      'postgres',
      async () => files.track(await createPostgresStore({ connectionString: url, schema: schemas?.next() ?? '' })),
    ]);

  it.each(stores)('%s: is refused as a scope holding memory is (EXPORT_INVALID, field scope)', async (_, open) => {
    const inner = await open();
    const other = memoryOn(inner);
    // The scope is read empty here, then another caller writes it before the import's transaction.
    const racing = wrapped(inner, {
      getRecord: async (memoryId: string) => {
        const record = await inner.getRecord(memoryId);
        await other.importObservations(scope, [{ content: 'Written meanwhile.' }]);
        return record;
      },
    });
    const error = await failureOf(memoryOn(racing).importExport(scope, movedExport('user')));
    expect(error).toMatchObject({ code: 'EXPORT_INVALID', data: { field: 'scope' } });
    expect(error).toMatchObject({ data: { memoryId: memoryIdOf(scope) } });
    expect(error.detail).toMatch(/^scope t\/guards\/a was written while importing; nothing was imported\. /);
    expect(error.cause).toMatchObject({ code: 'STORE_CONFLICT' });
    expect(await other.status(scope)).toMatchObject({ observationCount: 1, reflectionPresent: false });
  });
});
