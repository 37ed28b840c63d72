import { describe, expect, it } from 'vitest';
import { createTestApp, useTestWorkspace } from '../../test/support/test-app.js';
import { createFaultLog } from './fault-log.js';

const workspace = useTestWorkspace('hm-mcp-faults-');

describe('MCP endpoint: faults', () => {
  it("answers a client's malformed requests with 4xx and counts none of them as a server fault", async () => {
    const faults = createFaultLog({ log: () => undefined });
    const { app } = createTestApp({ workspace, apiKeys: [{ key: 'key-a', tenantId: 'tenant-a' }], app: { faults } });
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: 'Bearer key-a',
    };
    const initialize = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    });
    const statuses: number[] = [];
    for (const [body, extra] of [
      ['[]', {}],
      ['{"foo":1}', {}],
      ['{', {}],
      [initialize, { 'content-type': 'text/plain' }],
      [initialize, { accept: 'text/html' }],
    ] as const) {
      const response = await app.request('/mcp', { method: 'POST', headers: { ...headers, ...extra }, body });
      statuses.push(response.status);
    }
    expect(statuses.every((status) => status >= 400 && status < 500)).toBe(true);
    expect(faults.count()).toBe(0);
  });

  it('answers GET and DELETE with 405: the server keeps no sessions, as the README says', async () => {
    const { app } = createTestApp({ workspace, apiKeys: [{ key: 'key-a', tenantId: 'tenant-a' }] });
    const headers = { accept: 'application/json, text/event-stream', authorization: 'Bearer key-a' };
    for (const method of ['GET', 'DELETE'])
      expect((await app.request('/mcp', { method, headers })).status, method).toBe(405);
  });
});
