/**
 * Paging a search while memory changes: a page resumes where the last one ended, in the order
 * of the snapshot the first page fixed, whatever is deleted, corrected or added meanwhile.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HarnessMemoryError } from '../core/errors.js';
import { createPostgresTestSchemas, postgresTestUrl } from '../../test/support/postgres-schema.js';
import { useSqliteTestFiles } from '../../test/support/sqlite-test-files.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createPostgresStore } from '../storage/postgres/postgres-store.js';
import { createSqliteStore } from '../storage/sqlite/index.js';
import type { MemoryStore } from '../storage/store.js';
import { createObservationalMemory } from './observational-memory.js';
import type { ObservationalMemory, ObservationView, Page } from './observational-memory.js';

const scope = { tenantId: 'acme', conversationId: 'c1', agentId: 'a1' };
const POSTGRES_URL = postgresTestUrl();
const STORES = ['in-memory', 'SQLite', ...(POSTGRES_URL === undefined ? [] : ['Postgres' as const])] as const;

/** Every page of a search, each page handed to `between` before the next is asked for. */
async function walk(
  memory: ObservationalMemory,
  request: { query: string; limit: number },
  between: (page: Page<ObservationView>, index: number) => Promise<void>,
): Promise<number[][]> {
  const pages: number[][] = [];
  let cursor: string | undefined;
  do {
    const page = await memory.searchObservations(scope, { ...request, ...(cursor ? { cursor } : {}) });
    pages.push(page.items.map((item) => item.seq));
    await between(page, pages.length - 1);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return pages;
}

describe('searchObservations paged while memory changes', () => {
  const files = useSqliteTestFiles('inspector-search');
  const schemas = POSTGRES_URL === undefined ? undefined : createPostgresTestSchemas(POSTGRES_URL);
  const opened: MemoryStore[] = [];
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.dispose();
  });
  afterAll(async () => schemas?.dropAll());
  const storeOf = async (kind: (typeof STORES)[number]): Promise<MemoryStore> => {
    if (kind === 'SQLite') return files.track(createSqliteStore({ path: files.path }));
    if (kind === 'in-memory' || schemas === undefined) return createInMemoryStore();
    const store = await createPostgresStore({ connectionString: schemas.url, schema: schemas.next(), max: 2 });
    opened.push(store);
    return store;
  };
  const memoryOver = async (kind: (typeof STORES)[number]) =>
    createObservationalMemory({ store: await storeOf(kind), defaultEnabled: true });

  it.each(STORES)(
    '%s: deleting each match a page shows, the next pages still show every other match once',
    async (kind) => {
      const memory = await memoryOver(kind);
      await memory.importObservations(
        scope,
        [0.5, null, 0.9, 0.2, null, 0.7].flatMap((importance, index) => [
          { content: `Old office address number ${index + 1}`, importance },
          { content: `Unrelated fact ${index + 1}`, importance: 0.5 },
        ]),
      );
      const pages = await walk(memory, { query: 'office', limit: 2 }, async (page) => {
        for (const item of page.items) await memory.deleteObservation(scope, item.seq);
      });
      expect(pages).toHaveLength(3);
      expect(pages.flat().toSorted((a, b) => a - b)).toEqual([1, 3, 5, 7, 9, 11]);
      expect((await memory.searchObservations(scope, { query: 'office' })).items).toEqual([]);
    },
  );

  it.each(STORES)(
    '%s: correcting each match a page shows, the next pages still show every other match once',
    async (kind) => {
      const memory = await memoryOver(kind);
      await memory.importObservations(
        scope,
        [0.5, null, 0.9, 0.2, null, 0.7, 0.4].map((importance, index) => ({
          content: `Office is on floor ${index + 1}`,
          importance,
        })),
      );
      const first = await memory.searchObservations(scope, { query: 'office', limit: 200 });
      const pages = await walk(memory, { query: 'office', limit: 3 }, async (page) => {
        for (const item of page.items)
          await memory.correctObservation(scope, item.seq, { content: `Office moved: ${item.content}` });
      });
      expect(pages.flat()).toEqual(first.items.map((item) => item.seq));
    },
  );

  it('keeps its order when deleting a match lifts the supersession of another', async () => {
    const memory = createObservationalMemory({
      store: createInMemoryStore(),
      defaultEnabled: true,
      reflector: {
        reflect: async () =>
          'SUMMARY:\nThe office moved.\n\nSUPERSESSIONS:\n- [seq:6] replaces [seq:5]: moved\n\nCONTRADICTIONS:\n',
      },
    });
    await memory.importObservations(
      scope,
      [0.1, 0.5, 0.5, 0.5, 1, 0.1].map((importance, index) => ({ content: `office note ${index + 1}`, importance })),
    );
    await memory.reflectNow(scope);
    const listed = await memory.observationPage(scope, { limit: 200 });
    expect(listed.items.find((item) => item.seq === 5)?.supersededBy).toBe(6);
    // Deleting 6 lifts the supersession of 5: ranked by the score it shows, 5 would rise above
    // a cursor it had been below, and no page would show it.
    const pages = await walk(memory, { query: 'office', limit: 3 }, async (page) => {
      for (const item of page.items) await memory.deleteObservation(scope, item.seq);
    });
    expect(pages.flat().toSorted((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it.each(STORES)('%s: an observation added while paging is left out, and no match comes twice', async (kind) => {
    const memory = await memoryOver(kind);
    const importances = [0.5, null, 0.9, 0.5, 0.1, null, 0.9, 0.5, 0.3, 0.5, 0.7, null, 0.9, 0.2, 0.5, 0.5, 0.6, 0.8];
    await memory.importObservations(
      scope,
      importances.map((importance, index) => ({ content: `fact apple ${index}`, importance })),
    );
    const before = (await memory.searchObservations(scope, { query: 'apple', limit: 200 })).items.map(
      (item) => item.seq,
    );
    const pages = await walk(memory, { query: 'apple', limit: 3 }, async (_page, index) => {
      if (index === 1) await memory.importObservations(scope, [{ content: 'apple new', importance: 0.95 }]);
    });
    expect(pages.flat()).toEqual(before);
    const after = await memory.searchObservations(scope, { query: 'apple', limit: 200 });
    expect(after.items[0]?.seq).toBe(importances.length + 1);
    expect(after.items).toHaveLength(importances.length + 1);
  });

  it('ranks a scope without deletions by the score it shows, newest first on a tie', async () => {
    const memory = await memoryOver('in-memory');
    await memory.importObservations(
      scope,
      [0.5, null, 0.9, 0.1, 0.5].map((importance, index) => ({ content: `tea note ${index}`, importance })),
    );
    const items = (await memory.searchObservations(scope, { query: 'tea' })).items;
    const byScore = items.toSorted((a, b) => b.score - a.score || b.seq - a.seq);
    expect(items.map((item) => item.seq)).toEqual(byScore.map((item) => item.seq));
  });

  it('refuses a cursor of another listing, an offset cursor or a made-up one, naming cursor', async () => {
    const memory = await memoryOver('in-memory');
    await memory.importObservations(
      scope,
      Array.from({ length: 4 }, (_, index) => ({ content: `tea note ${index}` })),
    );
    const listing = await memory.observationPage(scope, { limit: 1 });
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const cursors = [
      listing.nextCursor ?? '',
      encode({ o: 2 }),
      encode({ h: 4, r: 2, l: 1 }),
      encode({ h: 2, r: 0.1, l: 3 }),
      encode({ h: 4, r: 0.1, l: 1.5 }),
      'not a cursor!',
    ];
    for (const cursor of cursors) {
      const error = await memory.searchObservations(scope, { query: 'tea', cursor }).catch((caught: unknown) => caught);
      expect(HarnessMemoryError.isInstance(error) && [error.code, error.data['field']], cursor).toEqual([
        'REQUEST_INVALID',
        'cursor',
      ]);
    }
  });
});
