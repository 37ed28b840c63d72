import { request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import { HarnessMemoryError } from '../../src/core/errors.js';
import { createHarness } from '../../src/server/create-harness.js';
import type { Harness } from '../../src/server/create-harness.js';
import { startServer } from '../../src/server/serve.js';
import type { RunningServer } from '../../src/server/serve.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A harness from an explicit env, a temp home and a temp workspace; the model is never called. */
async function harnessWith(env: Record<string, string> = {}): Promise<Harness> {
  const root = mkdtempSync(join(tmpdir(), 'hm-e2e-host-'));
  cleanups.push(() => rmSync(root, { recursive: true, force: true }));
  const fullEnv = {
    HARNESS_WORKSPACE: join(root, 'workspace'),
    OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    OPENAI_API_KEY: 'test',
    ...env,
  };
  const harness = await createHarness({
    config: loadConfig({ env: fullEnv, cwd: root, homeDir: join(root, 'home') }),
    env: fullEnv,
  });
  cleanups.push(() => harness.dispose());
  return harness;
}

async function started(harness: Harness, options: Parameters<typeof startServer>[1]): Promise<RunningServer> {
  const server = await startServer(harness, options);
  cleanups.push(() => server.close());
  return server;
}

function statusWithHost(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      { host: '127.0.0.1', port, path: '/healthz', agent: false, headers: { host } },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    outgoing.on('error', reject);
    outgoing.end();
  });
}

async function refusal(promise: Promise<unknown>): Promise<HarnessMemoryError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(HarnessMemoryError.isInstance(error)).toBe(true);
  return error as HarnessMemoryError;
}

describe('e2e: listening host', () => {
  it('refuses a non-loopback host without API keys', async () => {
    const harness = await harnessWith();
    for (const host of ['0.0.0.0', '192.0.2.2', '::']) {
      const error = await refusal(startServer(harness, { host, port: 0 }));
      expect(error.code, host).toBe('CONFIG_INVALID');
      expect(error.message).toContain('--host');
      expect(error.message).toContain('HARNESS_API_KEYS');
      expect(error.message).toContain('--insecure');
    }
  });

  it('refuses a non-loopback host from HARNESS_HOST, naming the variable', async () => {
    const harness = await harnessWith({ HARNESS_HOST: '0.0.0.0' });
    const error = await refusal(startServer(harness, { port: 0 }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('env:HARNESS_HOST');
  });

  it('listens on a non-loopback host when told insecure, and on one with API keys', async () => {
    const insecure = await started(await harnessWith(), { host: '0.0.0.0', port: 0, insecure: true });
    const health = await fetch(`http://127.0.0.1:${insecure.port}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok', faults: 0 });
    // Reached by the machine's address or name (a LAN, a container's service name): served,
    // as the warning says; only the Origin check stays (a page of another site is refused).
    for (const host of [`192.0.2.2:${insecure.port}`, 'harness.internal', `[2001:db8::1]:${insecure.port}`])
      expect(await statusWithHost(insecure.port, host), host).toBe(200);

    const keyed = await started(await harnessWith({ HARNESS_API_KEYS: 'k1:t1' }), { host: '0.0.0.0', port: 0 });
    expect((await fetch(`http://127.0.0.1:${keyed.port}/v1/memory/t1/c/a`)).status).toBe(401);
    const own = await fetch(`http://127.0.0.1:${keyed.port}/v1/memory/t1/c/a`, {
      headers: { authorization: 'Bearer k1' },
    });
    expect(own.status).toBe(200);
  });

  it('listens on loopback by default, on an ephemeral port', async () => {
    const server = await started(await harnessWith(), { port: 0 });
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
    expect(server.port).toBeGreaterThan(0);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    // Without API keys, a foreign Host header is refused (DNS rebinding).
    // (fetch does not send a custom Host header, so this one goes through node:http.)
    expect(await statusWithHost(server.port, 'evil.example')).toBe(403);
    expect(await statusWithHost(server.port, `localhost:${server.port}`)).toBe(200);
  });
});
