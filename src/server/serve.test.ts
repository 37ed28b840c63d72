import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../core/errors.js';
import type { Harness } from './create-harness.js';
import { startServer } from './serve.js';

/**
 * Just what startServer reads before it listens; `host` is the configured one. `served` gets
 * the `openToAnyHost` each request is passed to the app with.
 */
function harnessWith(host: string, options: { apiKeys?: boolean; served?: unknown[] } = {}): Harness {
  return {
    config: {
      server: {
        host,
        port: 0,
        apiKeys: options.apiKeys === false ? [] : [{ key: 'server-key-1', tenantId: 'tenant-a' }],
      },
      sources: { 'server.host': '/srv/.harness/config.toml' },
    },
    app: {
      fetch: (_request: Request, env: { openToAnyHost?: boolean }) => {
        options.served?.push(env.openToAnyHost);
        return new Response('served');
      },
    },
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

describe('server: startServer host spellings', () => {
  it.each([
    ['the host option', { host: '[::1]' }, '127.0.0.1'],
    ['the configured host', {}, '[::1]'],
  ])(
    'listens on a bracketed IPv6 address given as %s, as the server writes its own URL',
    async (_, option, configured) => {
      const server = await startServer(harnessWith(configured, { apiKeys: false }), { ...option, port: 0 });
      try {
        expect(server.url).toBe(`http://[::1]:${server.port}`);
      } finally {
        await server.close();
      }
    },
  );

  it.each(['LOCALHOST', 'LocalHost'])('takes %s for loopback, as host names are case-insensitive', async (host) => {
    const served: unknown[] = [];
    const server = await startServer(harnessWith(host, { apiKeys: false, served }), { port: 0 });
    try {
      expect(await (await fetch(`${server.url}/healthz`)).text()).toBe('served');
      // Not served as open to every host name: the loopback Host check still applies.
      expect(served).toEqual([undefined]);
    } finally {
      await server.close();
    }
  });

  it.each([
    ['http://127.0.0.1', true],
    ['http://127.0.0.1', false],
    ['127.0.0.1/8', true],
    ['https://api.example.com:8443/', false],
  ])('refuses the URL-like host %j (API keys: %s), asking for a host name or address', async (host, apiKeys) => {
    const error = await configErrorOf(startServer(harnessWith('127.0.0.1', { apiKeys }), { host, port: 0 }));
    expect(error).toMatchObject({ key: 'server.host', source: '--host' });
    expect(error.message).toContain(
      `${host} is not a host: give a host name or an address such as 127.0.0.1, not a URL`,
    );
    expect(error.message).not.toContain('API keys');
  });

  it.each([
    ['127.0.0.1:8080', '127.0.0.1', true],
    ['localhost:3000', 'localhost', false],
    ['[::1]:8080', '[::1]', false],
    ['example.com:', 'example.com', true],
  ])('refuses the host with a port %j (API keys: %s), asking for the port apart', async (host, alone, apiKeys) => {
    const error = await configErrorOf(startServer(harnessWith('127.0.0.1', { apiKeys }), { host, port: 0 }));
    expect(error).toMatchObject({ key: 'server.host', source: '--host' });
    expect(error.message).toContain(
      `${host} is not a host: it holds a port; give the host alone (${alone}) and the port with --port or [server] port`,
    );
    expect(error.message).not.toContain('API keys');
  });

  it('listens on an IPv6 address written without brackets', async () => {
    const server = await startServer(harnessWith('::1'), { port: 0 });
    await server.close();
  });

  it('names a host this machine does not resolve, and where it was set', async () => {
    const failure = await startServer(harnessWith('no-such-host.invalid'), { port: 0 }).then(
      () => undefined,
      (reason: unknown) => reason as Error,
    );
    // `.invalid` never resolves (RFC 6761); a resolver that does not answer at all is the other case.
    expect(failure?.message).toMatch(
      /^no-such-host\.invalid (is not a name this machine resolves|could not be resolved: the name service did not answer) \(host from \/srv\/\.harness\/config\.toml\): /,
    );
    expect(failure?.message).not.toContain('getaddrinfo');
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

/** What the server answers a connection that sends `partial` and nothing more, once it closes it. */
async function answerToPartial(port: number, partial: string): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  let answer = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => {
    answer += chunk;
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(partial);
  await closed;
  return answer;
}

describe('server: startServer request timeout', () => {
  it('answers 408 and closes a connection whose request does not arrive whole within requestTimeoutMs', async () => {
    const server = await startServer(harnessWith('127.0.0.1'), { port: 0, requestTimeoutMs: 300 });
    try {
      expect(await answerToPartial(server.port, 'POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n')).toMatch(
        /^HTTP\/1\.1 408 /,
      );
    } finally {
      await server.close();
    }
  });

  it('closes a connection whose headers do not arrive within headersTimeoutMs, however long requests may take', async () => {
    const server = await startServer(harnessWith('127.0.0.1'), {
      port: 0,
      requestTimeoutMs: 600_000,
      headersTimeoutMs: 300,
    });
    try {
      expect(await answerToPartial(server.port, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ')).toMatch(
        /^HTTP\/1\.1 408 /,
      );
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
