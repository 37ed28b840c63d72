import { describe, expect, it } from 'vitest';
import { HarnessMemoryError } from '../core/errors.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createSqliteStore } from '../storage/sqlite/index.js';
import { createObservationalMemory } from './observational-memory.js';
import { useSqliteTestFiles } from '../../test/support/sqlite-test-files.js';

const scope = { tenantId: 'acme', conversationId: 'c1', agentId: 'a1' };

const codeOf = (error: unknown): string | undefined => (HarnessMemoryError.isInstance(error) ? error.code : undefined);
const fieldOf = (error: unknown): unknown => (HarnessMemoryError.isInstance(error) ? error.data['field'] : undefined);

describe('ObservationalMemory listing and correction', () => {
  const files = useSqliteTestFiles('inspector');

  it('lists a tenant scopes in pages through cursors, each scope once, with effective enabled flags', async () => {
    const store = createSqliteStore({ path: files.path });
    try {
      const memory = createObservationalMemory({ store, defaultEnabled: true });
      for (let index = 0; index < 7; index++) {
        await memory.importObservations({ ...scope, conversationId: `conv-${index}` }, [{ content: `fact ${index}` }]);
      }
      await memory.setEnabled({ ...scope, conversationId: 'conv-3' }, false);
      await memory.importObservations({ ...scope, tenantId: 'other' }, [{ content: 'not yours' }]);
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await memory.listScopes('acme', { limit: 3, ...(cursor ? { cursor } : {}) });
        seen.push(...page.items.map((item) => item.scope.conversationId));
        cursor = page.nextCursor ?? undefined;
        pages++;
      } while (cursor);
      expect(pages).toBe(3);
      expect(seen).toEqual(['conv-0', 'conv-1', 'conv-2', 'conv-3', 'conv-4', 'conv-5', 'conv-6']);
      const disabled = await memory.listScopes('acme', { enabled: false });
      expect(disabled.items.map((item) => [item.scope.conversationId, item.enabled])).toEqual([['conv-3', false]]);
      expect((await memory.listScopes('acme', { query: 'CONV-5' })).items).toHaveLength(1);
      expect((await memory.listScopes('acme')).items[0]).toMatchObject({ enabled: true, observationCount: 1 });
    } finally {
      await store.dispose();
    }
  });

  it.each([
    [{ limit: 0 }, 'limit'],
    [{ limit: 201 }, 'limit'],
    [{ limit: 2.5 }, 'limit'],
    [{ cursor: 'not a cursor!' }, 'cursor'],
    [{ cursor: Buffer.from('[1]').toString('base64url') }, 'cursor'],
    [{ query: 'a b c d e f g h i' }, 'query'],
  ])('refuses the listing request %j, naming %s', async (request, field) => {
    const memory = createObservationalMemory({ store: createInMemoryStore(), defaultEnabled: true });
    const error = await memory.listScopes('acme', request).catch((caught: unknown) => caught);
    expect(codeOf(error)).toBe('REQUEST_INVALID');
    expect(fieldOf(error)).toBe(field);
  });

  it(
    'pages observations newest first, each with its score and whether the budget let the next snippet show ' + 'it',
    async () => {
      const memory = createObservationalMemory({
        store: createInMemoryStore(),
        defaultEnabled: true,
        defaults: { snippetMaxTokens: 120 },
      });
      const long = (index: number) => `${index}: ${'a fairly long observation about the user '.repeat(3)}`;
      await memory.importObservations(
        scope,
        Array.from({ length: 12 }, (_, index) => ({ content: long(index), importance: index === 0 ? 1 : 0.2 })),
      );
      const first = await memory.observationPage(scope, { limit: 5 });
      expect(first.items.map((item) => item.seq)).toEqual([12, 11, 10, 9, 8]);
      expect(first.items[0]).toMatchObject({ ageSteps: 0, score: 0.2, supersededBy: null });
      const all = [...first.items, ...(await memory.observationPage(scope, { cursor: first.nextCursor ?? '' })).items];
      expect(all).toHaveLength(12);
      const snippet = await memory.snippet(scope);
      for (const item of all) expect(snippet.includes(`- [${item.seq}] `)).toBe(item.included);
      expect(all.some((item) => item.included)).toBe(true);
      expect(all.some((item) => !item.included)).toBe(true);
    },
  );

  it('corrects an observation: the next snippet shows the new text, also in another process cache', async () => {
    const store = createInMemoryStore();
    const writer = createObservationalMemory({ store, defaultEnabled: true });
    const reader = createObservationalMemory({ store, defaultEnabled: true });
    await writer.importObservations(scope, [
      { content: 'The user lives in Oslo.' },
      { content: 'The user likes tea.' },
    ]);
    expect(await reader.snippet(scope)).toContain('- [1] The user lives in Oslo.');
    const fixed = await writer.correctObservation(scope, 1, { content: 'The user lives in Bergen.', importance: 0.9 });
    expect(fixed.observation).toMatchObject({ seq: 1, content: 'The user lives in Bergen.', importance: 0.9 });
    const snippet = await reader.snippet(scope);
    expect(snippet).toContain('- [1] The user lives in Bergen.');
    expect(snippet).not.toContain('Oslo');
    await writer.deleteObservation(scope, 2);
    expect(await reader.snippet(scope)).not.toContain('tea');
    const log = await writer.operationPage(scope, { limit: 2 });
    expect(log.items.map((operation) => [operation.operationType, operation.payload['action']])).toEqual([
      ['correct', 'delete'],
      ['correct', 'replace'],
    ]);
  });

  it('redacts a correction, and refuses bad ones naming the field', async () => {
    const memory = createObservationalMemory({ store: createInMemoryStore(), defaultEnabled: true });
    await memory.importObservations(scope, [{ content: 'placeholder' }]);
    const { observation } = await memory.correctObservation(scope, 1, {
      content: 'token sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD',
    });
    expect(observation.content).not.toContain('sk-proj-abcdefghijklmnopqrstuvwxyz');
    const failures = await Promise.all([
      memory.correctObservation(scope, 2, { content: 'x' }).catch((error: unknown) => error),
      memory.deleteObservation(scope, 0).catch((error: unknown) => error),
      memory.correctObservation(scope, 1, { content: '  ' }).catch((error: unknown) => error),
      memory.correctObservation(scope, 1, { content: 'ok', importance: 2 }).catch((error: unknown) => error),
    ]);
    expect(failures.map((error) => [codeOf(error), fieldOf(error)])).toEqual([
      ['OBSERVATION_NOT_FOUND', undefined],
      ['OBSERVATION_INVALID', 'seq'],
      ['OBSERVATION_INVALID', 'content'],
      ['OBSERVATION_INVALID', 'importance'],
    ]);
  });

  it('searches by every word, newest and most important first, in pages', async () => {
    const memory = createObservationalMemory({ store: createInMemoryStore(), defaultEnabled: true });
    await memory.importObservations(scope, [
      { content: 'Deploys go out on Friday', importance: 0.9 },
      { content: 'Unrelated fact', importance: 0.5 },
      { content: 'friday lunch is pizza', importance: 0.3 },
      { content: 'FRIDAY standup moved', importance: 0.3 },
    ]);
    const page = await memory.searchObservations(scope, { query: 'friday', limit: 2 });
    expect(page.items.map((item) => item.seq)).toEqual([4, 1]);
    const rest = await memory.searchObservations(scope, { query: 'friday', limit: 2, cursor: page.nextCursor ?? '' });
    expect(rest.items.map((item) => item.seq)).toEqual([3]);
    expect(rest.nextCursor).toBeNull();
    await expect(memory.searchObservations(scope, { query: '  ' })).rejects.toThrow(/at least one word/);
  });

  it('reports progress toward the next observe and reflection', async () => {
    const memory = createObservationalMemory({
      store: createInMemoryStore(),
      defaultEnabled: true,
      defaults: { observeMinTokens: 10_000 },
    });
    await memory.observe({ scope, messages: [{ id: 'm1', role: 'user', content: 'hello there' }] });
    const progress = await memory.progress(scope);
    expect(progress.unobservedTokens).toBeGreaterThan(0);
    expect(progress).toMatchObject({ observeMinTokens: 10_000, observing: false, reflecting: false, snippetTokens: 0 });
  });

  it('exports one state while other writes land: the status counts what the list holds', async () => {
    const store = createInMemoryStore();
    const memory = createObservationalMemory({ store, defaultEnabled: true });
    const other = createObservationalMemory({ store, defaultEnabled: true });
    const batch = Array.from({ length: 20 }, (_, index) => ({ content: `fact ${index}` }));
    for (let round = 0; round < 60; round++) {
      const [, json, markdown] = await Promise.all([
        (round % 2 === 0 ? memory : other).importObservations(scope, batch),
        memory.export(scope, 'json'),
        memory.export(scope, 'markdown'),
      ]);
      const exported = JSON.parse(json.content) as { status: { observation_count: number }; observations: unknown[] };
      expect(exported.observations, `round ${round}`).toHaveLength(exported.status.observation_count);
      const counted = Number(/observations: `(\d+)`/.exec(markdown.content)?.[1]);
      expect(markdown.content.match(/^- \[\d+\]/gm) ?? [], `round ${round}`).toHaveLength(counted);
    }
  });
});
