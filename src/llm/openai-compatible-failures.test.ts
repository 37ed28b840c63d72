import { describe, expect, it } from 'vitest';
import { startScriptedOpenAIServer } from '../../test/support/scripted-openai-server.js';
import { startPlainHttpServer, startSelfSignedServer } from '../../test/support/tls-servers.js';
import { useScriptedOpenAIServer } from '../../test/support/use-scripted-openai-server.js';
import { DEFAULT_OBSERVATION_CONFIG } from '../core/observation.js';
import { createModelObserver, createModelReflector } from '../memory/model-observer.js';
import { parseRetryAfter } from './_model-call-errors.js';
import { withCircuitBreaker } from './circuit-breaker.js';
import { createOpenAICompatibleModel, type OpenAICompatibleSettings } from './openai-compatible.js';
import { withRetries } from './retrying-model.js';

const server = useScriptedOpenAIServer();

const call = { messages: [{ role: 'user' as const, content: 'hello' }] };
const modelAt = (settings: Partial<OpenAICompatibleSettings> = {}) =>
  createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm', ...settings });
const fastRetries = { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20 };

describe('openai-compatible failures: status codes and retries', () => {
  it('waits at least Retry-After before retrying a 429, within the attempt cap', async () => {
    server.enqueue({
      status: 429,
      body: { error: { message: 'Rate limit reached', type: 'requests' } },
      headers: { 'retry-after': '1' },
    });
    const model = withRetries(modelAt(), fastRetries);
    const result = await model.doGenerate(call);
    expect(result.text).toBe('ok');
    expect(server.requests).toHaveLength(2);
    const [first, second] = server.requests;
    expect((second?.receivedAt ?? 0) - (first?.receivedAt ?? 0)).toBeGreaterThanOrEqual(1_000);
  });

  it('retries a 500 and returns the later success', async () => {
    server.enqueue({ status: 500, body: { error: { message: 'boom' } } });
    const result = await withRetries(modelAt(), fastRetries).doGenerate(call);
    expect(result.text).toBe('ok');
    expect(server.requests).toHaveLength(2);
  });

  it('stops a persistent 503 at maxAttempts with the last error', async () => {
    server.setDefaultReply({ status: 503, body: { error: { message: 'overloaded' } } });
    const error = await withRetries(modelAt(), fastRetries)
      .doGenerate(call)
      .catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({
      code: 'MODEL_CALL_FAILED',
      statusCode: 503,
      isRetryable: true,
      url: `${server.url}/chat/completions`,
    });
    expect(server.requests).toHaveLength(3);
  });

  it('does not retry a 429 whose body says insufficient_quota', async () => {
    server.setDefaultReply({
      status: 429,
      body: {
        error: { message: 'You exceeded your current quota', type: 'insufficient_quota', code: 'insufficient_quota' },
      },
    });
    const error = await withRetries(modelAt(), fastRetries)
      .doGenerate(call)
      .catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({
      statusCode: 429,
      isRetryable: false,
      message: expect.stringMatching(/out of quota/),
    });
    expect(server.requests).toHaveLength(1);
  });

  it('does not retry a 400, and keeps a raw non-OpenAI error body', async () => {
    server.setDefaultReply({ status: 400, body: { object: 'error', message: 'model "m" does not exist' } });
    const error = await withRetries(modelAt(), fastRetries)
      .doGenerate(call)
      .catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({
      statusCode: 400,
      isRetryable: false,
      responseBody: '{"object":"error","message":"model \\"m\\" does not exist"}',
    });
    expect(server.requests).toHaveLength(1);
  });

  it('truncates a long error body to 2 KiB', async () => {
    server.enqueue({ status: 502, body: 'x'.repeat(10_000) });
    const error = (await modelAt()
      .doGenerate(call)
      .catch((thrown: unknown) => thrown)) as { responseBody: string; isRetryable: boolean };
    expect(error.isRetryable).toBe(true);
    expect(Buffer.byteLength(error.responseBody)).toBeLessThanOrEqual(2048 + 3);
  });
});

describe('openai-compatible failures: timeouts and broken connections', () => {
  it('times out a slow server with a retryable error in bounded time', async () => {
    // The reply would come after ten minutes: only the timeout can end the call (bounded by the test's own timeout).
    server.enqueue({ delayMs: 600_000, reply: { text: 'too late' } });
    const error = await modelAt({ timeout: 200 })
      .doGenerate(call)
      .catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({
      code: 'MODEL_CALL_FAILED',
      isRetryable: true,
      message: expect.stringMatching(/timed out after 200 ms/),
    });
  });

  it('fails on a body cut mid-way and returns no partial text', async () => {
    server.enqueue({ truncateAfterBytes: 60, reply: { text: 'a long answer that never arrives in full' } });
    const error = await modelAt()
      .doGenerate(call)
      .catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ code: 'MODEL_CALL_FAILED', isRetryable: true });
  });

  it('reports a refused connection as retryable', async () => {
    const closed = await startScriptedOpenAIServer();
    await closed.close();
    const error = await createOpenAICompatibleModel({ baseURL: closed.url, modelId: 'm' })
      .doGenerate(call)
      .catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ isRetryable: true, message: expect.stringMatching(/Could not reach/) });
  });
});

describe('openai-compatible failures: streams cut short', () => {
  it('throws when the stream is cut mid-way, after yielding no finish part', async () => {
    server.enqueue({
      truncateAfterBytes: 400,
      reply: { text: 'This streamed answer is going to be cut off somewhere in the middle.' },
    });
    const parts: string[] = [];
    const error = await (async () => {
      for await (const part of modelAt().doStream(call)) parts.push(part.type);
    })().catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ code: 'MODEL_CALL_FAILED', isRetryable: true });
    expect(parts).not.toContain('finish');
  });

  it('throws when a stream ends cleanly without a finish reason', async () => {
    const chunk = {
      id: 'c',
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta: { content: 'half an ans' }, finish_reason: null }],
    };
    server.enqueue({
      status: 200,
      body: `data: ${JSON.stringify(chunk)}\n\n`,
      headers: { 'content-type': 'text/event-stream' },
    });
    await expect(modelAt({ stream: true }).doGenerate(call)).rejects.toMatchObject({
      message: expect.stringMatching(/ended before the model finished/),
    });
  });
});

describe('openai-compatible failures: retry-after parsing', () => {
  const headers = (values: Record<string, string>) => new Headers(values);

  it('reads retry-after-ms, Retry-After seconds and an HTTP date', () => {
    expect(parseRetryAfter(headers({ 'retry-after-ms': '250', 'retry-after': '9' }))).toBe(250);
    expect(parseRetryAfter(headers({ 'retry-after': '1.5' }))).toBe(1_500);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter(headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:30 GMT' }), now)).toBe(30_000);
    expect(parseRetryAfter(headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(parseRetryAfter(headers({}))).toBeUndefined();
  });
});

describe('openai-compatible failures: bad answers reach the observer as rejections', () => {
  const observerInput = {
    scope: { tenantId: 't', conversationId: 'c', agentId: 'a' },
    config: DEFAULT_OBSERVATION_CONFIG,
    messages: [{ seq: 1, role: 'user', content: 'My name is Ada and I prefer tea.' }],
    reflection: null,
    unreflected: [],
  };

  it('rejects a length-truncated answer after exactly one request', async () => {
    server.enqueue({ text: 'IMPORTANCE:0.8\nThe user is called Ada and prefers', finishReason: 'length' });
    const observer = createModelObserver(withCircuitBreaker(withRetries(modelAt(), fastRetries)));
    await expect(observer.observe(observerInput)).rejects.toMatchObject({
      code: 'MODEL_OUTPUT_INVALID',
      data: { reason: 'truncated' },
    });
    expect(server.requests).toHaveLength(1);
  });

  it('rejects a refusal in the reflector', async () => {
    server.enqueue({ refusal: 'I cannot summarise this.' });
    const reflector = createModelReflector(withRetries(modelAt(), fastRetries));
    const input = {
      scope: observerInput.scope,
      config: DEFAULT_OBSERVATION_CONFIG,
      reflection: null,
      observations: [],
    };
    await expect(reflector.reflect(input)).rejects.toMatchObject({
      code: 'MODEL_OUTPUT_INVALID',
      data: { reason: 'refused' },
    });
    expect(server.requests).toHaveLength(1);
  });
});

describe('openai-compatible failures: TLS that no retry mends', () => {
  it.each([
    ['a self-signed certificate', startSelfSignedServer, 'DEPTH_ZERO_SELF_SIGNED_CERT', 'NODE_EXTRA_CA_CERTS'],
    ['an https:// URL for a plain HTTP port', startPlainHttpServer, 'ERR_SSL_WRONG_VERSION_NUMBER', 'use http://'],
  ])('names %s and its remedy, and is not retried', async (_name, start, code, remedy) => {
    const trap = await start();
    try {
      const model = withRetries(
        createOpenAICompatibleModel({ baseURL: trap.url, modelId: 'm', apiKey: 'test' }),
        fastRetries,
      );
      const error = await model.doGenerate(call).catch((thrown: unknown) => thrown);
      expect(error).toMatchObject({
        code: 'MODEL_CALL_FAILED',
        isRetryable: false,
        url: `${trap.url}/chat/completions`,
      });
      expect((error as Error).message).toContain(`TLS with ${trap.url}/chat/completions failed (${code}`);
      expect((error as Error).message).toContain(remedy);
      expect(trap.connections()).toBe(1);
    } finally {
      await trap.close();
    }
  });
});

describe('openai-compatible failures: a 401', () => {
  const unauthorized = { status: 401, body: { error: { message: 'Incorrect API key provided: not-needed' } } };

  it('says no API key was given when apiKey was left out, and is not retried', async () => {
    server.setDefaultReply(unauthorized);
    const error = await withRetries(modelAt({ apiKey: undefined }), fastRetries)
      .doGenerate(call)
      .catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ code: 'MODEL_CALL_FAILED', statusCode: 401, isRetryable: false });
    expect((error as Error).message).toContain(
      'No API key was given (apiKey is unset, so the request carried the placeholder "not-needed"): ' +
        "pass the server's key as apiKey.",
    );
    expect(server.requests.map((request) => request.headers['authorization'])).toEqual(['Bearer not-needed']);
  });

  it("takes the key out of the server's answer, whatever its shape, in the message and the body kept", async () => {
    const key = 'tok-9f8e7d6c5b4a39281706f5e4d3c2b1a0';
    server.setDefaultReply({ status: 401, body: { error: { message: `Invalid API key ${key} for llama` } } });
    const error = await modelAt({ apiKey: key })
      .doGenerate(call)
      .catch((thrown: unknown) => thrown);
    expect(server.requests[0]?.headers['authorization']).toBe(`Bearer ${key}`);
    expect((error as Error).message).toContain('Invalid API key [REDACTED:api_key] for llama');
    expect(JSON.stringify(error)).not.toContain(key);
    expect(JSON.stringify((error as { responseBody?: string }).responseBody)).toContain('[REDACTED:api_key]');
  });

  it('asks to check the key that was given', async () => {
    server.setDefaultReply(unauthorized);
    const error = await modelAt({ apiKey: 'sk-wrong' })
      .doGenerate(call)
      .catch((thrown: unknown) => thrown);
    expect((error as Error).message).toContain('Check the API key.');
    expect((error as Error).message).not.toContain('No API key was given');
  });
});
