/**
 * Ids and cursors no store could hold are answered as what they are (not found, a bad
 * request) before Postgres is asked: it refuses a U+0000 with an error, which was a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { createPostgresTestSchemas, postgresTestUrl } from '../../test/support/postgres-schema.js';
import type { PostgresTestSchemas } from '../../test/support/postgres-schema.js';
import { useTestWorkspace } from '../../test/support/test-app.js';
import { createAgentRunner } from '../agent/agent-runner.js';
import { createObservationalMemory } from '../memory/observational-memory.js';
import { createWorkingMemory } from '../memory/working-memory.js';
import { createLocalEventHub } from '../storage/local-event-hub.js';
import { createPostgresRunStore } from '../storage/postgres/postgres-run-store.js';
import { createPostgresStore } from '../storage/postgres/postgres-store.js';
import type { RunStore } from '../storage/run-store.js';
import type { MemoryStore } from '../storage/store.js';
import { createApp } from './app.js';

const url = postgresTestUrl();
const workspace = useTestWorkspace('hm-pg-routes-');

describe.skipIf(!url)('server on Postgres: ids and cursors no store could hold', () => {
  let schemas: PostgresTestSchemas;
  let runStore: RunStore;
  let store: MemoryStore;
  let app: ReturnType<typeof createApp>;
  beforeAll(async () => {
    schemas = createPostgresTestSchemas(url ?? '');
    runStore = await createPostgresRunStore({ connectionString: url ?? '', schema: schemas.next(), max: 2 });
    store = await createPostgresStore({ connectionString: url ?? '', schema: schemas.next(), max: 2 });
    const observationalMemory = createObservationalMemory({ store });
    const workingMemory = createWorkingMemory({ store });
    const hub = createLocalEventHub();
    const runner = createAgentRunner({
      model: createMockLanguageModel('answer'),
      observationalMemory,
      workingMemory,
      runStore,
      hub,
      workspace,
      memoryTools: [],
    });
    app = createApp({ runner, runStore, hub, observationalMemory, workingMemory });
  });
  afterAll(async () => {
    await runStore?.dispose();
    await store?.dispose();
    await schemas?.dropAll();
  });

  it.each([
    ['GET', '/v1/runs/run%00x', 404],
    ['GET', '/v1/runs/run%00x/events', 404],
    ['POST', '/v1/runs/run%00x/cancel', 404],
    ['POST', '/v1/memory/default/c/default/operations/op%00x/retry', 404],
    ['POST', `/v1/memory/default/c/default/operations/${'o'.repeat(201)}/retry`, 400],
    ['GET', `/v1/memory?cursor=${Buffer.from(JSON.stringify({ c: 'a\u0000', a: 'b' })).toString('base64url')}`, 400],
  ])('%s %s answers %i', async (method, path, status) => {
    const response = await app.request(path, { method, headers: { 'content-type': 'application/json' } });
    expect(response.status).toBe(status);
    expect(await response.text()).not.toMatch(/SQLSTATE|Postgres/);
  });

  // timestamptz refuses year 0 (SQLSTATE 22008) and a signed six-digit year (22009),
  // which JavaScript's own ISO form accepts and prints back unchanged.
  it.each(['0000-01-01T00:00:00.000Z', '+275760-09-13T00:00:00.000Z', '-000001-01-01T00:00:00.000Z'])(
    'answers a run-list cursor at %s with 400 naming cursor',
    async (time) => {
      const cursor = Buffer.from(JSON.stringify({ t: time, r: 'run_x' })).toString('base64url');
      const response = await app.request(`/v1/runs?cursor=${cursor}`);
      expect(response.status).toBe(400);
      expect(await response.text()).toContain('cursor');
    },
  );

  it('takes a run-list cursor in year 1 and in year 9999', async () => {
    for (const time of ['0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z']) {
      const cursor = Buffer.from(JSON.stringify({ t: time, r: 'run_x' })).toString('base64url');
      const response = await app.request(`/v1/runs?cursor=${cursor}`);
      expect(response.status).toBe(200);
    }
  });

  it('reads the observation and operation cursors at their largest as a page, not a store failure', async () => {
    const enabled = await app.request('/v1/memory/default/c/default/observational/enable', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(enabled.status).toBe(200);
    const largest = (key: string) =>
      Buffer.from(JSON.stringify({ [key]: Number.MAX_SAFE_INTEGER })).toString('base64url');
    for (const path of [
      `/v1/memory/default/c/default/observations?cursor=${largest('s')}`,
      `/v1/memory/default/c/default/operations?cursor=${largest('q')}`,
    ]) {
      const response = await app.request(path);
      expect(response.status).toBe(200);
    }
  });
});
