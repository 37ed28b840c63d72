import { describe, expect, it, vi } from 'vitest';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { MCP_LISTEN_HEADERS, mcpListenBody } from '../../test/support/mcp-listen.js';
import { createTestApp, useTestWorkspace } from '../../test/support/test-app.js';
import type { AppOptions } from './app.js';
import { createTenantLimits } from './tenant-limits.js';
import type { TenantLimitsOptions } from './tenant-limits.js';

const WORKSPACE = useTestWorkspace('hm-limits-');

function setup(limits: TenantLimitsOptions, apiKeys?: AppOptions['apiKeys']) {
  let clock = 1_000_000;
  const agentModel = createMockLanguageModel('final answer');
  const { send: request, runner } = createTestApp({
    workspace: WORKSPACE,
    model: agentModel,
    app: { heartbeatMs: 50, limits: createTenantLimits({ refusalDelayMs: 0, ...limits, now: () => clock }) },
    ...(apiKeys ? { apiKeys } : {}),
  });
  /** A model answer that waits until released. */
  const holdNextAnswer = (): (() => void) => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    agentModel.enqueue(async () => {
      await held;
      return 'released';
    });
    return release;
  };
  return { request, runner, holdNextAnswer, advance: (ms: number) => void (clock += ms) };
}

/** Checks a 429 and returns its message. */
async function expectTooMany(response: Response, code: string, retryAfter: string): Promise<string> {
  expect(response.status).toBe(429);
  expect(response.headers.get('retry-after')).toBe(retryAfter);
  const { error } = (await response.json()) as { error: { code: string; message: string } };
  expect(error.code).toBe(code);
  return error.message;
}

const put = (tenant: string, key: string) => ({
  path: `/v1/memory/${tenant}/conv/agent/working/${key}`,
  init: { method: 'PUT', body: JSON.stringify({ value: 1 }) },
});

describe('tenant limits: writes per second', () => {
  it('answers 429 rate_limited with Retry-After past the bucket, per tenant, and refills with time', async () => {
    const { request, advance } = setup({ maxWritesPerSecond: 2 });
    for (const key of ['a', 'b'])
      expect((await request(put('acme', key).path, put('acme', key).init)).status).toBe(200);
    await expectTooMany(await request(put('acme', 'c').path, put('acme', 'c').init), 'rate_limited', '1');
    // Reads are not counted, and another tenant has its own bucket.
    expect((await request('/v1/memory/acme/conv/agent/working')).status).toBe(200);
    expect((await request(put('globex', 'a').path, put('globex', 'a').init)).status).toBe(200);
    advance(500);
    expect((await request(put('acme', 'c').path, put('acme', 'c').init)).status).toBe(200);
    await expectTooMany(await request(put('acme', 'd').path, put('acme', 'd').init), 'rate_limited', '1');
  });

  it('counts reads with API keys in a bucket of their own, past which they are 429 rate_limited', async () => {
    const keys = [{ key: 'key-one', tenantId: 'acme' }];
    const { request, advance } = setup({ maxReadsPerSecond: 2, maxWritesPerSecond: 2 }, keys);
    const read = () => request('/v1/memory/acme/conv/agent/working', { key: 'key-one' });
    for (let index = 0; index < 2; index++) expect((await read()).status).toBe(200);
    const refused = await read();
    await expectTooMany(refused, 'rate_limited', '1');
    // Writes have their own bucket.
    expect((await request(put('acme', 'a').path, { ...put('acme', 'a').init, key: 'key-one' })).status).toBe(200);
    advance(500);
    expect((await read()).status).toBe(200);
  });

  it('is not emptied by a clock that steps back: writes go on at the rate', async () => {
    const { request, advance } = setup({ maxWritesPerSecond: 2 });
    expect((await request(put('acme', 'a').path, put('acme', 'a').init)).status).toBe(200);
    advance(-3_600_000);
    expect((await request(put('acme', 'b').path, put('acme', 'b').init)).status).toBe(200);
    await expectTooMany(await request(put('acme', 'c').path, put('acme', 'c').init), 'rate_limited', '1');
    advance(500);
    expect((await request(put('acme', 'c').path, put('acme', 'c').init)).status).toBe(200);
  });

  it('counts writes per API key, before the body is read', async () => {
    const { request } = setup({ maxWritesPerSecond: 1 }, [
      { key: 'key-one', tenantId: 'acme' },
      { key: 'key-two', tenantId: 'acme' },
    ]);
    expect((await request(put('acme', 'a').path, { ...put('acme', 'a').init, key: 'key-one' })).status).toBe(200);
    const refused = await request('/v1/memory/acme/conv/agent/working/b', {
      method: 'PUT',
      body: '{not json',
      key: 'key-one',
    });
    await expectTooMany(refused, 'rate_limited', '1');
    expect((await request(put('acme', 'b').path, { ...put('acme', 'b').init, key: 'key-two' })).status).toBe(200);
  });
});

describe('tenant limits: refusals', () => {
  it('holds a refusal for refusalDelayMs before answering it', async () => {
    vi.useFakeTimers();
    try {
      let waited = false;
      const pause = createTenantLimits({ refusalDelayMs: 40 })
        .pauseBeforeRefusal()
        .then(() => (waited = true));
      await vi.advanceTimersByTimeAsync(39);
      expect(waited).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await pause;
      expect(waited).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('tenant limits: concurrent runs and event streams', () => {
  it('answers 429 too_many_runs at the cap, for that tenant only, until a run ends', async () => {
    const { request, runner, holdNextAnswer } = setup({ maxConcurrentRuns: 1 });
    const release = holdNextAnswer();
    const first = (await (
      await request('/v1/runs', { method: 'POST', body: JSON.stringify({ prompt: 'one', tenant_id: 'acme' }) })
    ).json()) as { run_id: string };
    // Without keys the limit is the tenant's, and the refusal says so.
    expect(
      await expectTooMany(
        await request('/v1/runs', { method: 'POST', body: JSON.stringify({ prompt: 'two', tenant_id: 'acme' }) }),
        'too_many_runs',
        '1',
      ),
    ).toBe('1 run is already queued or running for tenant acme; retry when one ends');
    await expectTooMany(
      await request(`/v1/runs/${first.run_id}/continue`, { method: 'POST', body: JSON.stringify({ prompt: 'two' }) }),
      'too_many_runs',
      '1',
    );
    const other = await request('/v1/runs', {
      method: 'POST',
      body: JSON.stringify({ prompt: 'three', tenant_id: 'globex' }),
    });
    expect(other.status).toBe(202);
    release();
    await runner.settle();
    expect(
      (await request('/v1/runs', { method: 'POST', body: JSON.stringify({ prompt: 'four', tenant_id: 'acme' }) }))
        .status,
    ).toBe(202);
    await runner.settle();
  });

  it('answers 429 too_many_streams at the cap, until a stream closes', async () => {
    const { request, runner, holdNextAnswer } = setup({ maxSseConnections: 1 });
    const release = holdNextAnswer();
    const { run_id: runId } = (await (
      await request('/v1/runs', { method: 'POST', body: JSON.stringify({ prompt: 'one', tenant_id: 'acme' }) })
    ).json()) as { run_id: string };
    const open = await request(`/v1/runs/${runId}/events`);
    expect(open.status).toBe(200);
    await expectTooMany(await request(`/v1/runs/${runId}/events`), 'too_many_streams', '1');
    release();
    await runner.wait(runId);
    // The first stream ends after run.completed, and its slot with it.
    expect(await open.text()).toContain('event: run.completed');
    const again = await request(`/v1/runs/${runId}/events`);
    expect(again.status).toBe(200);
    expect(await again.text()).toContain('event: run.completed');
  });
});

describe('tenant limits: /mcp', () => {
  const KEYS = [{ key: 'key-one', tenantId: 'acme' }];
  it("counts every POST against the key's write rate, before the body is read", async () => {
    const { request } = setup({ maxWritesPerSecond: 2 }, KEYS);
    for (let index = 0; index < 2; index += 1)
      expect(
        (await request('/mcp', { method: 'POST', headers: MCP_LISTEN_HEADERS, body: '{', key: 'key-one' })).status,
      ).not.toBe(429);
    await expectTooMany(
      await request('/mcp', { method: 'POST', headers: MCP_LISTEN_HEADERS, body: mcpListenBody(3), key: 'key-one' }),
      'rate_limited',
      '1',
    );
  });

  it('counts every message of a JSON-RPC batch, so a batch of calls costs what as many POSTs do', async () => {
    const { request } = setup({ maxWritesPerSecond: 3 }, KEYS);
    const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/list', params: {} });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    await expectTooMany(
      await request('/mcp', { method: 'POST', headers, body: JSON.stringify([1, 2, 3, 4].map(call)), key: 'key-one' }),
      'rate_limited',
      '1',
    );
  });

  it('answers a batch within the rate from the body read once, and a body that is not JSON with the parse error', async () => {
    const { request } = setup({ maxWritesPerSecond: 10 }, KEYS);
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const broken = await request('/mcp', {
      method: 'POST',
      headers,
      body: '{"jsonrpc": "2.0", "id": 1,',
      key: 'key-one',
    });
    expect(broken.status).toBe(400);
    expect(JSON.stringify(await broken.json())).toContain('-32700');
    const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/list', params: {} });
    const listed = await request('/mcp', {
      method: 'POST',
      headers,
      body: JSON.stringify([call(1), call(2)]),
      key: 'key-one',
    });
    expect(listed.status).toBe(200);
    const text = await listed.text();
    expect(text).toContain('working_memory');
    expect(text).toContain('"id":2');
  });

  it("holds one of the key's event streams while an answer streams, and frees it when the client goes", async () => {
    const { request } = setup({ maxSseConnections: 1, maxWritesPerSecond: 100 }, KEYS);
    const first = await request('/mcp', {
      method: 'POST',
      headers: MCP_LISTEN_HEADERS,
      body: mcpListenBody(1),
      key: 'key-one',
    });
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(
      await expectTooMany(
        await request('/mcp', { method: 'POST', headers: MCP_LISTEN_HEADERS, body: mcpListenBody(2), key: 'key-one' }),
        'too_many_streams',
        '1',
      ),
    ).toContain('already open for this API key');
    await first.body?.cancel();
    const third = await request('/mcp', {
      method: 'POST',
      headers: MCP_LISTEN_HEADERS,
      body: mcpListenBody(3),
      key: 'key-one',
    });
    expect(third.status).toBe(200);
    await third.body?.cancel();
  });
});

describe('tenant limits: /mcp without API keys', () => {
  it('counts every POST and each streamed answer against the tenant the calls run as', async () => {
    const { request } = setup({ maxWritesPerSecond: 2, maxSseConnections: 1 });
    const first = await request('/mcp', { method: 'POST', headers: MCP_LISTEN_HEADERS, body: mcpListenBody(1) });
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await expectTooMany(
      await request('/mcp', { method: 'POST', headers: MCP_LISTEN_HEADERS, body: mcpListenBody(2) }),
      'too_many_streams',
      '1',
    );
    await first.body?.cancel();
    await expectTooMany(
      await request('/mcp', { method: 'POST', headers: MCP_LISTEN_HEADERS, body: mcpListenBody(3) }),
      'rate_limited',
      '1',
    );
  });
});
