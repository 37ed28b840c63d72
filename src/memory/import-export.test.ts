/**
 * `importExport`: a JSON export comes back whole into another scope or store (SQLite to
 * Postgres, a backup restored), its reflection and supersession set with it, so the next snippet
 * is the one the exporting scope gave; `importObservations` alone brought superseded facts back
 * at full weight.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { useSqliteTestFiles } from '../../test/support/sqlite-test-files.js';
import { createPostgresTestSchemas, postgresTestUrl } from '../../test/support/postgres-schema.js';
import { scriptedObserver, scriptedReflector } from '../../test/support/scripted-models.js';
import { HarnessMemoryError } from '../core/errors.js';
import { memoryIdOf } from '../core/scope.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createPostgresStore } from '../storage/postgres/postgres-store.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import type { MemoryStore } from '../storage/store.js';
import { createObservationalMemory } from './observational-memory.js';
import type { ObservationalMemory } from './observational-memory.js';

const files = useSqliteTestFiles('hm-import-export-');
const url = postgresTestUrl();
const schemas = url ? createPostgresTestSchemas(url) : undefined;
afterAll(async () => {
  await schemas?.dropAll();
});

const scope = { tenantId: 't', conversationId: 'moving', agentId: 'a' };
const REFLECTION =
  'SUMMARY:\nThe user relocated for work.\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]: moved\n' +
  'CONTRADICTIONS:\n- [seq:3] vs [seq:4]: indentation\n';
const defaults = { observeMinTokens: 1, snippetMaxTokens: 95 };

/** Memory on `store` whose observer answers `answers` in turn, one observation each, and whose reflector `REFLECTION`. */
function memoryOn(store: MemoryStore, answers: string[] = ['NONE']): ObservationalMemory {
  return createObservationalMemory({
    store,
    observer: scriptedObserver(...answers),
    reflector: scriptedReflector(REFLECTION),
    defaultEnabled: true,
    defaults,
  });
}

/** Scope `scope` of a memory on `store` after four observations and a reflection, then `after` more observations. */
async function reflectedSource(store: MemoryStore, after = 0): Promise<ObservationalMemory> {
  const memory = memoryOn(store, [
    'IMPORTANCE: 1.0\nThe user lives in Paris.',
    'IMPORTANCE: 0.3\nThe user moved to Berlin.',
    'IMPORTANCE: 0.5\nThe user prefers tabs.',
    'IMPORTANCE: 0.5\nThe user prefers spaces.',
    ...Array.from({ length: after }, (_, index) => `IMPORTANCE: 0.4\nLater note ${index}.`),
  ]);
  for (let index = 0; index < 4; index++)
    await memory.observe({ scope, messages: [{ id: `m${index}`, role: 'user', content: `message ${index}` }] });
  await memory.reflectNow(scope);
  for (let index = 0; index < after; index++)
    await memory.observe({ scope, messages: [{ id: `n${index}`, role: 'user', content: `note ${index}` }] });
  return memory;
}

const exportOf = async (memory: ObservationalMemory): Promise<string> => (await memory.export(scope, 'json')).content;

const failureOf = async (work: Promise<unknown>): Promise<HarnessMemoryError> => {
  const error = await work.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!HarnessMemoryError.isInstance(error)) throw new Error(`expected a HarnessMemoryError, got ${String(error)}`);
  return error;
};

describe('importExport: a JSON export restored whole', () => {
  it.skipIf(!url)(
    'moves a scope from SQLite to Postgres with the same snippet, superseded facts held back',
    async () => {
      const source = await reflectedSource(files.track(createSqliteStore({ path: files.path })));
      const before = await source.snippet(scope);
      expect(before).toContain('The user relocated for work.');
      expect(before).not.toContain('Paris');
      const target = memoryOn(
        files.track(await createPostgresStore({ connectionString: url ?? '', schema: schemas?.next() ?? '' })),
      );
      const result = await target.importExport(scope, await exportOf(source));

      expect(await target.snippet(scope)).toBe(before);
      expect(result.droppedLinks).toBe(0);
      expect(result.status).toMatchObject({
        observationCount: 4,
        reflectionPresent: true,
        activeSupersessions: 1,
        activeContradictions: 1,
      });
      const [from, to] = [await source.inspect(scope), await target.inspect(scope)];
      expect(to.reflection).toMatchObject({
        raw: from.reflection?.raw,
        structured: from.reflection?.structured,
        tokenCount: from.reflection?.tokenCount,
        throughSeq: 4,
      });
      expect(to.observations.map((item) => item.content)).toEqual(from.observations.map((item) => item.content));
    },
  );

  it('restores into another in-memory store, from the text or the parsed export, with the same snippet', async () => {
    const source = await reflectedSource(createInMemoryStore());
    const exported = await exportOf(source);
    const fromText = memoryOn(createInMemoryStore());
    await fromText.importExport(scope, exported);
    expect(await fromText.snippet(scope)).toBe(await source.snippet(scope));
    const fromObject = memoryOn(createInMemoryStore());
    await fromObject.importExport(scope, JSON.parse(exported) as Record<string, unknown>);
    expect(await fromObject.snippet(scope)).toBe(await source.snippet(scope));
    // The observations alone bring the superseded fact back at its full weight.
    const observationsOnly = memoryOn(createInMemoryStore());
    await observationsOnly.importObservations(scope, (JSON.parse(exported) as { observations: never[] }).observations);
    expect(await observationsOnly.snippet(scope)).toContain('The user lives in Paris.');
  });

  it("takes the export's reflection_through_seq; an export without it (an older one) covers every observation", async () => {
    const source = await reflectedSource(createInMemoryStore(), 2);
    const exported = JSON.parse(await exportOf(source)) as Record<string, unknown>;
    expect(exported['reflection_through_seq']).toBe(4);
    const withThrough = memoryOn(createInMemoryStore());
    await withThrough.importExport(scope, exported);
    expect((await withThrough.inspect(scope)).reflection?.throughSeq).toBe(4);
    expect(await withThrough.snippet(scope)).toBe(await source.snippet(scope));
    const without = memoryOn(createInMemoryStore());
    const { reflection_through_seq: _through, ...older } = exported;
    await without.importExport(scope, older);
    expect((await without.inspect(scope)).reflection?.throughSeq).toBe(6);
  });

  it('renumbers the reflection and its links to the seqs the scope gives, and drops a link to a seq not exported', async () => {
    const source = await reflectedSource(createInMemoryStore());
    const exported = JSON.parse(await exportOf(source)) as { reflection_links: { supersessions: unknown[] } };
    exported.reflection_links.supersessions.push({ newer_seq: 9, older_seq: 2, reason: 'not exported' });
    const target = memoryOn(createInMemoryStore());
    // Two observations, both deleted: the scope holds none, and its next seq is 3.
    await target.importObservations(scope, [{ content: 'gone' }, { content: 'gone too' }]);
    for (const seq of [1, 2]) await target.deleteObservation(scope, seq);
    const result = await target.importExport(scope, exported as never);
    expect(result.droppedLinks).toBe(1);
    expect(result.observations.map((item) => item.seq)).toEqual([3, 4, 5, 6]);
    const inspection = await target.inspect(scope);
    expect(inspection.links.supersessions.map((item) => [item.newerSeq, item.olderSeq])).toEqual([[4, 3]]);
    expect(inspection.links.contradictions.map((item) => [item.seqA, item.seqB])).toEqual([[5, 6]]);
    expect(inspection.reflection).toMatchObject({ throughSeq: 6 });
    expect(inspection.reflection?.raw).toContain('[seq:4] replaces [seq:3]');
    expect(inspection.reflection?.structured.contradictions).toMatchObject([{ seqA: 5, seqB: 6 }]);
    const snippet = await target.snippet(scope);
    expect(snippet).toContain('The user relocated for work.');
    expect(snippet).not.toContain('Paris');
  });

  it('cleans the reflection as a reflector answer is cleaned: invisible characters stripped, secrets redacted', async () => {
    const target = memoryOn(createInMemoryStore());
    const secret = `sk-${'a1B2'.repeat(8)}`;
    await target.importExport(scope, {
      observations: [{ seq: 1, content: 'The user deploys on Fridays.' }],
      reflection: `SUMMARY:\nThe user\u200b deploys with key ${secret}.\nSUPERSESSIONS:\nCONTRADICTIONS:\n`,
    });
    const raw = (await target.inspect(scope)).reflection?.raw ?? '';
    expect(raw).not.toContain(secret);
    expect(raw).not.toContain('\u200b');
    expect(raw).toContain('The user deploys with key');
  });

  it('refuses a scope that holds observations, writing nothing', async () => {
    const source = await reflectedSource(createInMemoryStore());
    const target = memoryOn(createInMemoryStore());
    await target.importObservations(scope, [{ content: 'Already here.' }]);
    const error = await failureOf(target.importExport(scope, await exportOf(source)));
    expect(error).toMatchObject({ code: 'EXPORT_INVALID', data: { field: 'scope', observationCount: 1 } });
    expect(error).toMatchObject({ data: { memoryId: memoryIdOf(scope) } });
    // The scope as its user names it: no method name, no length-prefixed storage key.
    expect(error.detail).toMatch(/^scope t\/moving\/a already holds 1 observation\(s\); /);
    expect((await target.status(scope)).observationCount).toBe(1);
    expect((await target.status(scope)).reflectionPresent).toBe(false);
  });

  it('refuses a malformed export naming the field, writing nothing', async () => {
    const source = await reflectedSource(createInMemoryStore());
    const exported = JSON.parse(await exportOf(source)) as Record<string, unknown>;
    const target = memoryOn(createInMemoryStore());
    const fieldOf = async (value: unknown): Promise<unknown> =>
      (await failureOf(target.importExport(scope, value as never))).data['field'];
    const links = exported['reflection_links'] as { supersessions: Array<Record<string, unknown>> };
    const badLink = { ...links.supersessions[0], newer_seq: 'two' };
    expect(
      await fieldOf({ ...exported, reflection_links: { ...links, supersessions: [links.supersessions[0], badLink] } }),
    ).toBe('reflection_links.supersessions[1].newer_seq');
    const observations = exported['observations'] as Array<Record<string, unknown>>;
    expect(await fieldOf({ ...exported, observations: [observations[0], { ...observations[1], content: ' ' }] })).toBe(
      'observations[1]',
    );
    expect(await fieldOf({ ...exported, observations: [observations[1], observations[0]] })).toBe(
      'observations[1].seq',
    );
    expect(await fieldOf({ ...exported, reflection: 'x'.repeat(70_000) })).toBe('reflection');
    expect(await fieldOf({ ...exported, reflections: '' })).toBe('reflections');
    expect(await fieldOf('{"observations": [')).toBe('');
    expect(await fieldOf([])).toBe('');
    expect(await target.status(scope)).toMatchObject({ observationCount: 0, reflectionPresent: false });
  });
});
