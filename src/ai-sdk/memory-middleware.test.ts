import * as ai6 from 'ai';
import { MockLanguageModelV3 as Mock6 } from 'ai/test';
import * as ai7 from 'ai-v7';
import { MockLanguageModelV3 as Mock7 } from 'ai-v7/test';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  AI_SDK_VERSIONS as VERSIONS,
  MOCK_USAGE as usage,
  recordingMemory,
} from '../../test/support/ai-sdk-versions.js';
import { startScriptedOpenAIServer, type ScriptedServer } from '../../test/support/scripted-openai-server.js';
import { createMockLanguageModel, type MockLanguageModel } from '../../test/support/mock-language-model.js';
import { createObservationalMemory, type ObservationalMemory } from '../memory/observational-memory.js';
import { createWorkingMemory, type WorkingMemory } from '../memory/working-memory.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createMemoryMiddleware, createMemoryTools } from './index.js';

const scope = { tenantId: 'acme', conversationId: 'chat-1', agentId: 'helper' };

function observedText(model: MockLanguageModel): string[] {
  return model.calls.map((call) => JSON.stringify(call.messages));
}

function requestMessages(server: ScriptedServer, index: number): { role: string; content: string }[] {
  return ((server.requests[index]?.body ?? {}) as { messages: { role: string; content: string }[] }).messages;
}

describe.each(VERSIONS)('AI SDK middleware: $label', (version) => {
  const { ai } = version;
  let server: ScriptedServer;
  let observer: MockLanguageModel;
  let memory: ObservationalMemory;
  let workingMemory: WorkingMemory;

  beforeEach(async () => {
    server = await startScriptedOpenAIServer({ strict: true });
    observer = createMockLanguageModel("IMPORTANCE: 0.9\nThe user's favourite colour is teal.");
    const store = createInMemoryStore();
    memory = createObservationalMemory({
      store,
      model: observer,
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    workingMemory = createWorkingMemory({ store });
  });

  afterEach(async () => {
    await server.close();
  });

  const compatibleModel = () =>
    version.compatible({ name: 'scripted', baseURL: server.url, apiKey: 'k' }).chatModel('scripted-model');

  it(
    'generateText: the second call of a scope is shown what the first one taught, after its own system ' + 'prompt',
    async () => {
      const middleware = createMemoryMiddleware({ memory, workingMemory, scope });
      const model = ai.wrapLanguageModel({ model: compatibleModel(), middleware });
      server.enqueue({ text: 'Noted: teal.' }, { text: 'Teal!' });
      await workingMemory.set(scope, 'plan', { step: 1 });
      const first = await ai.generateText({ model, prompt: 'My favourite colour is teal.' });
      expect(first.text).toBe('Noted: teal.');
      await middleware.flush();
      const second = await ai.generateText({ model, system: 'You are brief.', prompt: 'What is my favourite colour?' });
      expect(second.text).toBe('Teal!');
      const sent = requestMessages(server, 1);
      expect(sent.map((message) => message.role)).toEqual(['system', 'system', 'system', 'user']);
      expect(sent[0]?.content).toBe('You are brief.');
      expect(sent[1]?.content).toBe('<working-memory>\nplan: {"step":1}\n</working-memory>');
      expect(sent[2]?.content).toContain("The user's favourite colour is teal.");
      expect(observedText(observer).join('\n')).toContain('My favourite colour is teal.');
      expect(observedText(observer).join('\n')).toContain('Noted: teal.');
    },
  );

  it('streamText: observation starts when the stream ends, and the next call holds what it taught', async () => {
    const middleware = createMemoryMiddleware({ memory, workingMemory, scope });
    const model = ai.wrapLanguageModel({ model: compatibleModel(), middleware });
    server.enqueue({ text: 'Teal it is.' }, { text: 'Teal.' });
    const streamed = ai.streamText({ model, prompt: 'Remember: my favourite colour is teal.' });
    expect(await streamed.text).toBe('Teal it is.');
    await middleware.flush();
    expect(observedText(observer).join('\n')).toContain('Teal it is.');
    const again = ai.streamText({ model, prompt: 'Colour?' });
    expect(await again.text).toBe('Teal.');
    expect(requestMessages(server, 1)[0]?.content).toContain("The user's favourite colour is teal.");
  });

  it('observes a message once, though a chat UI sends the whole history every turn', async () => {
    const middleware = createMemoryMiddleware({ memory, workingMemory, scope });
    const model = ai.wrapLanguageModel({ model: compatibleModel(), middleware });
    server.enqueue({ text: 'Hello Ada.' }, { text: 'Teal.' }, { text: 'Bye.' });
    const history: { role: 'user' | 'assistant'; content: string }[] = [{ role: 'user', content: 'I am Ada.' }];
    for (const next of ['My favourite colour is teal.', 'Goodbye.']) {
      const result = await ai.generateText({ model, messages: history });
      history.push({ role: 'assistant', content: result.text }, { role: 'user', content: next });
      await middleware.flush();
    }
    await ai.generateText({ model, messages: history });
    await middleware.flush();
    const prompts = observedText(observer);
    expect(prompts.filter((prompt) => prompt.includes('I am Ada.'))).toHaveLength(1);
    expect(prompts.filter((prompt) => prompt.includes('Hello Ada.'))).toHaveLength(1);
    expect(prompts.filter((prompt) => prompt.includes('Goodbye.'))).toHaveLength(1);
  });

  const recording = (handed: string[]): ObservationalMemory => recordingMemory(memory, handed);
  const replying = (...content: object[][]) => {
    let call = 0;
    return new version.Mock({
      doGenerate: (async () => {
        const parts = content[Math.min(call++, content.length - 1)] ?? [];
        const calls = parts.some((part) => (part as { type: string }).type === 'tool-call');
        return {
          content: parts,
          finishReason: calls ? { unified: 'tool-calls', raw: 'tool_calls' } : { unified: 'stop', raw: 'stop' },
          usage,
          warnings: [],
        };
      }) as never,
    });
  };

  it('hands a tool call without arguments to observe once, though the next step sends it back as {}', async () => {
    const handed: string[] = [];
    const middleware = createMemoryMiddleware({ memory: recording(handed), workingMemory, scope });
    const inner = replying(
      [{ type: 'tool-call', toolCallId: 'c1', toolName: 'now', input: '' }],
      [{ type: 'text', text: 'It is noon.' }],
    );
    const model = ai.wrapLanguageModel({ model: inner as never, middleware });
    const tools = {
      now: ai.tool({ inputSchema: ai.jsonSchema({ type: 'object', properties: {} }), execute: async () => 'noon' }),
    };
    const result = await ai.generateText({
      model,
      tools: tools as never,
      stopWhen: version.twoSteps() as never,
      prompt: 'What time is it?',
    });
    expect(result.text).toBe('It is noon.');
    await middleware.flush();
    expect(handed.filter((text) => text.startsWith('assistant:[{'))).toEqual([
      'assistant:[{"id":"c1","name":"now","arguments":"{}"}]',
    ]);
  });

  it('tells a message with one image from the same words with another image', async () => {
    const handed: string[] = [];
    const middleware = createMemoryMiddleware({ memory: recording(handed), workingMemory, scope });
    const model = ai.wrapLanguageModel({
      model: replying([{ type: 'text', text: 'A picture.' }]) as never,
      middleware,
    });
    for (const image of [new Uint8Array([1, 2, 3]), new Uint8Array([4, 5, 6])]) {
      await ai.generateText({
        model,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Describe this image.' },
              { type: 'image', image, mediaType: 'image/png' },
            ],
          },
        ],
      });
      await middleware.flush();
    }
    expect(handed.filter((text) => text.startsWith('user:Describe this image.'))).toHaveLength(2);
  });

  it('hands messages sent while the scope was disabled to observe again once it observes', async () => {
    const handed: string[] = [];
    const middleware = createMemoryMiddleware({ memory: recording(handed), workingMemory, scope });
    const model = ai.wrapLanguageModel({
      model: replying([{ type: 'text', text: 'Hello Ada.' }]) as never,
      middleware,
    });
    await memory.setEnabled(scope, false);
    await ai.generateText({ model, prompt: 'I am Ada.' });
    await middleware.flush();
    await memory.setEnabled(scope, true);
    await ai.generateText({ model, prompt: 'I am Ada.' });
    await middleware.flush();
    expect(handed.filter((text) => text.startsWith('user:I am Ada.'))).toHaveLength(2);
    expect(observedText(observer).join('\n')).toContain('I am Ada.');
  });

  it('never fails the call or leaves a rejection unhandled when the logger throws and onError rejects', async () => {
    const broken = { ...memory, mode: memory.mode, snippet: async () => Promise.reject(new Error('store is down')) };
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      let told = 0;
      const middleware = createMemoryMiddleware({
        memory: broken,
        workingMemory,
        scope,
        logger: {
          warn() {
            throw new Error('log sink closed');
          },
        },
        onError: async () => {
          told++;
          throw new Error('error tracker unreachable');
        },
      });
      const model = ai.wrapLanguageModel({ model: replying([{ type: 'text', text: 'hi' }]) as never, middleware });
      await expect(ai.generateText({ model, prompt: 'Hi' })).resolves.toMatchObject({ text: 'hi' });
      await middleware.flush();
      expect(told).toBeGreaterThan(0);
      // Unhandled rejections are reported once the microtasks of a turn of the loop are done.
      for (let turn = 0; turn < 3; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('passes a stream through chunk for chunk, as the unwrapped model sends it', async () => {
    const chunks = [
      { type: 'stream-start', warnings: [] },
      { type: 'text-start', id: 't1' },
      { type: 'text-delta', id: 't1', delta: 'Hel' },
      { type: 'text-delta', id: 't1', delta: 'lo' },
      { type: 'text-end', id: 't1' },
      { type: 'tool-call', toolCallId: 'c1', toolName: 'lookup', input: '{"q":"x"}' },
      { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
    ];
    const inner = new version.Mock({ doStream: async () => ({ stream: version.toStream(chunks as never[]) }) });
    const middleware = createMemoryMiddleware({ memory, workingMemory, scope });
    const model = ai.wrapLanguageModel({ model: inner as never, middleware }) as unknown as {
      doStream(options: unknown): Promise<{ stream: ReadableStream<unknown> }>;
    };
    const { stream } = await model.doStream({ prompt: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }] });
    const received: unknown[] = [];
    for await (const chunk of stream as unknown as AsyncIterable<unknown>) received.push(chunk);
    expect(received).toEqual(chunks);
    await middleware.flush();
    expect(observedText(observer).join('\n')).toContain('Hello');
  });

  it(
    'gives the memory tools to generateText: a working-memory entry set by a tool call is stored in the ' + 'scope',
    async () => {
      const inner = new version.Mock({
        doGenerate: async () =>
          ({
            content: [{ type: 'text', text: 'done' }],
            finishReason: { unified: 'stop', raw: 'stop' },
            usage,
            warnings: [],
          }) as never,
      });
      let call = 0;
      inner.doGenerate = (async () => {
        call++;
        if (call === 1) {
          return {
            content: [
              {
                type: 'tool-call',
                toolCallId: 'c1',
                toolName: 'working_memory',
                input: JSON.stringify({ action: 'set', key: 'goal', value: 'ship it' }),
              },
            ],
            finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
            usage,
            warnings: [],
          };
        }
        return {
          content: [{ type: 'text', text: 'stored' }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage,
          warnings: [],
        };
      }) as never;
      const tools = createMemoryTools({ memory, workingMemory, scope });
      const result = await ai.generateText({
        model: inner as never,
        tools: tools as never,
        stopWhen: version.twoSteps() as never,
        prompt: 'Remember the goal.',
      });
      expect(result.text).toBe('stored');
      expect(await workingMemory.get(scope, 'goal')).toMatchObject({ found: true, value: JSON.stringify('ship it') });
      const refused = await (tools.working_memory.execute as (input: unknown, options: unknown) => Promise<unknown>)(
        { action: 'set' },
        { toolCallId: 'c2', messages: [] },
      );
      expect(refused).toMatchObject({ error: { code: 'TOOL_INPUT_INVALID' } });
    },
  );

  it('never fails the model call when memory fails: the failure is logged and onError is told', async () => {
    const broken = {
      ...memory,
      mode: 'local_coordinator' as const,
      snippet: async () => {
        throw new Error('store is down');
      },
      observe: async () => {
        throw new Error('store is still down');
      },
    } as ObservationalMemory;
    const onError = vi.fn();
    const warn = vi.fn();
    const middleware = createMemoryMiddleware({ memory: broken, workingMemory, scope, onError, logger: { warn } });
    const model = ai.wrapLanguageModel({ model: compatibleModel(), middleware });
    server.enqueue({ text: 'Still here.' });
    const result = await ai.generateText({ model, prompt: 'Hi' });
    await middleware.flush();
    expect(result.text).toBe('Still here.');
    expect(onError.mock.calls.map(([error, phase]) => [(error as Error).message, phase])).toEqual([
      ['store is down', 'prepare'],
      ['store is still down', 'observe'],
    ]);
    expect(warn).toHaveBeenCalledTimes(2);
  });

  it('replaces its own block rather than stacking a second copy', async () => {
    await workingMemory.set(scope, 'plan', 'A');
    const middleware = createMemoryMiddleware({ memory, workingMemory, scope });
    const params = { prompt: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'Hi' }] }] };
    const once: unknown = await middleware.transformParams({ type: 'generate', params, model: {} });
    const twice = (await middleware.transformParams({ type: 'generate', params: once, model: {} })) as {
      prompt: Array<{ role: string }>;
    };
    expect(twice.prompt.filter((message) => message.role === 'system')).toHaveLength(1);
    expect(twice.prompt).toHaveLength(2);
  });
});

describe('createMemoryMiddleware: options checked at the door', () => {
  it('names a missing option', () => {
    const store = createInMemoryStore();
    const workingMemory = createWorkingMemory({ store });
    expect(() => createMemoryMiddleware({ workingMemory, scope } as never)).toThrow(/memory/);
    expect(() =>
      createMemoryMiddleware({ memory: createObservationalMemory({ store }), workingMemory } as never),
    ).toThrow(/scope/);
  });
});

describe('memory middleware: types', () => {
  it('is accepted by wrapLanguageModel of ai 6 and of ai 7 as it is, without a cast', async () => {
    const store = createInMemoryStore();
    const middleware = createMemoryMiddleware({
      memory: createObservationalMemory({ store }),
      workingMemory: createWorkingMemory({ store }),
      scope: { conversationId: 'types' },
    });
    const six = ai6.wrapLanguageModel({ model: new Mock6({}), middleware });
    const seven = ai7.wrapLanguageModel({ model: new Mock7({}), middleware });
    expect([six.specificationVersion, seven.specificationVersion]).toEqual(['v3', 'v4']);
  });
});
