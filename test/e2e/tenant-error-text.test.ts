/**
 * What a tenant reads of a failed memory-model call in an HTTP or MCP answer: the model
 * server named, never its address, and no secret the provider quoted back.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E } from './e2e-harness.js';
import type { E2E } from './e2e-harness.js';

const KEY = `sk-proj-${'Qq7_'.repeat(7)}`;
const SCOPE = '/v1/memory/default/err-conv/default';

let e2e: E2E;

beforeAll(async () => {
  e2e = await startE2E({ env: { HARNESS_MEMORY_DEFAULT_ENABLED: 'true', HARNESS_MEMORY_MAX_OPERATION_ATTEMPTS: '1' } });
  await e2e.harness.observationalMemory.importObservations(
    { tenantId: 'default', conversationId: 'err-conv', agentId: 'default' },
    [{ content: 'A fact.' }],
  );
  e2e.script.reflector = () => ({
    status: 400,
    body: { error: { message: `Invalid request to internal gateway at http://10.1.2.3:8443/v1 (key ${KEY})` } },
  });
}, 60_000);

afterAll(async () => {
  await e2e?.close();
});

describe('e2e: a failed model call as the tenant reads it', () => {
  it('over HTTP: no server address, the key redacted', async () => {
    const { status, body } = await e2e.apiJson(`${SCOPE}/observational/reflect`, { method: 'POST' });
    expect(status).toBe(502);
    const message = String(body['error']?.message);
    expect(message).toContain('the model server');
    for (const hidden of ['127.0.0.1', '10.1.2.3', KEY]) expect(message).not.toContain(hidden);
  });

  it('over MCP: the same, and no url in the error data', async () => {
    const client = new Client({ name: 'probe', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${e2e.url}/mcp`)));
    try {
      const result = await client.callTool({
        name: 'observational_memory',
        arguments: { action: 'reflect_now', conversation_id: 'err-conv' },
      });
      expect(result.isError).toBe(true);
      const text = JSON.stringify(result);
      expect(text).toContain('the model server');
      for (const hidden of ['127.0.0.1', '10.1.2.3', KEY]) expect(text).not.toContain(hidden);
    } finally {
      await client.close();
    }
  });
});
