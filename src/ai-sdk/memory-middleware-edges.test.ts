/**
 * The middleware where a call does not go straight through: tool inputs the SDK reshapes, a
 * forget during or before the call, a generation that cannot be read, an abort while memory
 * is read, a stream that does not end whole, a message made only of files, and provider call
 * ids that are not scope ids.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod/v4';
import { AI_SDK_VERSIONS, MOCK_USAGE as usage, recordingMemory } from '../../test/support/ai-sdk-versions.js';
import { createMockLanguageModel, type MockLanguageModel } from '../../test/support/mock-language-model.js';
import { createObservationalMemory, type ObservationalMemory } from '../memory/observational-memory.js';
import { createWorkingMemory, type WorkingMemory } from '../memory/working-memory.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import type { MemoryStore } from '../storage/store.js';
import { memoryIdOf } from '../core/scope.js';
import { createMemoryMiddleware, createMemoryTools } from './index.js';

const scope = { tenantId: 'acme', conversationId: 'chat-edges', agentId: 'helper' };

describe.each(AI_SDK_VERSIONS)('AI SDK middleware at the edges: $label', (version) => {
  const { ai } = version;
  let store: MemoryStore;
  let observer: MockLanguageModel;
  let memory: ObservationalMemory;
  let workingMemory: WorkingMemory;

  beforeEach(() => {
    store = createInMemoryStore();
    observer = createMockLanguageModel('IMPORTANCE: 0.9\nThe user books hotels.');
    memory = createObservationalMemory({
      store,
      model: observer,
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    workingMemory = createWorkingMemory({ store });
  });

  const recording = (handed: string[]): ObservationalMemory => recordingMemory(memory, handed);
  const generated = (parts: object[]) => ({
    content: parts,
    finishReason: parts.some((part) => (part as { type: string }).type === 'tool-call')
      ? { unified: 'tool-calls', raw: 'tool_calls' }
      : { unified: 'stop', raw: 'stop' },
    usage,
    warnings: [],
  });
  const stored = async () =>
    (await store.listUnobservedMessages(memoryIdOf(scope), Number.MAX_SAFE_INTEGER)).map((message) => message.content);

  it('hands a tool call to observe once, though the next step sends back its input as the schema shaped it', async () => {
    const handed: string[] = [];
    const middleware = createMemoryMiddleware({ memory: recording(handed), workingMemory, scope });
    let call = 0;
    const inner = new version.Mock({
      doGenerate: (async () =>
        generated(
          call++ === 0
            ? [{ type: 'tool-call', toolCallId: 'call_a', toolName: 'book', input: '{"nights": 2, "city": "Paris"}' }]
            : [{ type: 'text', text: 'Booked.' }],
        )) as never,
    });
    const tools = {
      book: ai.tool({
        inputSchema: z.object({ city: z.string(), nights: z.number(), unit: z.string().default('night') }),
        execute: async () => 'ok',
      }),
    };
    const result = await ai.generateText({
      model: ai.wrapLanguageModel({ model: inner as never, middleware }),
      tools: tools as never,
      stopWhen: version.twoSteps() as never,
      prompt: 'Book 2 nights in Paris.',
    });
    expect(result.text).toBe('Booked.');
    await middleware.flush();
    expect(handed.filter((text) => text.includes('"name":"book"'))).toHaveLength(1);
    expect(handed.filter((text) => text.startsWith('tool:'))).toHaveLength(1);
  });

  it('stores nothing of a call whose scope was forgotten while the model worked', async () => {
    let release = (): void => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let started = (): void => undefined;
    const calling = new Promise<void>((resolve) => (started = resolve));
    const inner = new version.Mock({
      doGenerate: (async () => {
        started();
        await released;
        return generated([{ type: 'text', text: 'Noted your address.' }]);
      }) as never,
    });
    const middleware = createMemoryMiddleware({ memory, workingMemory, scope });
    const answer = ai.generateText({
      model: ai.wrapLanguageModel({ model: inner as never, middleware }),
      prompt: 'My home address is 1 Secret Lane.',
    });
    await calling;
    await memory.forget(scope);
    release();
    await answer;
    await middleware.flush();
    expect(await stored()).toEqual([]);
    expect(observer.calls).toHaveLength(0);
    expect(await memory.snippet(scope)).toBe('');
  });

  const answering = (text: string) =>
    new version.Mock({ doGenerate: (async () => generated([{ type: 'text', text }])) as never });
  const observedTexts = () => observer.calls.map((call) => JSON.stringify(call.messages));

  it('hands over again, after a forget, the messages it had handed over before it', async () => {
    const handed: string[] = [];
    const middleware = createMemoryMiddleware({ memory: recording(handed), workingMemory, scope });
    const model = ai.wrapLanguageModel({ model: answering('Hi Bob.') as never, middleware });
    await ai.generateText({ model, prompt: 'My name is Bob.' });
    await middleware.flush();
    await memory.forget(scope);
    await ai.generateText({ model, prompt: 'My name is Bob.' });
    await middleware.flush();
    await memory.drain(scope);
    expect(handed.filter((text) => text === 'user:My name is Bob.[]')).toHaveLength(2);
    expect(observedTexts().filter((text) => text.includes('My name is Bob.'))).toHaveLength(2);
    expect((await memory.status(scope)).observationCount).toBe(1);
  });

  it('hands over everything when the scope generation cannot be read, trusting no earlier generation', async () => {
    const handed: string[] = [];
    let generationFails = false;
    const flaky: ObservationalMemory = {
      ...recording(handed),
      generation: async (scopeInput) => {
        if (generationFails) throw new Error('store is down');
        return memory.generation(scopeInput);
      },
    };
    const middleware = createMemoryMiddleware({ memory: flaky, workingMemory, scope });
    const model = ai.wrapLanguageModel({
      model: new version.Mock({
        doStream: (async () => ({
          stream: version.toStream([
            { type: 'stream-start', warnings: [] },
            { type: 'text-start', id: 't1' },
            { type: 'text-delta', id: 't1', delta: 'Hi Bob.' },
            { type: 'text-end', id: 't1' },
            { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
          ] as never),
        })) as never,
      }) as never,
      middleware,
    });
    await ai.streamText({ model, prompt: 'My name is Bob.' }).consumeStream();
    await middleware.flush();
    await memory.forget(scope);
    generationFails = true;
    for (let call = 0; call < 2; call++) {
      await ai.streamText({ model, prompt: 'My name is Bob.' }).consumeStream();
      await middleware.flush();
    }
    // The store skips what it holds: the third call stores nothing new.
    expect(handed.filter((text) => text === 'user:My name is Bob.[]')).toHaveLength(3);
    await memory.drain(scope);
    expect(observedTexts().filter((text) => text.includes('My name is Bob.'))).toHaveLength(2);
  });

  it('hands over a user message made only of files as placeholder lines, never their data', async () => {
    const handed: string[] = [];
    const middleware = createMemoryMiddleware({ memory: recording(handed), workingMemory, scope });
    const model = ai.wrapLanguageModel({ model: answering('Nice picture.') as never, middleware });
    const png = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10]);
    const pdf = new TextEncoder().encode('%PDF-1.7\n');
    const picture = {
      role: 'user' as const,
      content: [{ type: 'image' as const, image: png, mediaType: 'image/png' }],
    };
    await ai.generateText({ model, messages: [picture] });
    await middleware.flush();
    await ai.generateText({
      model,
      messages: [
        picture,
        { role: 'assistant', content: 'Nice picture.' },
        {
          role: 'user',
          content: [
            { type: 'file', data: pdf, mediaType: 'application/pdf', filename: 'menu.pdf' },
            { type: 'text', text: 'And this?' },
          ],
        },
      ],
    });
    await middleware.flush();
    await memory.drain(scope);
    expect(handed).toEqual([
      'user:[file: image/png][]',
      'assistant:Nice picture.[]',
      'user:[file: menu.pdf (application/pdf)]\nAnd this?[]',
      'assistant:Nice picture.[]',
    ]);
    const observed = observedTexts().join('\n');
    expect(observed).toContain('[file: image/png]');
    expect(observed).toContain('[file: menu.pdf (application/pdf)]');
    expect(observed).not.toContain(Buffer.from(png).toString('base64'));
  });

  it('gives the observer a file name cleaned as the words are: invisible characters out, secrets redacted', async () => {
    const middleware = createMemoryMiddleware({ memory, workingMemory, scope });
    const model = ai.wrapLanguageModel({ model: answering('Received.') as never, middleware });
    const filename = 'in\u200Bvoice for jane.doe@example.com.pdf';
    await ai.generateText({
      model,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'file', data: new TextEncoder().encode('%PDF-1.7\n'), mediaType: 'application/pdf', filename },
          ],
        },
      ],
    });
    await middleware.flush();
    await memory.drain(scope);
    const observed = observedTexts().join('\n');
    expect(observed).toContain('[file: invoice for [REDACTED:email_address] (application/pdf)]');
    expect(observed).not.toContain('jane.doe');
  });

  it('hands over answers made only of a file as placeholder lines, streamed or not, each once', async () => {
    const handed: string[] = [];
    const middleware = createMemoryMiddleware({ memory: recording(handed), workingMemory, scope });
    const drawing = { type: 'file', mediaType: 'image/png', data: 'iVBORw0KGgo=' };
    const inner = new version.Mock({
      doGenerate: (async () => generated([drawing])) as never,
      doStream: (async () => ({
        stream: version.toStream([
          { type: 'stream-start', warnings: [] },
          drawing,
          { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
        ] as never),
      })) as never,
    });
    const model = ai.wrapLanguageModel({ model: inner as never, middleware });
    await ai.generateText({ model, prompt: 'Draw a cat.' });
    await middleware.flush();
    const history = [
      { role: 'user' as const, content: 'Draw a cat.' },
      { role: 'assistant' as const, content: [{ type: 'file' as const, data: drawing.data, mediaType: 'image/png' }] },
      { role: 'user' as const, content: 'Draw a dog.' },
    ];
    await ai.streamText({ model, messages: history }).consumeStream();
    await middleware.flush();
    expect(handed).toEqual([
      'user:Draw a cat.[]',
      'assistant:[file: image/png][]',
      'user:Draw a dog.[]',
      'assistant:[file: image/png][]',
    ]);
  });

  it('does not hold a call its caller aborted while memory was being read', async () => {
    const controller = new AbortController();
    const stalled = {
      ...memory,
      mode: memory.mode,
      // A store that never answers: only the abort can end the wait.
      snippet: () => {
        controller.abort();
        return new Promise<string>(() => undefined);
      },
    } as ObservationalMemory;
    // As a provider's fetch does, the model call fails at once on an aborted signal.
    const inner = new version.Mock({
      doGenerate: (async (options: { abortSignal?: AbortSignal }) => {
        options.abortSignal?.throwIfAborted();
        return generated([{ type: 'text', text: 'late' }]);
      }) as never,
    });
    const middleware = createMemoryMiddleware({
      memory: stalled,
      workingMemory,
      scope,
      logger: { warn: () => undefined },
    });
    const model = ai.wrapLanguageModel({ model: inner as never, middleware });
    const outcome = await ai.generateText({ model, prompt: 'Hi', abortSignal: controller.signal, maxRetries: 0 }).then(
      () => 'answered',
      (error: unknown) => (error as Error).name,
    );
    expect(outcome).toBe('AbortError');
  });

  // As a provider's fetch does, a stream that hangs breaks off when the call's signal is aborted.
  const streamOf = (parts: object[], hang: boolean, signal: AbortSignal | undefined) =>
    new ReadableStream({
      start(controller) {
        for (const part of parts) controller.enqueue(part);
        if (!hang) controller.close();
        else signal?.addEventListener('abort', () => controller.error(signal.reason), { once: true });
      },
    });
  const streaming = (parts: object[], hang = false) =>
    new version.Mock({
      doStream: (async (options: { abortSignal?: AbortSignal }) => ({
        stream: streamOf(parts, hang, options.abortSignal),
      })) as never,
    });
  const opening = [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't1' },
    { type: 'text-delta', id: 't1', delta: 'Partial ' },
  ];

  it('hands over the prompt alone when the reader aborts a stream part way', async () => {
    const handed: string[] = [];
    const middleware = createMemoryMiddleware({ memory: recording(handed), workingMemory, scope });
    const controller = new AbortController();
    const streamed = ai.streamText({
      model: ai.wrapLanguageModel({ model: streaming(opening, true) as never, middleware }),
      prompt: 'I am allergic to peanuts.',
      abortSignal: controller.signal,
      onError: () => undefined,
    });
    for await (const delta of streamed.textStream) {
      expect(delta).toBe('Partial ');
      controller.abort();
    }
    // The SDK cancels the model's stream when it sees the abort.
    while (handed.length === 0) await middleware.flush().then(() => new Promise((resolve) => setImmediate(resolve)));
    expect(handed).toEqual(['user:I am allergic to peanuts.[]']);
  });

  it('hands over the prompt alone when a stream carries an error part, never the half answer', async () => {
    const handed: string[] = [];
    const middleware = createMemoryMiddleware({ memory: recording(handed), workingMemory, scope });
    const parts = [
      ...opening,
      { type: 'error', error: new Error('upstream broke') },
      { type: 'finish', finishReason: { unified: 'error', raw: 'error' }, usage },
    ];
    const streamed = ai.streamText({
      model: ai.wrapLanguageModel({ model: streaming(parts) as never, middleware }),
      prompt: 'I am allergic to peanuts.',
      onError: () => undefined,
    });
    await streamed.consumeStream();
    await middleware.flush();
    expect(handed).toEqual(['user:I am allergic to peanuts.[]']);
  });

  it('runs the memory tools for provider call ids that are not scope ids', async () => {
    const tools = createMemoryTools({ memory, workingMemory, scope });
    const execute = tools.working_memory.execute as (input: unknown, options: unknown) => Promise<unknown>;
    for (const toolCallId of ['call_1|fc_2', `call_${'x'.repeat(200)}`])
      expect(await execute({ action: 'set', key: 'k', value: 1 }, { toolCallId, messages: [] })).toEqual({
        ok: true,
        key: 'k',
      });
  });
});

describe('AI SDK: a scope given as ids is checked when the middleware or tools are made', () => {
  it('refuses one without a conversation id, in the middleware and the tools', () => {
    const store = createInMemoryStore();
    const memory = createObservationalMemory({ store });
    const workingMemory = createWorkingMemory({ store });
    for (const make of [
      () => createMemoryMiddleware({ memory, workingMemory, scope: { tenantId: 'acme' } }),
      () => createMemoryTools({ memory, workingMemory, scope: { tenantId: 'acme' } }),
    ])
      expect(make).toThrow(
        expect.objectContaining({
          code: 'OPTION_INVALID',
          // One full stop between the quoted problem and the hint.
          message: expect.stringMatching(/conversation_id is required when there is no run id to fall back to\. Pass /),
        }),
      );
  });

  it('answers a tool call whose scope function fails with the error, as the tools answer every refusal', async () => {
    const store = createInMemoryStore();
    const tools = createMemoryTools({
      workingMemory: createWorkingMemory({ store }),
      scope: () => ({ tenantId: 'acme' }),
    });
    const execute = tools.working_memory.execute as (input: unknown, options: unknown) => Promise<unknown>;
    expect(await execute({ action: 'list' }, { toolCallId: 'c1', messages: [] })).toMatchObject({
      error: { code: 'SCOPE_INVALID' },
    });
  });
});
