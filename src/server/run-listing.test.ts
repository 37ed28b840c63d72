import { afterAll, describe, expect, it } from 'vitest';
import { createTestApp, useTestWorkspace } from '../../test/support/test-app.js';
import { createSqliteRunStore } from '../storage/sqlite/sqlite-run-store.js';
import type { RunStatus } from '../storage/run-store.js';
import type { AppOptions } from './app.js';

const WORKSPACE = useTestWorkspace('hm-run-listing-');

function setup(apiKeys?: AppOptions['apiKeys']) {
  const { request, runStore } = createTestApp({ workspace: WORKSPACE, ...(apiKeys ? { apiKeys } : {}) });
  const addRun = (runId: string, tenantId: string, conversationId: string, status: RunStatus = 'completed') =>
    runStore.createRun({
      runId,
      scope: { tenantId, conversationId, agentId: 'default' },
      status,
      prompt: `prompt of ${runId}`,
      model: '',
      systemPrompt: '',
      maxSteps: 5,
      output: null,
      error: null,
      steps: 0,
      usage: { inputTokens: 0, outputTokens: 0 },
      parentRunId: null,
    });
  return { request: (path: string, key?: string) => request(path, key ? { key } : {}), addRun };
}

const keys = [
  { key: 'key-a', tenantId: 'tenant-a' },
  { key: 'key-b', tenantId: 'tenant-b' },
];

describe('server: GET /v1/runs', () => {
  it('lists the key tenant runs newest first, paged by next_cursor, never another tenant', async () => {
    const { request, addRun } = setup(keys);
    for (let index = 1; index <= 5; index++) await addRun(`run_${index}`, 'tenant-a', index <= 3 ? 'c1' : 'c2');
    await addRun('run_9', 'tenant-b', 'c1');
    const first = await request('/v1/runs?limit=2', 'key-a');
    expect(first.status).toBe(200);
    expect(first.body['items'].map((run: any) => run.run_id)).toEqual(['run_5', 'run_4']);
    expect(first.body['items'][0]).toMatchObject({ tenant_id: 'tenant-a', conversation_id: 'c2', status: 'completed' });
    const second = await request(`/v1/runs?limit=2&cursor=${first.body['next_cursor']}`, 'key-a');
    const third = await request(`/v1/runs?limit=2&cursor=${second.body['next_cursor']}`, 'key-a');
    expect([...second.body['items'], ...third.body['items']].map((run: any) => run.run_id)).toEqual([
      'run_3',
      'run_2',
      'run_1',
    ]);
    expect(third.body['next_cursor']).toBeNull();
    // Naming another tenant is refused, not answered with the key's own runs as if they were its.
    const byB = await request('/v1/runs?tenant_id=tenant-a', 'key-b');
    expect(byB.status).toBe(400);
    expect(byB.body['error']).toMatchObject({
      code: 'invalid_request',
      message: 'tenant_id does not match the tenant of the API key',
    });
    const own = await request('/v1/runs?tenant_id=tenant-b', 'key-b');
    expect(own.body['items'].map((run: any) => run.run_id)).toEqual(['run_9']);
  });

  it('filters by conversation, agent and status', async () => {
    const { request, addRun } = setup();
    await addRun('run_1', 'default', 'c1', 'failed');
    await addRun('run_2', 'default', 'c1');
    await addRun('run_3', 'default', 'c2');
    const ids = async (query: string) =>
      (await request(`/v1/runs?${query}`)).body['items'].map((run: any) => run.run_id);
    expect(await ids('conversation_id=c1')).toEqual(['run_2', 'run_1']);
    expect(await ids('conversation_id=c1&status=failed')).toEqual(['run_1']);
    expect(await ids('agent_id=default&status=completed')).toEqual(['run_3', 'run_2']);
    expect(await ids('agent_id=other')).toEqual([]);
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=201', 'limit'],
    ['limit=x', 'limit'],
    ['status=done', 'status'],
    ['cursor=abc', 'cursor'],
    [
      `cursor=${Buffer.from(JSON.stringify({ t: '2024-02-30T00:00:00.000Z', r: 'run_1' })).toString('base64url')}`,
      'cursor',
    ],
    [
      `cursor=${Buffer.from(JSON.stringify({ t: '2024-02-01T00:00:00.000Z', r: 'run\u0000' })).toString('base64url')}`,
      'cursor',
    ],
    ['conversation_id=../x', 'conversation_id'],
  ])('answers ?%s with 400 naming %s', async (query, field) => {
    const { request } = setup();
    const response = await request(`/v1/runs?${query}`);
    expect(response.status).toBe(400);
    expect(JSON.stringify(response.body)).toContain(field);
  });
});

describe('server on SQLite: GET /v1/runs cursor times', () => {
  const runStore = createSqliteRunStore({ path: ':memory:' });
  afterAll(() => runStore.dispose());
  const { send } = createTestApp({ workspace: WORKSPACE, runStore });
  const cursorAt = (time: string) => Buffer.from(JSON.stringify({ t: time, r: 'run_1' })).toString('base64url');

  // Postgres's timestamptz refuses the first two; SQLite compared them as text and answered
  // an empty page, so a cursor of either is refused before any store is asked.
  it.each(['0000-01-01T00:00:00.000Z', '+275760-09-13T00:00:00.000Z', '2024-02-01T00:00:00Z'])(
    'answers a cursor at %s with 400 naming cursor',
    async (time) => {
      const response = await send(`/v1/runs?cursor=${cursorAt(time)}`);
      expect(response.status).toBe(400);
      expect(await response.text()).toContain('cursor');
    },
  );

  it('takes a cursor in year 1 and in year 9999', async () => {
    for (const time of ['0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z'])
      expect((await send(`/v1/runs?cursor=${cursorAt(time)}`)).status).toBe(200);
  });
});
