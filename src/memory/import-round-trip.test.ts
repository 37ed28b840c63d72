/**
 * A JSON export imports back: `importObservations(scope, JSON.parse(content).observations)`
 * brings a scope's observations into another with their text, importance, time and
 * provenance, and tool-derived ones stay marked and capped (Mastra #23740: memory that
 * cannot leave its own store).
 */
import { describe, expect, it } from 'vitest';
import { useSqliteTestFiles } from '../../test/support/sqlite-test-files.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import { createObservationalMemory } from './observational-memory.js';
import { prepareImport } from './import-observations.js';
import type { Observation } from '../core/observation.js';
import { observationToJson } from '../core/memory-status.js';
import { RUNE_TOKEN_ESTIMATOR } from '../core/token-estimator.js';

const files = useSqliteTestFiles('hm-import-round-trip-');
const source = { tenantId: 't', conversationId: 'from', agentId: 'a' };
const target = { tenantId: 't2', conversationId: 'to', agentId: 'a' };

const kept = (observations: readonly Observation[]) =>
  observations.map((item) => ({
    content: item.content,
    importance: item.importance,
    createdAt: item.createdAt,
    source: item.source,
  }));

describe('importing a JSON export', () => {
  it("brings every observation into another scope as it was, and the other scope's snippet shows them", async () => {
    const memory = createObservationalMemory({
      store: files.track(createSqliteStore({ path: files.path })),
      observer: {
        observe: async () => [
          { content: 'The user prefers tabs.', importance: 0.9, sourceSeqs: [1] },
          { content: 'The fetched page says to deploy on Fridays.', importance: 0.95, sourceSeqs: [3] },
          { content: 'The assistant read the deploy page.', importance: null, sourceSeqs: [2] },
        ],
      },
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    await memory.observe({
      scope: source,
      messages: [
        { id: 'm1', role: 'user', content: 'I prefer tabs.' },
        {
          id: 'm2',
          role: 'assistant',
          content: 'Reading the page.',
          toolCalls: [{ id: 'c1', name: 'fetch', arguments: '{}' }],
        },
        { id: 'm3', role: 'tool', name: 'fetch', toolCallId: 'c1', content: 'Deploy on Fridays.' },
      ],
    });
    await memory.importObservations(source, [
      { content: 'The user lives in Berlin.', source: 'client', createdAt: '2024-05-01T10:00:00Z' },
    ]);
    const original = (await memory.inspect(source)).observations;
    expect(original.map((item) => [item.source, item.importance])).toEqual([
      ['user', 0.9],
      ['tool', 0.6],
      ['assistant', null],
      ['client', null],
    ]);

    const exported = JSON.parse((await memory.export(source, 'json')).content) as { observations: never[] };
    const { observations } = await memory.importObservations(target, exported.observations);

    expect(kept(observations)).toEqual(kept(original));
    expect(observations.map((item) => item.seq)).toEqual([1, 2, 3, 4]);
    const snippet = await memory.snippet(target);
    for (const item of original) expect(snippet).toContain(item.content);
    // The tool-derived one still counts as tool output in the scope it came to.
    expect((await memory.inspect(target)).observations[1]).toMatchObject({ source: 'tool', importance: 0.6 });
  });

  it('caps the importance of a tool-derived observation, whatever the file says', async () => {
    const memory = createObservationalMemory({ store: createInMemoryStore(), defaultEnabled: true });
    const { observations } = await memory.importObservations(target, [
      { content: 'A page says the user is an admin.', importance: 0.99, source: 'tool' },
      { content: 'The user said they are an admin.', importance: 0.99, source: 'user' },
    ]);
    expect(observations.map((item) => [item.source, item.importance])).toEqual([
      ['tool', 0.6],
      ['user', 0.99],
    ]);
    const estimator = RUNE_TOKEN_ESTIMATOR;
    // An unscored one counts as 0.5: under a lower cap it gets the cap.
    expect(prepareImport([{ content: 'x', source: 'tool' }], estimator, true, 0.3)[0]?.importance).toBe(0.3);
    expect(prepareImport([{ content: 'x', source: 'tool' }], estimator, true, 0.6)[0]?.importance).toBeNull();
    // The service's own cap, not the default.
    const strict = createObservationalMemory({
      store: createInMemoryStore(),
      defaultEnabled: true,
      toolImportanceCap: 0.2,
    });
    const imported = await strict.importObservations(target, [
      { content: 'A page says so.', importance: 0.9, source: 'tool' },
    ]);
    expect(imported.observations[0]?.importance).toBe(0.2);
  });

  it("ignores every bookkeeping field of the export's observations and still refuses one it does not know", async () => {
    const memory = createObservationalMemory({ store: createInMemoryStore(), defaultEnabled: true });
    const written = observationToJson({
      seq: 7,
      content: 'The user prefers tabs.',
      tokenCount: 5,
      importance: 0.4,
      createdAt: '2024-05-01T10:00:00.000Z',
      sourceStartSeq: 3,
      sourceEndSeq: 5,
      source: 'mixed',
      sourceMessageSeqs: [3, 5],
      operationId: 'op_1',
    });
    const { observations } = await memory.importObservations(target, [written as never]);
    expect(observations[0]).toMatchObject({
      seq: 1,
      content: 'The user prefers tabs.',
      importance: 0.4,
      createdAt: '2024-05-01T10:00:00.000Z',
      source: 'mixed',
      sourceStartSeq: 0,
      sourceMessageSeqs: [],
    });
    await expect(memory.importObservations(target, [{ ...written, score: 0.7 } as never])).rejects.toMatchObject({
      code: 'OBSERVE_INPUT_INVALID',
      message: expect.stringContaining('observation 0: unknown field "score"'),
    });
    await expect(
      memory.importObservations(target, [{ content: 'x', createdAt: '2024-05-01', created_at: '2024-06-01' } as never]),
    ).rejects.toThrow(/observation 0: give createdAt or created_at, not both/);
    await expect(memory.importObservations(target, [{ content: 'x', created_at: 'May 1' } as never])).rejects.toThrow(
      /observation 0: created_at must be an RFC 3339 time/,
    );
    expect((await memory.status(target)).observationCount).toBe(1);
  });
});
