import { request } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E, typesOf } from './e2e-harness.js';
import type { E2E } from './e2e-harness.js';

const MIB = 1024 * 1024;
const LONG_ID = 'a'.repeat(129);
const SCOPE = { tenant_id: 'bad-tenant', conversation_id: 'bad-conv', agent_id: 'bad-agent' };
const SCOPE_PATH = '/v1/memory/bad-tenant/bad-conv/bad-agent';

let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E();
});
afterAll(async () => {
  await e2e.close();
});

/** Sends a request and checks the status and the `{error: {code, message}}` body. */
async function expectError(
  path: string,
  init: { method: string; body?: string; headers?: Record<string, string> },
  status: number,
  code: string,
  mentions?: string,
): Promise<string> {
  const response = await e2e.api(path, {
    method: init.method,
    headers: { 'content-type': 'application/json', ...init.headers },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  const label = `${init.method} ${path} ${typeof init.body === 'string' ? init.body.slice(0, 80) : ''}`;
  expect(response.status, label).toBe(status);
  expect(response.headers.get('content-type'), label).toContain('application/json');
  const body = (await response.json()) as { error: { code: string; message: string } };
  expect(Object.keys(body), label).toEqual(['error']);
  expect(Object.keys(body.error).sort(), label).toEqual(['code', 'message']);
  expect(body.error.code, label).toBe(code);
  expect(body.error.message.length, label).toBeGreaterThan(10);
  if (mentions !== undefined) expect(body.error.message, label).toContain(mentions);
  return body.error.message;
}

/** The memory scope as GET shows it: nothing stored. */
async function expectEmptyScope(path: string): Promise<void> {
  const memory = await e2e.apiJson(path);
  expect(memory.status, path).toBe(200);
  expect(memory.body['observations'], path).toEqual([]);
  expect(memory.body['working_memory'], path).toEqual([]);
  expect(memory.body['status'], path).toMatchObject({ observation_count: 0 });
  expect(memory.body['snippets'], path).toEqual({ working_memory: '', observational_memory: '' });
}

/**
 * An oversized request on its own connection (node:http, no agent), so the server closing the
 * connection after its 413 cannot break a pooled keep-alive socket of a later request.
 * `chunked` sends no Content-Length, in 64 KiB chunks.
 */
function sendLarge(
  method: string,
  path: string,
  body: Buffer,
  chunked: boolean,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      ...(chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(body.length) }),
    };
    const outgoing = request(`${e2e.url}${path}`, { method, agent: false, headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (data: string) => (text += data));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      response.on('error', reject);
    });
    outgoing.on('error', reject);
    if (!chunked) return void outgoing.end(body);
    let offset = 0;
    const pump = (): void => {
      while (offset < body.length) {
        const more = outgoing.write(body.subarray(offset, offset + 64 * 1024));
        offset += 64 * 1024;
        if (!more) return void outgoing.once('drain', pump);
      }
      outgoing.end();
    };
    pump();
  });
}

async function expectTooLarge(method: string, path: string, body: Buffer, chunked: boolean): Promise<void> {
  const { status, text } = await sendLarge(method, path, body, chunked);
  expect(status, `${method} ${path} chunked=${chunked}`).toBe(413);
  expect(JSON.parse(text)).toEqual({
    error: { code: 'body_too_large', message: `request body is larger than ${MIB} bytes` },
  });
}

/**
 * A client that writes its whole request (head and body) before reading anything, as many
 * simple clients do, then reads until the server closes. Resolves with the raw response,
 * or with the socket error it met instead (a broken pipe or a reset).
 */
function writeAllThenRead(path: string, body: Buffer, chunked: boolean): Promise<{ response: string; error?: string }> {
  const { hostname, port } = new URL(e2e.url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const received: Buffer[] = [];
    let error: string | undefined;
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.on('error', (caught: NodeJS.ErrnoException) => (error = caught.code ?? caught.message));
    socket.on('close', () =>
      resolve({ response: Buffer.concat(received).toString('utf8'), ...(error ? { error } : {}) }),
    );
    socket.on('connect', () => {
      const length = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${body.length}`;
      socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${length}\r\n\r\n`);
      const pieces = chunked
        ? [Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]
        : [body];
      let index = 0;
      const pump = (): void => {
        while (index < pieces.length) {
          const more = socket.write(pieces[index++]!);
          if (!more) return void socket.once('drain', pump);
        }
        // Only now, with everything written, does this client start reading.
        socket.end();
      };
      pump();
    });
  });
}

describe('e2e: bad input over HTTP', () => {
  it('refuses bad run requests with 400 and a message naming the problem, and stores nothing', async () => {
    const post = (body: string, status: number, code: string, mentions?: string) =>
      expectError('/v1/runs', { method: 'POST', body }, status, code, mentions);
    await post('{"prompt": ', 400, 'invalid_json', 'not valid JSON');
    await post('not json at all', 400, 'invalid_json');
    await post(JSON.stringify({ prompt: 'x', surprise: 1, ...SCOPE }), 400, 'invalid_request', 'surprise');
    await post(JSON.stringify({ prompt: 5, ...SCOPE }), 400, 'invalid_request', 'prompt');
    await post(JSON.stringify({ prompt: 'x', max_steps: '3', ...SCOPE }), 400, 'invalid_request', 'max_steps');
    await post(JSON.stringify({ prompt: 'x', max_steps: 0, ...SCOPE }), 400, 'invalid_request', 'max_steps');
    await post(JSON.stringify({ prompt: 'x', max_steps: 1.5, ...SCOPE }), 400, 'invalid_request', 'max_steps');
    await post(
      JSON.stringify({ prompt: 'x', ...SCOPE, conversation_id: 7 }),
      400,
      'invalid_request',
      'conversation_id',
    );
    await post(JSON.stringify([{ prompt: 'x' }]), 400, 'invalid_request');
    await post(JSON.stringify({ ...SCOPE }), 400, 'invalid_request', 'prompt');
    await post(JSON.stringify({ prompt: '   ', ...SCOPE }), 400, 'invalid_request', 'prompt');
    await post(JSON.stringify({ prompt: 'x'.repeat(200_001), ...SCOPE }), 400, 'invalid_request', '200000');
    await post(
      JSON.stringify({ prompt: 'x', system_prompt: 'x'.repeat(100_001), ...SCOPE }),
      400,
      'invalid_request',
      'system_prompt',
    );
    await post(JSON.stringify({ prompt: 'x', ...SCOPE, tenant_id: '../x' }), 400, 'scope_invalid', 'tenant');
    await post(JSON.stringify({ prompt: 'x', ...SCOPE, conversation_id: LONG_ID }), 400, 'scope_invalid', '128');
    await post(JSON.stringify({ prompt: 'x', ...SCOPE, agent_id: 'has space' }), 400, 'scope_invalid', 'agent');

    expect(e2e.model.requests).toHaveLength(0);
    expect(e2e.countRows('harness_runs')).toBe(0);
    expect(e2e.countRows('harness_run_events')).toBe(0);
    await expectEmptyScope(SCOPE_PATH);
  });

  it('refuses bodies over 1 MiB with 413 before any work', async () => {
    const oversizedRun = Buffer.from(JSON.stringify({ prompt: 'x'.repeat(MIB + 16), ...SCOPE }));
    const oversizedValue = Buffer.from(JSON.stringify({ value: 'x'.repeat(MIB + 16) }));
    for (const chunked of [false, true]) {
      await expectTooLarge('POST', '/v1/runs', oversizedRun, chunked);
      await expectTooLarge('PUT', `${SCOPE_PATH}/working/big`, oversizedValue, chunked);
      await expectTooLarge('POST', `${SCOPE_PATH}/observational/enable`, oversizedValue, chunked);
    }
    // Far over the limit, too.
    await expectTooLarge('POST', '/v1/runs', Buffer.alloc(16 * MIB, 0x20), false);

    expect(e2e.model.requests).toHaveLength(0);
    expect(e2e.countRows('harness_runs')).toBe(0);
    expect(e2e.countRows('working_memory_entries')).toBe(0);
    await expectEmptyScope(SCOPE_PATH);
  });

  it('delivers the 413 to a client that writes its whole body before reading, and to fetch', async () => {
    for (const chunked of [false, true]) {
      const { response, error } = await writeAllThenRead('/v1/runs', Buffer.alloc(8 * MIB, 0x20), chunked);
      expect(error, `chunked=${chunked}`).toBeUndefined();
      const [head = '', body] = response.split('\r\n\r\n');
      expect(head.split('\r\n')[0]).toBe('HTTP/1.1 413 Payload Too Large');
      expect(head.toLowerCase()).toContain('\r\nconnection: close');
      expect(JSON.parse(body ?? '')).toEqual({
        error: { code: 'body_too_large', message: `request body is larger than ${MIB} bytes` },
      });
    }
    const response = await fetch(`${e2e.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.alloc(4 * MIB, 0x20),
    });
    expect(response.status).toBe(413);
    expect(response.headers.get('connection')).toBe('close');
    expect(await response.json()).toEqual({
      error: { code: 'body_too_large', message: `request body is larger than ${MIB} bytes` },
    });
    expect(e2e.countRows('harness_runs')).toBe(0);
  });

  it('refuses bad memory requests and invalid scope ids, and stores nothing', async () => {
    await expectError(`${SCOPE_PATH}/working/plan`, { method: 'PUT', body: '{"value": ' }, 400, 'invalid_json');
    await expectError(
      `${SCOPE_PATH}/working/plan`,
      { method: 'PUT', body: JSON.stringify({ value: 1, extra: true }) },
      400,
      'invalid_request',
      'extra',
    );
    await expectError(
      `${SCOPE_PATH}/working/${'k'.repeat(300)}`,
      { method: 'PUT', body: JSON.stringify({ value: 1 }) },
      400,
      'working_memory_invalid',
    );
    await expectError(
      `${SCOPE_PATH}/observational/enable`,
      { method: 'POST', body: JSON.stringify({ config: { observe_min_tokens: 'ten' } }) },
      400,
      'invalid_request',
      'observe_min_tokens',
    );
    await expectError(
      `${SCOPE_PATH}/observational/enable`,
      { method: 'POST', body: JSON.stringify({ config: { observe_min_tokens: -1 } }) },
      400,
      'invalid_request',
      'observe_min_tokens',
    );
    await expectError(
      `${SCOPE_PATH}/observational/enable`,
      { method: 'POST', body: JSON.stringify({ config: { unknown_knob: 1 } }) },
      400,
      'invalid_request',
      'unknown_knob',
    );
    await expectError(
      `${SCOPE_PATH}/observational/disable`,
      { method: 'POST', body: JSON.stringify({ now: true }) },
      400,
      'invalid_request',
      'now',
    );
    await expectError(`${SCOPE_PATH}/observational/reflect`, { method: 'POST', body: '{' }, 400, 'invalid_json');
    await expectError(`${SCOPE_PATH}/observational/export?format=xml`, { method: 'GET' }, 400, 'export_invalid', 'xml');

    // Invalid ids in the path: too long, bad characters, an encoded traversal.
    await expectError(`/v1/memory/${LONG_ID}/bad-conv/bad-agent`, { method: 'GET' }, 400, 'scope_invalid', '128');
    await expectError(
      `/v1/memory/bad-tenant/${LONG_ID}/bad-agent/working/plan`,
      { method: 'PUT', body: JSON.stringify({ value: 1 }) },
      400,
      'scope_invalid',
      '128',
    );
    await expectError('/v1/memory/bad%20tenant/bad-conv/bad-agent', { method: 'DELETE' }, 400, 'scope_invalid');
    await expectError(
      '/v1/memory/..%2Fx/bad-conv/bad-agent/working/plan',
      { method: 'PUT', body: JSON.stringify({ value: 1 }) },
      400,
      'scope_invalid',
    );
    await expectError(
      '/v1/memory/..%2Fx/bad-conv/bad-agent/observational/enable',
      { method: 'POST' },
      400,
      'scope_invalid',
    );
    // A blank id is refused, not trimmed to `default` (whose memory a DELETE would forget).
    await expectError('/v1/memory/%20/bad-conv/%20/working', { method: 'GET' }, 400, 'scope_invalid', 'tenant_id');
    await expectError('/v1/memory/bad-tenant/%20/bad-agent', { method: 'DELETE' }, 400, 'scope_invalid');
    await expectError('/v1/memory/bad-tenant/bad-conv/%09', { method: 'GET' }, 400, 'scope_invalid', 'agent_id');
    // A literal ../ is folded away by URL parsing and routes nowhere.
    await expectError('/v1/memory/%2e%2e/bad-conv/bad-agent', { method: 'GET' }, 404, 'not_found');

    expect(e2e.countRows('working_memory_entries')).toBe(0);
    expect(e2e.countRows('om_observations')).toBe(0);
    await expectEmptyScope(SCOPE_PATH);
    expect((await e2e.apiJson(SCOPE_PATH)).body['status']).toMatchObject({
      enabled: true,
      config: { observe_min_tokens: 1 },
    });
  });

  it('answers 404 for unknown runs and routes', async () => {
    for (const runId of ['run_00000000-0000-0000-0000-000000000000', LONG_ID, 'x'.repeat(5000)]) {
      const shown = runId.slice(0, 100);
      await expectError(`/v1/runs/${runId}`, { method: 'GET' }, 404, 'not_found', shown);
      await expectError(`/v1/runs/${runId}/events`, { method: 'GET' }, 404, 'not_found', shown);
      await expectError(
        `/v1/runs/${runId}/continue`,
        { method: 'POST', body: JSON.stringify({ prompt: 'x' }) },
        404,
        'not_found',
        shown,
      );
      await expectError(`/v1/runs/${runId}/cancel`, { method: 'POST' }, 404, 'not_found', shown);
    }
    await expectError('/v1/nothing-here', { method: 'GET' }, 404, 'not_found', '/v1/nothing-here');
    expect(e2e.countRows('harness_runs')).toBe(0);
    expect(e2e.model.requests).toHaveLength(0);
  });

  it('refuses a bad continue body on a real run without starting another', async () => {
    const runId = await e2e.startRun({ prompt: 'a real run', conversation_id: 'real-conv' });
    expect(typesOf(await e2e.events(runId)).at(-1)).toBe('run.completed');
    const runs = e2e.countRows('harness_runs');
    const modelCalls = e2e.model.requests.length;
    await expectError(
      `/v1/runs/${runId}/continue`,
      { method: 'POST', body: JSON.stringify({ prompt: 1 }) },
      400,
      'invalid_request',
      'prompt',
    );
    await expectError(
      `/v1/runs/${runId}/continue`,
      { method: 'POST', body: JSON.stringify({ prompt: 'x', tenant_id: 'other' }) },
      400,
      'invalid_request',
      'tenant_id',
    );
    await expectError(`/v1/runs/${runId}/continue`, { method: 'POST', body: '{"prompt"' }, 400, 'invalid_json');
    await expectError(
      `/v1/runs/${runId}/continue`,
      { method: 'POST', body: JSON.stringify({ prompt: '' }) },
      400,
      'invalid_request',
    );
    await expectTooLarge(
      'POST',
      `/v1/runs/${runId}/continue`,
      Buffer.from(JSON.stringify({ prompt: 'x'.repeat(MIB + 1) })),
      false,
    );
    expect(e2e.countRows('harness_runs')).toBe(runs);
    expect(e2e.model.requests.length).toBe(modelCalls);
  });
});
