/**
 * Model failures through the real HTTP client: nothing is stored from a bad answer, no
 * message is lost, and the caller gets its answer in bounded time.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startScriptedOpenAIServer } from '../../test/support/scripted-openai-server.js';
import type { ScriptedServer } from '../../test/support/scripted-openai-server.js';
import { HarnessMemoryError } from '../core/errors.js';
import { memoryIdOf } from '../core/scope.js';
import { withCircuitBreaker } from '../llm/circuit-breaker.js';
import { createOpenAICompatibleModel } from '../llm/openai-compatible.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import type { MemoryStore } from '../storage/store.js';
import { createModelObserver } from './model-observer.js';
import { createObservationalMemory } from './observational-memory.js';
import type { ObservationalMemory, ObservationalMemoryEvent } from './observational-memory.js';

const scope = { tenantId: 't', conversationId: 'c', agentId: 'a' };
const memoryId = memoryIdOf(scope);
const GOOD = { text: 'IMPORTANCE:0.9\nUser prefers tabs' };

let server: ScriptedServer;
let store: MemoryStore;
let memory: ObservationalMemory;
// The circuit breaker's clock: tests move it past `resetMs` instead of waiting it out.
let breakerNow = 0;

beforeEach(async () => {
  server = await startScriptedOpenAIServer();
  store = createInMemoryStore();
  breakerNow = Date.now();
  const model = withCircuitBreaker(
    createOpenAICompatibleModel({ baseURL: server.url, modelId: 'memory-model', apiKey: 'test', timeout: 400 }),
    { failureThreshold: 3, resetMs: 300, now: () => breakerNow },
  );
  memory = createObservationalMemory({
    store,
    observer: createModelObserver(model),
    defaultEnabled: true,
    defaults: { observeMinTokens: 1 },
    retryDelayMs: 20,
    maxOperationAttempts: 3,
  });
});

afterEach(async () => {
  await server.close();
});

let nextId = 0;
function observe(content = 'I prefer tabs over spaces, always.') {
  nextId++;
  return memory.observe({ scope, runId: 'run-1', messages: [{ id: `m${nextId}`, role: 'user', content }] });
}

async function timed<T>(work: Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const start = Date.now();
  try {
    return { ms: Date.now() - start, value: await work };
  } catch (error) {
    return { ms: Date.now() - start, error };
  }
}

const unobserved = async () => (await store.listUnobservedMessages(memoryId, 1_000_000)).length;
const observations = async () => (await store.listObservations(memoryId)).map((item) => item.content);
/** Which of `words` (sent as `message <word>`) each request to the model showed, in order. */
const shownWords = (words: readonly string[]) =>
  server.requests.map((request) => {
    const { messages } = request.body as { messages: { content: string }[] };
    const prompt = messages.at(-1)?.content ?? '';
    return words.filter((word) => prompt.includes(`message ${word}`));
  });
const codeOf = (error: unknown) =>
  HarnessMemoryError.isInstance(error) ? [error.code, error.data['reason']] : [String(error)];

describe('observe failures: retryable', () => {
  it('honours Retry-After on a 429, then observes the same message once', async () => {
    server.enqueue({ status: 429, headers: { 'retry-after': '1' }, body: { error: { message: 'slow down' } } }, GOOD);
    const first = await timed(observe());
    expect(first.error).toBeDefined();
    // The caller did not wait for Retry-After: when observe returned, the retry had not been sent.
    expect(server.requests).toHaveLength(1);
    expect(await unobserved()).toBe(1);
    await memory.drain(scope, { timeoutMs: 30_000 });
    const [failed, retried] = server.requests;
    expect(retried!.receivedAt - failed!.receivedAt).toBeGreaterThanOrEqual(950);
    expect(await observations()).toEqual(['User prefers tabs']);
    expect(await unobserved()).toBe(0);
  });

  it(
    'parks the operation as dead after bounded attempts on persistent 5xx, keeps the message, and observes ' +
      'it later',
    async () => {
      server.setDefaultReply({ status: 503, body: { error: { message: 'down' } } });
      await expect(observe()).rejects.toBeDefined();
      await memory.drain(scope, { timeoutMs: 30_000 });
      expect(server.requests).toHaveLength(3);
      expect((await store.listOperations(memoryId)).at(-1)).toMatchObject({
        status: 'dead',
        attempt: 3,
        errorText: expect.stringContaining('gave up after 3 attempts'),
      });
      expect((await memory.status(scope)).deadOperations).toBe(1);
      expect(await unobserved()).toBe(1);
      server.setDefaultReply(GOOD);
      breakerNow += 350;
      const later = await observe('And use four-space tabs.');
      expect(later.observed).toBe(true);
      expect(await unobserved()).toBe(0);
      const lastRequest = JSON.stringify(server.requests.at(-1)?.body);
      expect(lastRequest).toContain('I prefer tabs over spaces');
      expect(lastRequest).toContain('four-space tabs');
    },
  );

  it('times out a slow model within bounded time and keeps the message', async () => {
    // The answer would come after ten minutes: only the client timeout can end the call.
    server.enqueue({ delayMs: 600_000, reply: GOOD });
    const result = await timed(observe());
    expect(result.error).toMatchObject({ code: 'MODEL_CALL_FAILED', isRetryable: true });
    expect(await unobserved()).toBe(1);
    expect(await observations()).toEqual([]);
    // The operation's error, which the tenant can read, names the server without its address.
    const operation = (await store.listOperations(memoryId)).at(-1);
    expect(operation?.errorText).toContain('the model server timed out');
    expect(operation?.errorText).not.toContain('127.0.0.1');
  });
});

describe('observe failures: error text', () => {
  it("keeps control characters of a model server's message out of the log (a NUL Postgres cannot store, a terminal escape)", async () => {
    server.enqueue({
      status: 400,
      body: { error: { message: 'bad byte \u0000 here \u001b[2J\u001b]0;pwned\u0007 end \uD83D' } },
    });
    const result = await timed(observe());
    expect(result.error).toBeDefined();
    const operation = (await store.listOperations(memoryId)).at(-1);
    expect(operation?.status).toBe('failed');
    expect(operation?.errorText).toContain('bad byte  here [2J]0;pwned end \uFFFD');
    expect([...(operation?.errorText ?? '')].filter((char) => char < ' ' && char !== '\n')).toEqual([]);
  });
});

describe('observe failures: rejected answers', () => {
  const cases: Array<[string, Parameters<ScriptedServer['enqueue']>[0], string]> = [
    ['a length-truncated answer', { text: 'IMPORTANCE:0.9\nUser pref', finishReason: 'length' }, 'truncated'],
    ['an empty answer', { text: '   ' }, 'empty'],
    ['an answer that is all thinking', { text: '<think>\nThe user said tabs, or did they' }, 'empty'],
    ['an answer over 64 KiB', { text: `IMPORTANCE:0.5\n${'x'.repeat(70_000)}` }, 'too_large'],
  ];
  for (const [name, reply, reason] of cases) {
    it(`rejects ${name}: nothing stored, no retry, message kept`, async () => {
      server.enqueue(reply);
      const result = await timed(observe());
      expect(codeOf(result.error)).toEqual(['MODEL_OUTPUT_INVALID', reason]);
      expect(server.requests).toHaveLength(1);
      expect(await observations()).toEqual([]);
      expect(await unobserved()).toBe(1);
      const operation = (await store.listOperations(memoryId)).at(-1);
      expect(operation?.status).toBe('failed');
      expect(operation?.errorText).toContain(reason === 'too_large' ? 'cap' : reason === 'empty' ? 'empty' : 'cut off');
    });
  }

  const refusals: Array<[string, Parameters<ScriptedServer['enqueue']>[0]]> = [
    ['a content-filtered answer', { text: '', finishReason: 'content_filter' }],
    ['a refusal', { text: '', refusal: 'I cannot help with that' }],
    [
      "a 400 naming the provider's content policy",
      {
        status: 400,
        body: {
          error: {
            message: 'Invalid prompt: your prompt was flagged as potentially violating our usage policy.',
            code: 'invalid_prompt',
          },
        },
      },
    ],
  ];
  it.each(refusals)(
    'passes over a single message the model refuses (%s): nothing stored from it, the scope observed past it, the log and an event say so',
    async (_name, refusal) => {
      const events: ObservationalMemoryEvent[] = [];
      memory.subscribe((event) => events.push(event));
      server.enqueue(refusal, GOOD);
      const first = await timed(observe('something the filter flags'));
      expect(first.error).toBeUndefined();
      expect(await unobserved()).toBe(0);
      expect(await observations()).toEqual([]);
      const operation = (await store.listOperations(memoryId)).at(-1);
      expect(operation?.status).toBe('applied');
      expect(operation?.errorText).toMatch(/^skipped message 1 \(id:m\d+\): the model refused it/);
      expect(operation?.errorText).not.toContain('127.0.0.1');
      expect(events.find((event) => event.type === 'memory.message.skipped')).toMatchObject({
        scope,
        runId: 'run-1',
        operationId: operation?.operationId,
        messageSeq: 1,
        messageKey: `id:m${nextId}`,
        error: operation?.errorText,
      });
      // The next message is observed: the refused one no longer stands in front of it.
      await observe();
      expect(await observations()).toEqual(['User prefers tabs']);
      expect(server.requests).toHaveLength(2);
    },
  );

  it('narrows a refused batch to the one message refused, and observes the messages around it', async () => {
    const refused = { text: '', finishReason: 'content_filter' as const };
    server.enqueue(refused, { text: 'IMPORTANCE:0.5\nFirst half observed' }, refused, refused, {
      text: 'IMPORTANCE:0.5\nLast observed',
    });
    const events: ObservationalMemoryEvent[] = [];
    memory.subscribe((event) => events.push(event));
    await memory.observe({
      scope,
      runId: 'run-1',
      messages: ['one', 'two', 'three', 'four'].map((word) => ({
        id: `narrow-${word}`,
        role: 'user',
        content: `message ${word}`,
      })),
    });
    await memory.drain(scope);
    expect(shownWords(['one', 'two', 'three', 'four'])).toEqual([
      ['one', 'two', 'three', 'four'],
      ['one', 'two'],
      ['three', 'four'],
      ['three'],
      ['four'],
    ]);
    expect(await observations()).toEqual(['First half observed', 'Last observed']);
    expect(await unobserved()).toBe(0);
    expect(
      events.flatMap((event) =>
        event.type === 'memory.message.skipped' ? [[event.messageSeq, event.messageKey]] : [],
      ),
    ).toEqual([[3, 'id:narrow-three']]);
  });

  it('does not pass over a single message on a truncation or an over-context (it may be the configuration): it fails', async () => {
    server.enqueue({ text: 'IMPORTANCE:0.9\nUser pref', finishReason: 'length' });
    const result = await timed(observe());
    expect(codeOf(result.error)).toEqual(['MODEL_OUTPUT_INVALID', 'truncated']);
    expect(await unobserved()).toBe(1);
    expect((await store.listOperations(memoryId)).at(-1)?.status).toBe('failed');
  });

  const tooMuch: Array<[string, Parameters<ScriptedServer['enqueue']>[0]]> = [
    ['the answer to it is cut off', { text: 'IMPORTANCE:0.9\nUser pref', finishReason: 'length' }],
    [
      "it is over the model's context",
      {
        status: 400,
        body: {
          error: {
            message: "This model's maximum context length is 8192 tokens.",
            code: 'context_length_exceeded',
          },
        },
      },
    ],
  ];
  it.each(tooMuch)('asks for half the batch when %s, so the scope is never stuck behind it', async (_name, first) => {
    server.enqueue(
      first,
      { text: 'IMPORTANCE:0.5\nFirst half observed' },
      { text: 'IMPORTANCE:0.5\nSecond half observed' },
    );
    await memory.observe({
      scope,
      runId: 'run-1',
      messages: ['one', 'two', 'three', 'four'].map((word) => ({
        id: `half-${word}`,
        role: 'user',
        content: `message ${word}`,
      })),
    });
    await memory.drain(scope);
    const shown = shownWords(['one', 'two', 'three', 'four']);
    expect(shown).toEqual([
      ['one', 'two', 'three', 'four'],
      ['one', 'two'],
      ['three', 'four'],
    ]);
    expect(await observations()).toEqual(['First half observed', 'Second half observed']);
    expect(await unobserved()).toBe(0);
  });

  it('retries a batch that failed twice in halves, so the messages before one the model fails on are observed', async () => {
    const failure = { status: 500, body: { error: { message: 'boom' } } };
    server.enqueue(
      failure,
      failure,
      { text: 'IMPORTANCE:0.5\nFirst observed' },
      { text: 'IMPORTANCE:0.5\nRest observed' },
    );
    await memory
      .observe({
        scope,
        runId: 'run-1',
        messages: ['one', 'two', 'three', 'four'].map((word) => ({
          id: `retry-${word}`,
          role: 'user',
          content: `message ${word}`,
        })),
      })
      .catch(() => undefined);
    await memory.drain(scope, { timeoutMs: 30_000 });
    const shown = shownWords(['one', 'two', 'three', 'four']);
    expect(shown).toEqual([
      ['one', 'two', 'three', 'four'],
      ['one', 'two', 'three', 'four'],
      ['one', 'two'],
      ['three', 'four'],
    ]);
    expect(await observations()).toEqual(['First observed', 'Rest observed']);
    expect(await unobserved()).toBe(0);
  });

  it('stores what a reasoning model concluded, never its thinking', async () => {
    server.enqueue({
      text: '<think>\nThe user may be joking about tabs. I will record it anyway.\n</think>\n\nIMPORTANCE: 0.9\nUser prefers tabs',
    });
    await observe();
    expect(await observations()).toEqual(['User prefers tabs']);
    expect(await memory.snippet(scope)).not.toContain('joking');
  });

  it('fails on a connection cut mid-body, storing no partial observation', async () => {
    server.enqueue(
      { truncateAfterBytes: 40, reply: GOOD },
      { truncateAfterBytes: 40, reply: GOOD },
      { truncateAfterBytes: 40, reply: GOOD },
    );
    await expect(observe()).rejects.toBeDefined();
    expect(await observations()).toEqual([]);
    expect(await unobserved()).toBe(1);
  });

  it('bounds an observer that produces junk', async () => {
    const blocks = Array.from({ length: 200 }, (_, index) => `IMPORTANCE:0.5\nJunk ${index} ${'y'.repeat(3000)}`).join(
      '\n\n',
    );
    server.enqueue({ text: blocks.slice(0, 60_000) });
    await observe();
    const stored = await store.listObservations(memoryId);
    expect(stored.length).toBeLessThanOrEqual(50);
    expect(Math.max(...stored.map((item) => item.content.length))).toBeLessThanOrEqual(2000 + 20);
  });
});

describe('observe failures: circuit breaker', () => {
  it("never buries another scope's operation while the circuit is open: it waits without using up attempts", async () => {
    const other = { tenantId: 't2', conversationId: 'healthy', agentId: 'a' };
    const events: ObservationalMemoryEvent[] = [];
    memory.subscribe((event) => events.push(event));
    server.setDefaultReply({ status: 500, body: { error: { message: 'boom' } } });
    await observe('the message this model fails on').catch(() => undefined);
    await memory.drain(scope, { timeoutMs: 30_000 }).catch(() => undefined);
    expect(server.requests).toHaveLength(3);

    // The healthy scope's operation meets the open circuit again and again (more often than its
    // 3 attempts allow) and never reaches the model.
    await memory
      .observe({ scope: other, runId: 'run-2', messages: [{ id: 'h1', role: 'user', content: 'I use vim.' }] })
      .catch(() => undefined);
    const fastFailures = () =>
      events.filter(
        (event) =>
          event.type === 'memory.operation.failed' && event.scope.tenantId === 't2' && /circuit/.test(event.error),
      );
    for (const deadline = Date.now() + 20_000; fastFailures().length < 5 && Date.now() < deadline;)
      await memory.drain(other, { timeoutMs: 500 }).catch(() => undefined);
    expect(fastFailures().length).toBeGreaterThanOrEqual(5);
    expect(fastFailures().every((event) => event.type === 'memory.operation.failed' && event.willRetry)).toBe(true);
    expect(events.filter((event) => event.type === 'memory.operation.dead' && event.scope.tenantId === 't2')).toEqual(
      [],
    );
    expect(server.requests).toHaveLength(3);

    server.setDefaultReply(GOOD);
    breakerNow += 350;
    await memory.drain(other, { timeoutMs: 30_000 });
    expect((await store.listObservations(memoryIdOf(other))).map((item) => item.content)).toEqual([
      'User prefers tabs',
    ]);
  });

  it(
    'opens after repeated failures, fails fast without calling the model, and catches up with the ' + 'backlog',
    async () => {
      server.setDefaultReply({ status: 500, body: { error: { message: 'boom' } } });
      await observe('message number 0').catch(() => undefined);
      // Retries of the queued operation run into the failing model until the circuit opens.
      await memory.drain(scope, { timeoutMs: 30_000 }).catch(() => undefined);
      const calls = server.requests.length;
      expect(calls).toBe(3);
      const fast = await timed(observe('message while open'));
      expect(fast.error).toBeDefined();
      expect(String((fast.error as Error).message)).toMatch(/circuit/i);
      expect(server.requests.length).toBe(calls);
      expect(await unobserved()).toBe(2);

      server.setDefaultReply(GOOD);
      breakerNow += 350;
      await memory.drain(scope, { timeoutMs: 30_000 });
      await observe('message after recovery');
      expect(await unobserved()).toBe(0);
      const prompt = JSON.stringify(server.requests.at(-1)?.body) + JSON.stringify(server.requests.at(-2)?.body);
      expect(prompt).toContain('message while open');
    },
  );
});
