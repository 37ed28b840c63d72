/**
 * The operation log's payloads read alike on every store: an observe's `messages` is the
 * number of messages that observe stored (new ones, history left out) with the unobserved
 * tokens beside it, and a settings change logs `enabled` and its snake_case `config`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { memoryIdOf } from '../core/scope.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createPostgresStore } from '../storage/postgres/index.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import type { MemoryStore } from '../storage/store.js';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { createPostgresTestSchemas, postgresTestUrl } from '../../test/support/postgres-schema.js';
import { createObservationalMemory } from './observational-memory.js';

const scope = { tenantId: 't', conversationId: 'c', agentId: 'a' };
// Four, three, three and three tokens.
const transcript = [
  { id: 'a', role: 'user', content: 'one one one one' },
  { id: 'b', role: 'assistant', content: 'two two two' },
  { id: 'c', role: 'user', content: 'three three' },
  { id: 'd', role: 'assistant', content: 'four fourrr' },
] as const;

const url = postgresTestUrl();
const schemas = url ? createPostgresTestSchemas(url) : undefined;
const directories: string[] = [];

const stores: Array<[string, () => Promise<MemoryStore> | MemoryStore, boolean]> = [
  ['in-memory', () => createInMemoryStore(), true],
  [
    'sqlite',
    () => {
      const directory = mkdtempSync(join(tmpdir(), 'observe-payload-'));
      directories.push(directory);
      return createSqliteStore({ path: join(directory, 'state.db') });
    },
    true,
  ],
  ['postgres', () => createPostgresStore({ connectionString: url ?? '', schema: schemas?.next() ?? '' }), !!url],
];

afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});
afterAll(async () => {
  await schemas?.dropAll();
});

describe.each(stores)('operation payloads: %s', (_name, create, available) => {
  it.skipIf(!available)(
    'an observe logs the messages it stored, not the transcript, and the unobserved tokens',
    async () => {
      const store = await create();
      try {
        const memory = createObservationalMemory({
          store,
          model: createMockLanguageModel('IMPORTANCE:0.9\nfact'),
          defaultEnabled: true,
          defaults: { observeMinTokens: 5 },
        });
        await memory.observe({ scope, runId: 'r1', messages: transcript.slice(0, 2) });
        // Three tokens: below the threshold, so stored without an observe.
        await memory.observe({ scope, runId: 'r2', messages: transcript.slice(0, 3) });
        await memory.observe({ scope, runId: 'r3', messages: transcript.slice(0, 4) });
        const log = await store.listOperations(memoryIdOf(scope));
        expect(log.map((item) => [item.operationType, item.status, item.payload])).toEqual([
          ['observe', 'applied', { messages: 2, unobserved_tokens: 7 }],
          ['observe', 'applied', { messages: 1, unobserved_tokens: 6 }],
        ]);
      } finally {
        await store.dispose();
      }
    },
  );

  it.skipIf(!available)('a settings change logs enabled and its config in snake_case', async () => {
    const store = await create();
    try {
      const memory = createObservationalMemory({ store, model: createMockLanguageModel() });
      await memory.setEnabled(scope, true, { observeMinTokens: 1 });
      await memory.setEnabled(scope, false);
      expect((await store.listOperations(memoryIdOf(scope))).map((item) => item.payload)).toEqual([
        { enabled: true, config: { observe_min_tokens: 1 } },
        { enabled: false },
      ]);
    } finally {
      await store.dispose();
    }
  });
});
