import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../core/errors.js';
import type { Harness } from './create-harness.js';
import { startServer } from './serve.js';

/** Just what startServer reads before it listens; `host` is the configured one. */
function harnessWith(host: string): Harness {
  return {
    config: {
      server: { host, port: 0, apiKeys: [{ key: 'server-key-1', tenantId: 'tenant-a' }] },
      sources: { 'server.host': '/srv/.harness/config.toml' },
    },
    app: { fetch: () => new Response('never called') },
    runner: { settle: async () => {} },
    dispose: async () => {},
  } as unknown as Harness;
}

async function configErrorOf(promise: Promise<unknown>): Promise<ConfigError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (error instanceof ConfigError) return error;
  throw new Error(`expected a ConfigError, got ${String(error)}`);
}

describe('server: startServer host', () => {
  it.each(['', '   '])('refuses the host option %j, which would listen on every interface', async (host) => {
    const harness = harnessWith('127.0.0.1');
    const error = await configErrorOf(startServer(harness, { host, port: 0 }));
    expect(error).toMatchObject({ code: 'CONFIG_INVALID', key: 'server.host', source: '--host' });
    expect(error.message).toContain('must not be blank');
  });

  it('refuses a blank configured host, naming where it was set', async () => {
    const harness = harnessWith(' ');
    const error = await configErrorOf(startServer(harness, { port: 0 }));
    expect(error).toMatchObject({ key: 'server.host', source: '/srv/.harness/config.toml' });
  });
});

describe('server: startServer listen failures', () => {
  it('names the port and where it came from when the port is taken', async () => {
    const first = await startServer(harnessWith('127.0.0.1'), { port: 0 });
    try {
      const failure = await startServer(harnessWith('127.0.0.1'), { port: first.port }).then(
        () => undefined,
        (reason: unknown) => reason as Error,
      );
      expect(failure?.message).toBe(
        `port ${first.port} on 127.0.0.1 is already in use (port from --port): stop what holds it, or pick ` +
          'another port (0 picks a free one)',
      );
    } finally {
      await first.close();
    }
  });
});

describe('server: startServer request timeout', () => {
  it('answers 408 and closes a connection whose request does not arrive whole within requestTimeoutMs', async () => {
    const server = await startServer(harnessWith('127.0.0.1'), { port: 0, requestTimeoutMs: 300 });
    try {
      const socket = connect(server.port, '127.0.0.1');
      let answer = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => {
        answer += chunk;
      });
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      socket.write('POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      await closed;
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    } finally {
      await server.close();
    }
  });

  it('refuses a requestTimeoutMs that is not a number of milliseconds', async () => {
    await expect(startServer(harnessWith('127.0.0.1'), { port: 0, requestTimeoutMs: 0 })).rejects.toThrow(
      'requestTimeoutMs must be a number of milliseconds',
    );
  });
});
