/**
 * The request body limit, with a 413 that reaches ordinary clients: the answer goes out at
 * once (`Connection: close`), but the connection stays open while the rest of the body is
 * read and thrown away, up to a bound. Closing at once would make the kernel reset the
 * connection over the unread bytes, and a client still writing its body would see a broken
 * pipe instead of the answer.
 * @module
 */
import type { MiddlewareHandler } from 'hono';
import { httpError } from './http-error.js';

/** Options of {@link limitBody}. */
export interface BodyLimitOptions {
  /** Largest body accepted. */
  readonly maxBytes: number;
  /** Most bytes read and discarded after refusing a body. @default 64 MiB */
  readonly drainBytes?: number;
  /** Longest time spent discarding after refusing a body. @default 5000 */
  readonly drainMs?: number;
}

const ENCODER = new TextEncoder();

/**
 * Refuses bodies over `maxBytes` with `413 {error: {code: "body_too_large"}}` before any
 * other work, from the declared `Content-Length` when there is one, else while reading.
 * Accepted bodies are buffered and handed on.
 */
export function limitBody(options: BodyLimitOptions): MiddlewareHandler {
  const { maxBytes } = options;
  const drain = { bytes: options.drainBytes ?? 64 * 1024 * 1024, ms: options.drainMs ?? 5000 };
  return async function bodyLimit(context, next) {
    const body = context.req.raw.body;
    if (!body) return next();
    const declared = context.req.raw.headers.has('transfer-encoding')
      ? Number.NaN
      : Number(context.req.raw.headers.get('content-length'));
    const reader = body.getReader();
    if (declared > maxBytes) return tooLarge(maxBytes, reader, 0, drain);
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await readOrRefuse(reader);
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) return tooLarge(maxBytes, reader, size, drain);
      chunks.push(value);
    }
    // Only requests that carry a body get here (GET and HEAD have none).
    const init: RequestInit = { body: concat(chunks, size) };
    context.req.raw = new Request(context.req.raw, init);
    return next();
  };
}

/**
 * The next chunk of the body. A client that drops the connection mid-upload is the client's
 * failure, not the server's: it is a 400 (which nobody reads) rather than a 500 counted as a fault.
 */
async function readOrRefuse(reader: ReadableStreamDefaultReader<Uint8Array>) {
  try {
    return await reader.read();
  } catch (error) {
    throw httpError(400, 'body_incomplete', `the request body could not be read: ${(error as Error).message}`);
  }
}

/**
 * The 413 answer. Its body is written at once with its length, so a client reading early
 * has the whole answer, but the stream ends (and the server closes the connection) only
 * once the rest of the request body has been discarded or the bound is reached.
 */
function tooLarge(
  maxBytes: number,
  reader: ReadableStreamDefaultReader<Uint8Array>,
  alreadyRead: number,
  drain: { bytes: number; ms: number },
): Response {
  const bytes = ENCODER.encode(
    JSON.stringify({ error: { code: 'body_too_large', message: `request body is larger than ${maxBytes} bytes` } }),
  );
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(bytes);
      await discard(reader, alreadyRead, drain);
      controller.close();
    },
  });
  return new Response(stream, {
    status: 413,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(bytes.byteLength),
      connection: 'close',
    },
  });
}

async function discard(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  alreadyRead: number,
  drain: { bytes: number; ms: number },
): Promise<void> {
  let read = alreadyRead;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), drain.ms);
    timer.unref?.();
  });
  try {
    for (;;) {
      const next = await Promise.race([reader.read(), deadline]);
      if (next === 'timeout' || next.done) break;
      read += next.value.byteLength;
      if (read > drain.bytes) break;
    }
  } catch {
    // The client went away: nothing left to drain.
  } finally {
    // Past the bound the rest is abandoned: the server closes the connection once the answer ends.
    clearTimeout(timer);
  }
}

function concat(chunks: readonly Uint8Array[], size: number): Uint8Array {
  const joined = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    joined.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return joined;
}
