/**
 * Bounds on what one call reads: an answer past `maxResponseBytes` is refused (not retried)
 * and read no further, an error body is read only as far as it is kept, and a stream our
 * timeout or the caller stopped is reported as such, not as a cut stream.
 */
import { describe, expect, it } from 'vitest';
import { useScriptedOpenAIServer } from '../../test/support/use-scripted-openai-server.js';
import type { ModelCallError } from '../core/errors.js';
import { createOpenAICompatibleModel, type OpenAICompatibleSettings } from './openai-compatible.js';
import { withRetries } from './retrying-model.js';

const server = useScriptedOpenAIServer();

const call = { messages: [{ role: 'user' as const, content: 'hello' }] };
const LIMIT = 64 * 1024;
const MIB = 1024 * 1024;

/** A fetch that counts the response body bytes its caller pulled, calling `onBytes` after each read. */
function countingFetch(onBytes: () => void = () => undefined) {
  const counted = { bytes: 0 };
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const response = await globalThis.fetch(input, init);
    const reader = response.body!.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        counted.bytes += value.byteLength;
        controller.enqueue(value);
        onBytes();
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  return { fetch, counted };
}

const modelAt = (settings: Partial<OpenAICompatibleSettings> = {}) =>
  createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm', ...settings });
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.fail('the call succeeded'),
    (thrown: unknown) => thrown as ModelCallError,
  );
const completionHead =
  '{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,' +
  '"finish_reason":"stop","message":{"role":"assistant","content":"';
const chunk = (content: string) =>
  `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }] })}\n\n`;

describe('openai-compatible: answers larger than maxResponseBytes', () => {
  it('refuses a whole answer past the limit, naming it, without retrying or reading the rest', async () => {
    server.enqueue({ largeBody: { head: completionHead, fill: 'a'.repeat(1024), repeat: 16 * 1024, tail: '"}}]}' } });
    const { fetch, counted } = countingFetch();
    const error = await failure(withRetries(modelAt({ maxResponseBytes: LIMIT, fetch })).doGenerate(call));
    expect(error).toMatchObject({
      code: 'MODEL_CALL_FAILED',
      isRetryable: false,
      message: expect.stringMatching(/larger than 65536 bytes \(maxResponseBytes\)/),
    });
    expect(server.requests).toHaveLength(1);
    expect(counted.bytes).toBeLessThan(MIB);
  });

  it('refuses a streamed answer past the limit the same way', async () => {
    server.enqueue({
      largeBody: { contentType: 'text/event-stream', fill: chunk('a'.repeat(1000)), repeat: 16 * 1024 },
    });
    const { fetch, counted } = countingFetch();
    const error = await failure(modelAt({ maxResponseBytes: LIMIT, fetch, stream: true }).doGenerate(call));
    expect(error).toMatchObject({
      isRetryable: false,
      message: expect.stringMatching(/larger than 65536 bytes \(maxResponseBytes\)/),
    });
    expect(counted.bytes).toBeLessThan(MIB);
  });

  it('reads an answer within the limit whole', async () => {
    server.enqueue({ text: 'b'.repeat(LIMIT - 1024) });
    const result = await modelAt({ maxResponseBytes: LIMIT }).doGenerate(call);
    expect(result.text).toHaveLength(LIMIT - 1024);
  });

  it('refuses a limit that is not a whole number of bytes', () => {
    for (const maxResponseBytes of [0, 1.5, Number.NaN, '1000'])
      expect(() => modelAt({ maxResponseBytes: maxResponseBytes as number })).toThrow(/maxResponseBytes/);
  });
});

describe('openai-compatible: large error bodies', () => {
  it('reads no more of a 5xx body than it keeps, and still reports the status', async () => {
    server.enqueue({
      largeBody: { status: 500, contentType: 'text/plain', fill: 'e'.repeat(1024), repeat: 16 * 1024 },
    });
    const { fetch, counted } = countingFetch();
    const error = await failure(modelAt({ fetch }).doGenerate(call));
    expect(error).toMatchObject({ statusCode: 500, isRetryable: true });
    expect(Buffer.byteLength(error.responseBody ?? '')).toBeLessThanOrEqual(2048 + 3);
    expect(counted.bytes).toBeLessThan(MIB);
  });
});

describe('openai-compatible: a stream that is stopped while the server keeps it alive', () => {
  const keepalive = { trickle: { chunk: ': keepalive\n\n', everyMs: 20 } };

  it('reports our timeout as a timeout', async () => {
    server.enqueue(keepalive);
    const error = await failure(modelAt({ timeout: 300, stream: true }).doGenerate(call));
    expect(error).toMatchObject({ isRetryable: true, message: expect.stringMatching(/timed out after 300 ms/) });
  });

  it("reports the caller's cancel as a cancel, not retryable", async () => {
    server.enqueue(keepalive);
    const controller = new AbortController();
    // Cancelled once the first keepalive was read: mid-stream.
    const { fetch } = countingFetch(() => controller.abort());
    const parts: string[] = [];
    const error = await failure(
      (async () => {
        for await (const part of modelAt({ fetch }).doStream({ ...call, abortSignal: controller.signal }))
          parts.push(part.type);
      })(),
    );
    expect(error).toMatchObject({ isRetryable: false, message: expect.stringMatching(/aborted by the caller/) });
    expect(parts).toEqual([]);
  });
});
