import { connect } from 'node:net';
import { once } from 'node:events';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { createLocalEventHub } from '../storage/local-event-hub.js';
import type { RunEvent, RunStatus, RunStore } from '../storage/run-store.js';
import type { Harness } from './create-harness.js';
import { startServer } from './serve.js';
import { streamRunEvents } from './sse.js';

function eventOf(seq: number, type: string, payload: Record<string, unknown> = {}): RunEvent {
  return { id: `r1:${seq}`, runId: 'r1', seq, type, timestamp: new Date(0).toISOString(), payload };
}

/**
 * A harness serving the event stream of one run, `r1`, which settling cancels: its
 * `run.cancelled` is stored and published before `settle` returns, as the runner does. Reading
 * events takes an I/O turn, as a Postgres round trip does, so the stream has not read that last
 * event when `settle` returns. `first` are the events stored before.
 */
function harnessStreaming(first: RunEvent[]): Harness {
  const hub = createLocalEventHub();
  const events = [...first];
  let status: RunStatus = 'running';
  const runStore = {
    listEvents: (_runId: string, after: number) =>
      new Promise<RunEvent[]>((resolve) => setImmediate(() => resolve(events.filter((event) => event.seq > after)))),
    getRun: async () => ({ runId: 'r1', status }),
  } as unknown as RunStore;
  const app = new Hono();
  app.get('/v1/runs/r1/events', (context) => streamRunEvents(context, { runId: 'r1', runStore, hub }));
  return {
    config: { server: { host: '127.0.0.1', port: 0, apiKeys: [] }, sources: {} },
    app,
    runStore,
    runner: {
      settle: async () => {
        status = 'cancelled';
        const cancelled = eventOf(events.length, 'run.cancelled');
        events.push(cancelled);
        hub.publish(cancelled);
      },
    },
    dispose: async () => {},
  } as unknown as Harness;
}

/**
 * A raw client of `GET /v1/runs/r1/events`: what it has read, and whether the server closed it.
 * It stops reading once it has read `stopAt`.
 */
function openStream(port: number, stopAt?: string) {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  socket.write(`GET /v1/runs/r1/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
  const client = { socket, text: '', stopped: false, closed: once(socket, 'close') };
  socket.setEncoding('utf8').on('data', (chunk: string) => {
    client.text += chunk;
    if (stopAt === undefined || client.stopped || !client.text.includes(stopAt)) return;
    client.stopped = true;
    socket.pause();
  });
  return client;
}

async function until(condition: () => boolean): Promise<void> {
  // Polled; the test's timeout bounds the wait.
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('server: shutdown with run event streams open', () => {
  it('lets the stream of a run cancelled at shutdown send run.cancelled, and end it, before closing connections', async () => {
    const server = await startServer(harnessStreaming([eventOf(0, 'run.started')]), {
      port: 0,
      shutdownTimeoutMs: 300,
    });
    const client = openStream(server.port);
    await until(() => client.text.includes('event: run.started'));
    await server.close();
    await client.closed;
    expect(client.text).toContain('event: run.cancelled');
    // The stream ended itself: the last chunk of its chunked body arrived.
    expect(client.text.endsWith('\r\n0\r\n\r\n')).toBe(true);
  });

  it('does not let a client that stopped reading hold the shutdown past the grace its stream gets', async () => {
    // 8 MB in one event: more than the socket buffers take while the client does not read.
    const long = eventOf(1, 'assistant.message', { content: 'x'.repeat(8 * 1024 * 1024) });
    const server = await startServer(harnessStreaming([eventOf(0, 'run.started'), long]), {
      port: 0,
      shutdownTimeoutMs: 300,
    });
    const client = openStream(server.port, 'event: assistant.message');
    await until(() => client.stopped);

    const closing = performance.now();
    await server.close();
    // What is left of shutdownTimeoutMs, at least 2 s; far below the stream's 30 s write timeout.
    expect(performance.now() - closing).toBeLessThan(4_000);
    client.socket.resume();
    await client.closed;
    // Cut mid-stream: the stream's writes were held by the client, not finished.
    expect(client.text).not.toContain('event: run.cancelled');
  });

  it('does not wait for the stream of a run still going (in another process)', async () => {
    const harness = harnessStreaming([eventOf(0, 'run.started')]);
    // Nothing of this process to settle: the run stays running.
    const server = await startServer({ ...harness, runner: { settle: async () => {} } } as unknown as Harness, {
      port: 0,
      shutdownTimeoutMs: 5_000,
    });
    const client = openStream(server.port);
    await until(() => client.text.includes('event: run.started'));
    const closing = performance.now();
    await server.close();
    expect(performance.now() - closing).toBeLessThan(1_000);
    await client.closed;
  });
});
