/**
 * The fetch our OpenAI client uses: it reads no response body past a byte limit, and keeps a
 * failed response's body for the error. Private to `src/llm/`.
 */
import { ModelCallError } from '../core/errors.js';

/** Most bytes of a failed response's body read; the rest is dropped unread. */
export const MAX_READ_ERROR_BODY_BYTES: number = 64 * 1024;

/** Where the call goes and how much of an answer it reads. */
export interface BodyLimits {
  readonly url: string;
  /** Most bytes of a successful response's body (a whole answer or an event stream). */
  readonly maxResponseBytes: number;
  /**
   * The SDK keeps only `body.error` of a failed response; vLLM-style bodies have none. The
   * body read is filed here under the response's `Headers`, which the SDK's `APIError` keeps.
   */
  readonly errorBodies: WeakMap<object, string>;
}

/** Wraps `base` so a success body errors once past the limit and an error body is read only in part. */
export function boundedFetch(base: typeof globalThis.fetch, limits: BodyLimits): typeof globalThis.fetch {
  return async (input, init) => {
    const response = await base(input, init);
    if (response.ok) {
      if (response.body === null) return response;
      const body = limitBody(response.body, limits.maxResponseBytes, () => tooLarge(limits));
      return new Response(body, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    }
    const text = await readHead(response.body, MAX_READ_ERROR_BODY_BYTES);
    const copy = new Response(text, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    limits.errorBodies.set(copy.headers, text);
    return copy;
  };
}

function tooLarge({ url, maxResponseBytes }: BodyLimits): ModelCallError {
  return new ModelCallError({
    message:
      `The answer from ${url} is larger than ${maxResponseBytes} bytes (maxResponseBytes); it was not read ` +
      `further and nothing was used. Raise maxResponseBytes if the model's answers are this large.`,
    url,
    // The same request would bring the same answer.
    retryable: false,
  });
}

/** `body` as it is, until more than `limit` bytes came: then the connection is dropped and the stream fails. */
function limitBody(body: ReadableStream<Uint8Array>, limit: number, error: () => Error): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let read = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      read += value.byteLength;
      if (read > limit) {
        await reader.cancel().catch(() => undefined);
        return controller.error(error());
      }
      controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

/** The text of the first `limit` bytes of `body`; the rest is not read (the connection is dropped). */
async function readHead(body: ReadableStream<Uint8Array> | null, limit: number): Promise<string> {
  if (body === null) return '';
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let read = 0;
  while (read < limit) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    read += value.byteLength;
  }
  if (read >= limit) await reader.cancel().catch(() => undefined);
  // NOTE: a cut may split a UTF-8 character into U+FFFD; acceptable for a diagnostic.
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}
