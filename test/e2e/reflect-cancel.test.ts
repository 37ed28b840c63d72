/**
 * A reflect_now its caller gives up on (an HTTP client that goes away, an MCP client that
 * cancels the call) stops the reflector's model call at once; the reflection goes back to the
 * queue, and the server's worker runs it after.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { abortOnceAsked, startE2E } from './e2e-harness.js';
import type { E2E } from './e2e-harness.js';

const KEY = 'key-tenant-r-0123456789';

let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({ env: { HARNESS_API_KEYS: `${KEY}:tenant-r` } });
});
afterAll(() => e2e.close());

/**
 * Stores one observation in `conversation`, then has `start` ask for a reflection that the
 * reflector would answer in ten minutes, aborts it once the reflector was asked, and waits for
 * the worker to run the reflection that was given back (the reflector answers at once then).
 */
async function cancelledReflection(
  conversation: string,
  start: (signal: AbortSignal) => Promise<unknown>,
): Promise<void> {
  const path = `/v1/memory/tenant-r/${conversation}/default`;
  await e2e.harness.observationalMemory.importObservations(
    { tenantId: 'tenant-r', conversationId: conversation, agentId: 'default' },
    [{ content: `The user works on ${conversation}.`, importance: 0.8 }],
  );
  const summarise = e2e.script.reflector;
  let asked = 0;
  e2e.script.reflector = (request) => {
    asked++;
    return asked === 1 ? { delayMs: 600_000, reply: summarise(request) } : summarise(request);
  };
  try {
    expect(await abortOnceAsked(start, () => asked)).toBe('cancelled');
    await vi.waitFor(
      async () => {
        const view = await e2e.apiJson(path, { key: KEY });
        expect(view.body['status']['reflection_present']).toBe(true);
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(asked).toBe(2);
  } finally {
    e2e.script.reflector = summarise;
  }
}

describe('e2e: a cancelled reflect_now', () => {
  it('over HTTP: a client that goes away stops the reflector call; the worker reflects after', async () => {
    await cancelledReflection('reflect-http', (signal) =>
      e2e.api('/v1/memory/tenant-r/reflect-http/default/observational/reflect', {
        key: KEY,
        method: 'POST',
        json: {},
        signal,
      }),
    );
  });

  it('over MCP: a client that cancels observational_memory reflect_now stops the reflector call', async () => {
    const client = new Client({ name: 'harness-memory-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${e2e.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${KEY}` } },
      }),
    );
    try {
      await cancelledReflection('reflect-mcp', (signal) =>
        client.callTool(
          { name: 'observational_memory', arguments: { action: 'reflect_now', conversation_id: 'reflect-mcp' } },
          { signal },
        ),
      );
    } finally {
      await client.close();
    }
  });
});
