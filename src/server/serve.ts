import { serve } from '@hono/node-server';
import type { HttpBindings } from '@hono/node-server';
import type { ServerResponse } from 'node:http';
import { LOOPBACK_HOSTS } from '../core/loopback-hosts.js';
import { isIPv6 } from 'node:net';
import type { AddressInfo } from 'node:net';
import { requireObject, requireTimerMs } from '../core/require-option.js';
import { ConfigError } from '../core/errors.js';
import type { Harness } from './create-harness.js';
import { runStreamedTo } from './sse.js';
import { isRunOpen } from '../storage/run-store.js';
import type { RunStore } from '../storage/run-store.js';

/** Options of {@link startServer}. */
export interface StartServerOptions {
  /**
   * A host name or address (`[::1]` too), not a URL; not blank, which would listen on every interface.
   * @default config.server.host (127.0.0.1)
   */
  host?: string;
  /** 0 picks a free port. @default config.server.port (8080) */
  port?: number;
  /** Allow a non-loopback host without API keys. @default false */
  insecure?: boolean;
  /**
   * On `close`, how long runs may go on before they are cancelled, and requests in flight
   * (a reflection asked over HTTP, say) may take to be answered. The event streams of ended
   * runs then get what is left of it, and at least 2 s, to send their last event. @default 30000
   */
  shutdownTimeoutMs?: number;
  /**
   * How long a client has to send a whole request (headers and body); one that trickles it
   * is answered `408` and its connection closed. @default 60000
   */
  requestTimeoutMs?: number;
  /**
   * How long a client has to send a request's headers, within `requestTimeoutMs`: a connection
   * that never finishes them (a slowloris) is closed this soon, before any API key is read.
   * @default 10000
   */
  headersTimeoutMs?: number;
}

/** A listening server. */
export interface RunningServer {
  readonly url: string;
  readonly port: number;
  /**
   * Stops accepting connections; lets runs finish for up to `shutdownTimeoutMs`, then cancels
   * the rest; lets requests in flight be answered within the same time, and the event streams
   * of ended runs send their last event (`run.completed`, `run.cancelled`, …) and end, within
   * what is left of it but at least 2 s; then closes the remaining connections and the harness.
   */
  close(): Promise<void>;
}

/** How long `close` lets runs and requests in flight go on by default. */
const DEFAULT_SHUTDOWN_TIMEOUT_MS = 30_000;
const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
/**
 * How long `close` lets the streams of ended runs send their last event when the shutdown
 * time is spent (runs cancelled at the deadline end just after it): one store read and one
 * write each, milliseconds unless the store is slow or a client stopped reading.
 */
const STREAM_END_GRACE_MS = 2_000;

/**
 * Serves the harness over HTTP. Without API keys it listens on loopback only and refuses
 * any other host unless `insecure` is set.
 */
export async function startServer(harness: Harness, options: StartServerOptions = {}): Promise<RunningServer> {
  requireObject('startServer', 'harness', harness, ['dispose'], 'Pass the harness from createHarness({ config }).');
  const host = (options.host ?? harness.config.server.host).trim();
  const port = options.port ?? harness.config.server.port;
  const hostSource = options.host !== undefined ? '--host' : (harness.config.sources['server.host'] ?? 'default');
  // Node listens on every interface when given no host.
  if (host === '') {
    throw new ConfigError({
      key: 'server.host',
      source: hostSource,
      message: 'must not be blank: give an interface such as 127.0.0.1 (the default)',
    });
  }
  if (host.includes('/')) {
    throw new ConfigError({
      key: 'server.host',
      source: hostSource,
      message: `${host} is not a host: give a host name or an address such as 127.0.0.1, not a URL`,
    });
  }
  // `name:port` or `[v6]:port`: one colon, or a colon after the bracket (an IPv6 address has several).
  const withPort = /^(?:\[[^\]]*\]|[^:[\]]*):(\d*)$/.exec(host);
  if (withPort) {
    throw new ConfigError({
      key: 'server.host',
      source: hostSource,
      message:
        `${host} is not a host: it holds a port; give the host alone (${host.slice(0, host.lastIndexOf(':'))}) ` +
        `and the port with --port or [server] port`,
    });
  }
  // Host names are case-insensitive; the Host header check lower-cases too.
  const loopback = LOOPBACK_HOSTS.has(host.toLowerCase());
  if (!loopback && harness.config.server.apiKeys.length === 0 && !options.insecure) {
    throw new ConfigError({
      key: 'server.host',
      source: hostSource,
      message:
        `refusing to listen on ${host} without API keys; set [server] api_keys or HARNESS_API_KEYS, ` +
        `or pass --insecure`,
    });
  }
  const shutdownTimeoutMs =
    requireTimerMs('startServer', 'shutdownTimeoutMs', options.shutdownTimeoutMs, 0) ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
  // Requests being answered (not event streams, which are open until their run ends): a
  // shutdown answers these before it closes connections.
  const answering = new InFlight();
  const runStreams = new RunStreams();
  const openToAnyHost = !loopback && harness.config.server.apiKeys.length === 0;
  const fetch: typeof harness.app.fetch = async (request, env, ...rest) => {
    const done = answering.begin();
    try {
      const response = await harness.app.fetch(request, openToAnyHost ? { ...env, openToAnyHost } : env, ...rest);
      const runId = runStreamedTo(request);
      const outgoing = (env as Partial<HttpBindings> | undefined)?.outgoing;
      if (runId !== undefined && outgoing) runStreams.track(outgoing, runId);
      return response;
    } finally {
      done();
    }
  };
  // A request must arrive whole within a minute (Node's default is five), its headers within
  // ten seconds: a client trickling them would hold the connection, and what it sent, for that
  // long, and many such clients every socket the process may open. Node checks the times every
  // `connectionsCheckingInterval` (30 s by default).
  const requestTimeout =
    requireTimerMs('startServer', 'requestTimeoutMs', options.requestTimeoutMs, 1) ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const headersTimeout = Math.min(
    requestTimeout,
    requireTimerMs('startServer', 'headersTimeoutMs', options.headersTimeoutMs, 1) ?? DEFAULT_HEADERS_TIMEOUT_MS,
  );
  const serverOptions = {
    requestTimeout,
    headersTimeout,
    connectionsCheckingInterval: Math.min(30_000, Math.max(50, Math.floor(headersTimeout / 4))),
  };
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const created = serve({ fetch, hostname: listenAddress(host), port, serverOptions }, () => resolve(created));
    created.once('error', (error: NodeJS.ErrnoException) => reject(listenError(error, host, port, options, harness)));
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}`,
    port: address.port,
    async close() {
      const deadline = performance.now() + shutdownTimeoutMs;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      const connections = server as unknown as { closeIdleConnections?: () => void; closeAllConnections?: () => void };
      // Runs first: their streams end with their terminal events, and cancels still reach them.
      await harness.runner.settle({ timeoutMs: shutdownTimeoutMs });
      // Requests in flight are answered (within the same time), and the streams of ended runs
      // (every run of this process now) read the terminal event, stored before settle
      // returned, send it and end: cut at once, a stream lost it whenever that read took a
      // round trip (Postgres). Then what still holds a connection (an idle keep-alive, the
      // stream of a run going on in another process) is cut.
      const left = Math.max(0, deadline - performance.now());
      await Promise.all([
        answering.idle(left),
        runStreams.endedRunsClosed(harness.runStore, Math.max(left, STREAM_END_GRACE_MS)),
      ]);
      connections.closeAllConnections?.();
      await closed;
      await harness.dispose({ timeoutMs: Math.max(0, deadline - performance.now()) });
    },
  };
}

/** `[::1]`, as a URL writes an IPv6 address, is listened on as `::1`; Node would look it up as a name. */
function listenAddress(host: string): string {
  const bracketed = /^\[(.*)\]$/.exec(host)?.[1];
  return bracketed !== undefined && isIPv6(bracketed) ? bracketed : host;
}

/** Counts requests being answered; `idle` waits until there are none, or `timeoutMs`. */
class InFlight {
  #count = 0;
  #waiters: Array<() => void> = [];

  begin(): () => void {
    this.#count += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#count -= 1;
      if (this.#count === 0) for (const wake of this.#waiters.splice(0)) wake();
    };
  }

  async idle(timeoutMs: number): Promise<void> {
    if (this.#count === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.#waiters.push(resolve);
      timer = setTimeout(resolve, timeoutMs);
    });
    clearTimeout(timer);
  }
}

/** The open run event streams (their responses) and the run each streams. */
class RunStreams {
  readonly #open = new Map<ServerResponse, string>();

  track(response: ServerResponse, runId: string): void {
    if (response.closed) return;
    this.#open.set(response, runId);
    response.once('close', () => this.#open.delete(response));
  }

  /**
   * Waits until every stream open now whose run has ended (or was deleted) has closed, as it
   * does after sending the terminal event (or the client went away), or `timeoutMs`: a client
   * that stopped reading holds its stream's last write, and is cut after that.
   */
  async endedRunsClosed(runStore: RunStore, timeoutMs: number): Promise<void> {
    const open = [...this.#open];
    if (open.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    const closed = async (): Promise<void> => {
      const ended = new Set<string>();
      await Promise.all(
        [...new Set(open.map(([, runId]) => runId))].map(async (runId) => {
          // A store that cannot be read is not waited for.
          const run = await runStore.getRun(runId).catch(() => null);
          if (run === undefined || (run !== null && !isRunOpen(run.status))) ended.add(runId);
        }),
      );
      await Promise.all(
        open
          .filter(([, runId]) => ended.has(runId))
          .map(
            ([response]) =>
              new Promise((resolve) => (response.closed ? resolve(undefined) : response.once('close', resolve))),
          ),
      );
    };
    await Promise.race([closed(), timedOut]);
    clearTimeout(timer);
  }
}

/**
 * A listen failure the user can act on, naming where the host or port came from (`--port`,
 * `HARNESS_PORT`, the config file); other errors as they are.
 */
function listenError(
  error: NodeJS.ErrnoException,
  host: string,
  port: number,
  options: StartServerOptions,
  harness: Harness,
): Error {
  const portSource = options.port !== undefined ? '--port' : (harness.config.sources['server.port'] ?? 'the default');
  const hostSource = options.host !== undefined ? '--host' : (harness.config.sources['server.host'] ?? 'the default');
  switch (error.code) {
    case 'EADDRINUSE':
      return new Error(
        `port ${port} on ${host} is already in use (port from ${portSource}): stop what holds it, or pick ` +
          'another port (0 picks a free one)',
        { cause: error },
      );
    case 'EACCES':
      return new Error(
        `port ${port} on ${host} needs privileges this process lacks (port from ${portSource}): pick a port ` +
          'above 1023',
        { cause: error },
      );
    case 'EADDRNOTAVAIL':
      return new Error(
        `${host} is not an address of this machine (host from ${hostSource}): give one of its interfaces, ` +
          'such as 127.0.0.1',
        { cause: error },
      );
    case 'ENOTFOUND':
      return new Error(
        `${host} is not a name this machine resolves (host from ${hostSource}): give the address of one of its ` +
          'interfaces, such as 127.0.0.1, or a name that resolves to one',
        { cause: error },
      );
    case 'EAI_AGAIN':
      return new Error(
        `${host} could not be resolved: the name service did not answer (host from ${hostSource}): try again, or ` +
          'give an address, such as 127.0.0.1',
        { cause: error },
      );
    default:
      return error;
  }
}
