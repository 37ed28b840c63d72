/**
 * Servers a TLS client cannot get through: HTTPS with a self-signed certificate (for
 * localhost and 127.0.0.1, in test/fixtures/tls, valid until 2126), and a plain TCP server
 * that answers a TLS hello with HTTP. Each counts the connections made to it.
 * @module
 */
import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';

/** A running server refusing TLS clients one way or another. */
export interface TlsTrapServer {
  /** `https://127.0.0.1:<port>/v1`. */
  readonly url: string;
  /** Connections accepted so far. */
  connections(): number;
  close(): Promise<void>;
}

const fixture = (name: string): Buffer => readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));

/** An HTTPS server whose certificate no client trusts (self-signed). */
export function startSelfSignedServer(): Promise<TlsTrapServer> {
  const server = createHttpsServer(
    { key: fixture('self-signed-key.pem'), cert: fixture('self-signed-cert.pem') },
    (_request, response) => response.end('{}'),
  );
  return listening(server);
}

/** A server that answers whatever it is sent with plain HTTP: an `https://` URL for an HTTP port. */
export function startPlainHttpServer(): Promise<TlsTrapServer> {
  const server = createNetServer((socket) => {
    socket.on('error', () => undefined);
    socket.once('data', () => socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n'));
  });
  return listening(server);
}

async function listening(server: Server): Promise<TlsTrapServer> {
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}/v1`,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as Server & { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}
