import { describe, expect, it } from 'vitest';
import { createTestApp, useTestWorkspace } from '../../test/support/test-app.js';
import { createTenantLimits } from './tenant-limits.js';

const workspace = useTestWorkspace('hm-body-order-');
const KEYS = [{ key: 'key-a', tenantId: 'tenant-a' }];

/** A body that sends its first bytes and then never ends, as a slow or hostile uploader's. */
function endlessBody(): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"value":'));
    },
  });
}

const put = (app: ReturnType<typeof createTestApp>['app'], headers: Record<string, string>) =>
  app.request('/v1/memory/tenant-a/c/a/working/k', {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...headers },
    body: endlessBody(),
    duplex: 'half',
  } as RequestInit);

// Were the body read first, these requests would never be answered (and the test would time out).
describe('server: key and write rate before the body', () => {
  it('refuses a write without a key before reading its body', async () => {
    const { app } = createTestApp({ workspace, apiKeys: KEYS });
    expect((await put(app, {})).status).toBe(401);
  });

  it('refuses a write over the rate before reading its body', async () => {
    const { app, send } = createTestApp({
      workspace,
      apiKeys: KEYS,
      // A clock that stands still: the bucket never refills between the two writes.
      app: { limits: createTenantLimits({ maxWritesPerSecond: 1, refusalDelayMs: 0, now: () => 0 }) },
    });
    const first = await send('/v1/memory/tenant-a/c/a/working/k', { method: 'PUT', key: 'key-a', body: '{"value":1}' });
    expect(first.status).toBe(200);
    expect((await put(app, { authorization: 'Bearer key-a' })).status).toBe(429);
  });
});
