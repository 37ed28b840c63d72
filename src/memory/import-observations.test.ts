import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../storage/sqlite/index.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createObservationalMemory } from './observational-memory.js';
import { useSqliteTestFiles } from '../../test/support/sqlite-test-files.js';

const scope = { tenantId: 'acme', conversationId: 'c1', agentId: 'a1' };

describe('ObservationalMemory.importObservations', () => {
  const files = useSqliteTestFiles('import');

  it('appends in the order given, shows them in the next snippet and the status, and logs the import', async () => {
    const store = createSqliteStore({ path: files.path });
    try {
      const memory = createObservationalMemory({ store, defaultEnabled: true });
      const { observations, status } = await memory.importObservations(scope, [
        { content: 'The user prefers tabs.', importance: 0.9, createdAt: '2025-05-01T10:00:00Z' },
        { content: 'The user deploys on Fridays.', source: 'client', createdAt: '2025-05-01T12:30:00.25+02:00' },
      ]);
      expect(observations.map((item) => [item.seq, item.source, item.importance])).toEqual([
        [1, 'import', 0.9],
        [2, 'client', null],
      ]);
      expect(observations[0]?.createdAt).toBe('2025-05-01T10:00:00.000Z');
      expect(observations[1]?.createdAt).toBe('2025-05-01T10:30:00.250Z');
      expect(status.observationCount).toBe(2);
      const snippet = await memory.snippet(scope);
      expect(snippet).toContain('- [1] The user prefers tabs.');
      expect(snippet).toContain('- [2] The user deploys on Fridays.');
      const more = await memory.importObservations(scope, [{ content: 'The user moved to Lyon.' }]);
      expect(more.observations[0]?.seq).toBe(3);
      expect(await memory.snippet(scope)).toContain('- [3] The user moved to Lyon.');
      expect((await memory.inspect(scope)).operations.map((item) => [item.operationType, item.status])).toEqual([
        ['import', 'applied'],
        ['import', 'applied'],
      ]);
    } finally {
      await store.dispose();
    }
  });

  it('redacts secrets and strips invisible characters before storing', async () => {
    const store = createInMemoryStore();
    const memory = createObservationalMemory({ store, defaultEnabled: true });
    const { observations } = await memory.importObservations(scope, [
      { content: 'key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD\u200b here' },
    ]);
    expect(observations[0]?.content).not.toContain('sk-proj-abcdefghijklmnopqrstuvwxyz');
    expect(observations[0]?.content).not.toContain('\u200b');
  });

  it.each([
    [[{ content: '' }], /observation 0: content is empty/],
    [[{ content: 'ok' }, { content: 7 }], /observation 1: content must be a string/],
    [[{ content: 'ok', importance: 1.5 }], /observation 0: importance must be a number from 0 to 1/],
    [[{ content: 'ok', source: 'robot' }], /observation 0: source must be one of "user", .*"import", got "robot"/],
    [[{ content: 'ok', createdAt: 'yesterday' }], /observation 0: createdAt must be an RFC 3339 time/],
    // Date.parse read these as 2001-01-01 and 2001-05-01, and a time without an offset in the
    // server's time zone.
    [[{ content: 'ok', createdAt: '1' }], /observation 0: createdAt must be an RFC 3339 time/],
    [[{ content: 'ok', createdAt: 'May 1' }], /observation 0: createdAt must be an RFC 3339 time/],
    [[{ content: 'ok', createdAt: '2024-05-01T10:00' }], /observation 0: createdAt must be an RFC 3339 time/],
    [[{ content: 'ok', createdAt: '2024-02-30' }], /observation 0: createdAt must be an RFC 3339 time/],
    [[{ content: 'ok', createdAt: '+010000-01-01T00:00:00Z' }], /observation 0: createdAt must be an RFC 3339 time/],
    [[{ content: 'ok', createdAt: '-000001-01-01T00:00:00Z' }], /observation 0: createdAt must be an RFC 3339 time/],
    [
      [{ content: 'ok', createdAt: '9999-12-31T23:00:00-02:00' }],
      /observation 0: createdAt must fall in the years 0001/,
    ],
    [[{ content: 'ok', createdAt: '0000-06-01T00:00:00Z' }], /observation 0: createdAt must fall in the years 0001/],
    [[{ content: 'x'.repeat(20_000) }], /longer than 16384/],
    ['not an array', /observations must be an array/],
  ])('refuses %j, naming the observation and the field, and stores nothing', async (input, message) => {
    const store = createInMemoryStore();
    const memory = createObservationalMemory({ store, defaultEnabled: true });
    await expect(memory.importObservations(scope, input as never)).rejects.toMatchObject({
      code: 'OBSERVE_INPUT_INVALID',
      message: expect.stringMatching(message),
    });
    expect(await store.listObservations('acme/c1/a1').catch(() => [])).toEqual([]);
    expect((await memory.status(scope)).observationCount).toBe(0);
  });

  it('refuses a field it does not read, naming it, and shows NaN as NaN', async () => {
    const store = createInMemoryStore();
    const memory = createObservationalMemory({ store, defaultEnabled: true });
    await expect(
      memory.importObservations(scope, [
        { content: 'ok' },
        { content: 'dated', created: '2024-01-01T00:00:00Z' } as never,
      ]),
    ).rejects.toMatchObject({
      code: 'OBSERVE_INPUT_INVALID',
      message: expect.stringContaining('observation 1: unknown field "created"'),
    });
    await expect(
      memory.importObservations(scope, [{ content: 'x', createdat: '2024-01-01' } as never]),
    ).rejects.toThrow(/unknown field "createdat"/);
    await expect(memory.importObservations(scope, [{ content: 'x', importance: Number.NaN }])).rejects.toThrow(
      /got NaN/,
    );
    await memory.importObservations(scope, [{ content: 'first' }]);
    await expect(memory.correctObservation(scope, 1, { content: 'x', importance: Number.NaN })).rejects.toThrow(
      /got NaN/,
    );
    expect((await memory.status(scope)).observationCount).toBe(1);
  });
});
