/**
 * A TCP proxy in front of the harness that can drop every open connection at once, as a
 * flaky network or a restarting load balancer would. It keeps the request heads it forwarded,
 * so a test can see what a client sent when it reconnected.
 * @module
 */
import { connect, createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';

/** A running proxy. */
export interface DropProxy {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** The head (request line and headers) of every HTTP request seen, lower-cased, in order. */
  readonly requestHeads: string[];
  /** Destroys every open connection, both sides. */
  dropAll(): void;
  close(): Promise<void>;
}

/** Starts a proxy on 127.0.0.1 forwarding to `target` (`http://host:port`). */
export async function startDropProxy(target: string): Promise<DropProxy> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  const requestHeads: string[] = [];
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    track(client);
    track(upstream);
    let pending = '';
    client.on('data', (chunk: Buffer) => {
      // Request heads only: the browser's bodies here are small JSON, never split mid-head.
      pending += chunk.toString('latin1');
      let end = pending.indexOf('\r\n\r\n');
      while (end !== -1) {
        const head = pending.slice(0, end).toLowerCase();
        if (/^[a-z]+ \S+ http\/1\.[01]/.test(head)) requestHeads.push(head);
        pending = pending.slice(end + 4);
        end = pending.indexOf('\r\n\r\n');
      }
      if (pending.length > 64 * 1024) pending = '';
      upstream.write(chunk);
    });
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    requestHeads,
    dropAll() {
      for (const socket of sockets) socket.destroy();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
