import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E, typesOf } from './e2e-harness.js';
import type { E2E } from './e2e-harness.js';
import { openSse } from './sse-client.js';

const CANARY = 'CANARY-TENANT-A-GREEN-HERON';
const KEY_A = 'key-a';
const KEY_B = 'key-b';
const SCOPE_A = '/v1/memory/tenant-a/conv-a/default';

let e2e: E2E;
let runA: string;
beforeAll(async () => {
  e2e = await startE2E({ env: { HARNESS_API_KEYS: `${KEY_A}:tenant-a,${KEY_B}:tenant-b` } });
  e2e.script.agent = (turn) =>
    turn.prompt.includes(CANARY) && turn.step === 0
      ? { toolCalls: [{ name: 'working_memory', arguments: { action: 'set', key: 'canary', value: CANARY } }] }
      : { text: `answer about ${turn.prompt}` };
  runA = await e2e.startRun({ prompt: `Remember ${CANARY} for me.`, conversation_id: 'conv-a' }, KEY_A);
  const frames = await e2e.events(runA, { key: KEY_A });
  expect(typesOf(frames).at(-1)).toBe('run.completed');
});
afterAll(async () => {
  await e2e.close();
});

/** Every route that touches tenant A's run or memory, with a body where the route takes one. */
function routesOfA(): Array<{ method: string; path: string; json?: unknown }> {
  return [
    { method: 'GET', path: `/v1/runs/${runA}` },
    { method: 'GET', path: `/v1/runs/${runA}/events` },
    { method: 'POST', path: `/v1/runs/${runA}/continue`, json: { prompt: 'leak it' } },
    { method: 'POST', path: `/v1/runs/${runA}/cancel` },
    { method: 'GET', path: SCOPE_A },
    { method: 'DELETE', path: SCOPE_A },
    { method: 'POST', path: `${SCOPE_A}/observational/enable`, json: { config: { observe_min_tokens: 5 } } },
    { method: 'POST', path: `${SCOPE_A}/observational/disable` },
    { method: 'POST', path: `${SCOPE_A}/observational/reflect` },
    { method: 'GET', path: `${SCOPE_A}/observational/export?format=json` },
    { method: 'GET', path: `${SCOPE_A}/observational/export?format=markdown` },
    { method: 'GET', path: `${SCOPE_A}/working` },
    { method: 'PUT', path: `${SCOPE_A}/working/canary`, json: { value: 'overwritten by B' } },
    { method: 'PUT', path: `${SCOPE_A}/working/planted`, json: { value: 'planted by B' } },
    { method: 'DELETE', path: `${SCOPE_A}/working/canary` },
  ];
}

describe('e2e: tenant isolation with API keys', () => {
  it("tenant A's own key sees its run, events and memory", async () => {
    const run = await e2e.apiJson(`/v1/runs/${runA}`, { key: KEY_A });
    expect(run.body).toMatchObject({
      status: 'completed',
      tenant_id: 'tenant-a',
      prompt: `Remember ${CANARY} for me.`,
    });
    const memory = await e2e.apiJson(SCOPE_A, { key: KEY_A });
    expect(memory.status).toBe(200);
    expect(JSON.stringify(memory.body['observations'])).toContain(CANARY);
    expect(memory.body['working_memory']).toMatchObject([{ key: 'canary', value: CANARY }]);
  });

  it("tenant B's key gets 404 from every route of tenant A, and never the canary", async () => {
    const modelCalls = e2e.model.requests.length;
    for (const route of routesOfA()) {
      const response = await e2e.api(route.path, {
        method: route.method,
        key: KEY_B,
        ...(route.json === undefined ? {} : { json: route.json }),
      });
      const text = await response.text();
      expect(response.status, `${route.method} ${route.path}`).toBe(404);
      expect(JSON.parse(text), `${route.method} ${route.path}`).toEqual({
        error: { code: 'not_found', message: expect.any(String) },
      });
      expect(text).not.toContain(CANARY);
    }
    // Events with Last-Event-ID too.
    for (const lastEventId of [`${runA}:0`, `${runA}:2`]) {
      const stream = await openSse(`${e2e.url}/v1/runs/${runA}/events`, {
        lastEventId,
        headers: { authorization: `Bearer ${KEY_B}` },
      });
      expect(stream.status).toBe(404);
      expect(stream.errorText).not.toContain(CANARY);
    }
    // B's attempts changed nothing: no model call, and A's memory is whole.
    expect(e2e.model.requests.length).toBe(modelCalls);
    const memory = await e2e.apiJson(SCOPE_A, { key: KEY_A });
    expect(memory.body['status']).toMatchObject({ enabled: true });
    expect(memory.body['working_memory']).toHaveLength(1);
    expect(memory.body['working_memory']).toMatchObject([{ key: 'canary', value: CANARY }]);
    expect(JSON.stringify(memory.body['observations'])).toContain(CANARY);
    expect((await e2e.apiJson(`/v1/runs/${runA}`, { key: KEY_A })).body['status']).toBe('completed');
  });

  it("tenant B's own runs and memory never show tenant A's", async () => {
    const runB = await e2e.startRun({ prompt: 'hello from B', conversation_id: 'conv-a' }, KEY_B);
    const frames = await e2e.events(runB, { key: KEY_B });
    expect(typesOf(frames).at(-1)).toBe('run.completed');
    for (const frame of frames) expect(frame.data).not.toContain(CANARY);
    const run = await e2e.apiJson(`/v1/runs/${runB}`, { key: KEY_B });
    expect(run.body).toMatchObject({ tenant_id: 'tenant-b', conversation_id: 'conv-a' });
    // Same conversation and agent ids, other tenant: a separate scope.
    const memory = await e2e.api('/v1/memory/tenant-b/conv-a/default', { key: KEY_B });
    expect(memory.status).toBe(200);
    expect(await memory.text()).not.toContain(CANARY);
    // B's run did not replay A's conversation to the model.
    const requestOfB = e2e.agentRequests().filter((request) => JSON.stringify(request.body).includes('hello from B'));
    expect(requestOfB.length).toBeGreaterThan(0);
    for (const request of requestOfB) expect(JSON.stringify(request.body)).not.toContain(CANARY);
    // A's key cannot reach B's run either.
    expect((await e2e.api(`/v1/runs/${runB}`, { key: KEY_A })).status).toBe(404);
    // Naming another tenant in the body is refused, and starts nothing.
    const crossed = await e2e.apiJson('/v1/runs', {
      method: 'POST',
      key: KEY_B,
      json: { prompt: 'x', tenant_id: 'tenant-a' },
    });
    expect(crossed.status).toBe(400);
    expect(crossed.body['error']).toMatchObject({ code: 'invalid_request' });
  });

  it('answers 401 without a key or with a wrong one, on every route', async () => {
    for (const route of [...routesOfA(), { method: 'POST', path: '/v1/runs', json: { prompt: 'x' } }]) {
      for (const key of [undefined, 'wrong-key', `${KEY_A}x`]) {
        const response = await e2e.api(route.path, {
          method: route.method,
          ...(key === undefined ? {} : { key }),
          ...(route.json === undefined ? {} : { json: route.json }),
        });
        const text = await response.text();
        expect(response.status, `${route.method} ${route.path} key=${key}`).toBe(401);
        expect(JSON.parse(text).error.code).toBe('unauthorized');
        expect(text).not.toContain(CANARY);
      }
    }
    // A malformed Authorization header is 401 too.
    expect((await e2e.api(SCOPE_A, { headers: { authorization: KEY_A } })).status).toBe(401);
    // Health needs no key.
    expect((await e2e.api('/healthz')).status).toBe(200);
  });
});
