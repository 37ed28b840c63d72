import { describe, expect, it } from 'vitest';
import { startScriptedOpenAIServer } from '../../test/support/scripted-openai-server.js';
import { useScriptedOpenAIServer } from '../../test/support/use-scripted-openai-server.js';
import { ConfigError } from '../core/errors.js';
import type { LanguageModelTool } from './language-model.js';
import { createOpenAICompatibleModel, normalizeBaseUrl, type LanguageModelStreamPart } from './openai-compatible.js';

const server = useScriptedOpenAIServer();

const user = (content: string) => ({ messages: [{ role: 'user' as const, content }] });
const lookupTool: LanguageModelTool = {
  name: 'lookup',
  description: 'Looks a word up.',
  parameters: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
};
const bodyOf = (index: number) => server.requests[index]?.body as Record<string, any>;

describe('openai-compatible: requests', () => {
  it('sends model, messages and the bearer key, and returns the text and usage', async () => {
    server.enqueue({ text: 'Hello!', usage: { promptTokens: 12, completionTokens: 3 } });
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'small-model', apiKey: 'sk-test' });
    const result = await model.doGenerate({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
    });
    expect(result).toEqual({
      text: 'Hello!',
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 12, outputTokens: 3 },
    });
    expect(server.requests[0]?.headers['authorization']).toBe('Bearer sk-test');
    expect(bodyOf(0)).toMatchObject({
      model: 'small-model',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
    });
    expect(bodyOf(0).stream).toBeUndefined();
  });

  it('uses a per-call modelId, max tokens, temperature and extra headers', async () => {
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'a', headers: { 'x-title': 'harness' } });
    await model.doGenerate({ ...user('x'), modelId: 'b', maxOutputTokens: 50, temperature: 0 });
    expect(bodyOf(0)).toMatchObject({ model: 'b', max_completion_tokens: 50, temperature: 0 });
    expect(server.requests[0]?.headers['x-title']).toBe('harness');
    expect(server.requests[0]?.headers['authorization']).toBe('Bearer not-needed');
  });

  it('reports usage as 0 when the server gives none', async () => {
    server.enqueue({ text: 'x', usage: null });
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' });
    expect((await model.doGenerate(user('x'))).usage).toEqual({ inputTokens: 0, outputTokens: 0 });
  });
});

describe('openai-compatible: base URL', () => {
  const variants = (origin: string) => [
    origin,
    `${origin}/`,
    `${origin}/v1`,
    `${origin}/v1/`,
    `${origin}/v1//`,
    ` ${origin}/v1/chat/completions `,
  ];

  it('reaches /v1/chat/completions exactly once whether or not /v1 or a trailing slash is given', async () => {
    for (const baseURL of variants(server.origin)) {
      const model = createOpenAICompatibleModel({ baseURL, modelId: 'm' });
      await model.doGenerate(user('x'));
    }
    expect(server.requests.map((request) => request.path)).toEqual(Array(6).fill('/v1/chat/completions'));
  });

  it('keeps a path prefix and appends /v1 to it', () => {
    expect(normalizeBaseUrl('https://openrouter.ai/api/v1/')).toBe('https://openrouter.ai/api/v1');
    expect(normalizeBaseUrl('http://gateway.local/llm')).toBe('http://gateway.local/llm/v1');
  });

  it('keeps a path that names another API version as it is', () => {
    for (const base of [
      'https://generativelanguage.googleapis.com/v1beta/openai',
      'https://open.bigmodel.cn/api/paas/v4',
      'https://gateway.example/v2',
      'https://api.groq.com/openai/v1',
    ])
      expect(normalizeBaseUrl(`${base}/`)).toBe(base);
    expect(normalizeBaseUrl('https://gateway.example/v1beta/openai/chat/completions')).toBe(
      'https://gateway.example/v1beta/openai',
    );
    // Words that only start like a version are not one.
    expect(normalizeBaseUrl('https://gateway.example/vendor')).toBe('https://gateway.example/vendor/v1');
  });

  it('sends requests under a base whose path names its own version', async () => {
    const gemini = await startScriptedOpenAIServer({ basePath: '/v1beta/openai' });
    try {
      const model = createOpenAICompatibleModel({ baseURL: `${gemini.origin}/v1beta/openai/`, modelId: 'm' });
      expect((await model.doGenerate(user('x'))).text).toBe('ok');
      expect(gemini.requests.map((request) => request.path)).toEqual(['/v1beta/openai/chat/completions']);
    } finally {
      await gemini.close();
    }
  });

  it('rejects a base URL that is not http(s) with a ConfigError', () => {
    expect(() => normalizeBaseUrl('localhost:11434')).toThrow(ConfigError);
    expect(() => createOpenAICompatibleModel({ baseURL: 'not a url', modelId: 'm' })).toThrow(
      /must be an http\(s\) URL/,
    );
    expect(() => normalizeBaseUrl('ftp://bot:base-url-password@files.example/v1')).toThrow(
      'must be an http(s) URL such as https://api.openai.com/v1 or http://127.0.0.1:11434 (got "ftp://bot:****word@files.example/v1")',
    );
  });

  it('refuses a base URL holding credentials, a query or a fragment, which no request would carry', () => {
    expect(() => normalizeBaseUrl('https://bot:base-url-password@gateway.example/v1')).toThrow(
      /must not hold a user name or password: .* \(got "https:\/\/bot:\*\*\*\*word@gateway.example\/v1"\)/,
    );
    expect(() => normalizeBaseUrl('https://bot@gateway.example/v1')).toThrow(/must not hold a user name/);
    expect(() => normalizeBaseUrl('https://gateway.example/v1?api-version=2024-02-01')).toThrow(
      'must not hold a query string or fragment (got "https://gateway.example/v1?api-version=2024-02-01")',
    );
    expect(() => normalizeBaseUrl('https://gateway.example/v1#x')).toThrow(/query string or fragment/);
  });
});

describe('openai-compatible: tool calls', () => {
  it('sends tools and tool history in the chat completions shape', async () => {
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' });
    await model.doGenerate({
      tools: [lookupTool],
      messages: [
        { role: 'user', content: 'Define cat' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'call_9', name: 'lookup', arguments: '{"word":"cat"}' }] },
        { role: 'tool', content: 'a small feline', toolCallId: 'call_9' },
      ],
    });
    expect(bodyOf(0).tools).toEqual([
      {
        type: 'function',
        function: { name: 'lookup', description: 'Looks a word up.', parameters: lookupTool.parameters },
      },
    ]);
    expect(bodyOf(0).messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'lookup', arguments: '{"word":"cat"}' } }],
      },
      { role: 'tool', content: 'a small feline', tool_call_id: 'call_9' },
    ]);
  });

  it('parses tool calls from the answer', async () => {
    server.enqueue({
      toolCalls: [
        { id: 'call_1', name: 'lookup', arguments: { word: 'dog' } },
        { id: 'call_2', name: 'lookup', arguments: '{}' },
      ],
    });
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' });
    const result = await model.doGenerate({ ...user('x'), tools: [lookupTool] });
    expect(result.finishReason).toBe('tool-calls');
    expect(result.text).toBe('');
    expect(result.toolCalls).toEqual([
      { id: 'call_1', name: 'lookup', arguments: '{"word":"dog"}' },
      { id: 'call_2', name: 'lookup', arguments: '{}' },
    ]);
  });

  it('refuses a tool message without toolCallId before sending anything', async () => {
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' });
    await expect(model.doGenerate({ messages: [{ role: 'tool', content: 'x' }] })).rejects.toMatchObject({
      isRetryable: false,
      message: expect.stringMatching(/toolCallId/),
    });
    expect(server.requests).toHaveLength(0);
  });
});

describe('openai-compatible: finish reasons', () => {
  it.each([
    ['stop', 'stop'],
    ['length', 'length'],
    ['tool_calls', 'tool-calls'],
    ['function_call', 'tool-calls'],
    ['content_filter', 'content-filter'],
    ['something_new', 'other'],
  ])('maps finish_reason %s to %s', async (raw, mapped) => {
    server.enqueue({ text: 'partial', finishReason: raw });
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' });
    expect((await model.doGenerate(user('x'))).finishReason).toBe(mapped);
  });

  it('maps a refusal field to finishReason refusal with the refusal text', async () => {
    server.enqueue({ refusal: 'I cannot help with that.' });
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' });
    expect(await model.doGenerate(user('x'))).toMatchObject({
      finishReason: 'refusal',
      refusal: 'I cannot help with that.',
      text: '',
    });
  });

  it('treats zero choices as a non-retryable error', async () => {
    server.enqueue({ status: 200, body: { id: 'x', object: 'chat.completion', choices: [] } });
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' });
    await expect(model.doGenerate(user('x'))).rejects.toMatchObject({
      code: 'MODEL_CALL_FAILED',
      isRetryable: false,
      message: expect.stringMatching(/zero choices/),
    });
  });

  it('treats a body that is not a chat completion as an error', async () => {
    server.enqueue({ status: 200, body: '<html>proxy login</html>' });
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' });
    await expect(model.doGenerate(user('x'))).rejects.toMatchObject({
      code: 'MODEL_CALL_FAILED',
      responseBody: expect.stringContaining('proxy login'),
    });
  });
});

describe('openai-compatible: streaming', () => {
  async function collect(stream: AsyncIterable<LanguageModelStreamPart>): Promise<LanguageModelStreamPart[]> {
    const parts: LanguageModelStreamPart[] = [];
    for await (const part of stream) parts.push(part);
    return parts;
  }

  it('streams text deltas and finishes with the assembled text and usage', async () => {
    server.enqueue({ text: 'Streaming works fine.' });
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' });
    const parts = await collect(model.doStream(user('x')));
    const deltas = parts.flatMap((part) => (part.type === 'text-delta' ? [part.delta] : []));
    expect(deltas.length).toBeGreaterThan(2);
    expect(deltas.join('')).toBe('Streaming works fine.');
    expect(parts.at(-1)).toEqual({
      type: 'finish',
      result: {
        text: 'Streaming works fine.',
        toolCalls: [],
        finishReason: 'stop',
        usage: { inputTokens: 11, outputTokens: 7 },
      },
    });
    expect(bodyOf(0)).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('assembles tool-call deltas into whole tool calls', async () => {
    server.enqueue({
      toolCalls: [
        { id: 'call_a', name: 'lookup', arguments: { word: 'streaming' } },
        { id: 'call_b', name: 'lookup', arguments: { word: 'b' } },
      ],
    });
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' });
    const parts = await collect(model.doStream({ ...user('x'), tools: [lookupTool] }));
    expect(parts.filter((part) => part.type === 'tool-call-delta').length).toBeGreaterThan(4);
    const finish = parts.at(-1);
    expect(finish?.type === 'finish' && finish.result).toMatchObject({
      finishReason: 'tool-calls',
      toolCalls: [
        { id: 'call_a', name: 'lookup', arguments: '{"word":"streaming"}' },
        { id: 'call_b', name: 'lookup', arguments: '{"word":"b"}' },
      ],
    });
  });

  it('streams inside doGenerate when the stream setting is on', async () => {
    server.enqueue({ text: 'assembled', finishReason: 'length' });
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm', stream: true });
    expect(await model.doGenerate(user('x'))).toMatchObject({ text: 'assembled', finishReason: 'length' });
    expect(bodyOf(0).stream).toBe(true);
  });
});

describe('openai-compatible: abort', () => {
  it('stops at once when the caller aborts, as a non-retryable error', async () => {
    // The reply never comes in time: only the abort can end the call, once the request arrived.
    let arrived!: () => void;
    const received = new Promise<void>((resolve) => (arrived = resolve));
    server.enqueue(() => {
      arrived();
      return { delayMs: 600_000, reply: { text: 'late' } };
    });
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' });
    const controller = new AbortController();
    void received.then(() => controller.abort());
    await expect(model.doGenerate({ ...user('x'), abortSignal: controller.signal })).rejects.toMatchObject({
      isRetryable: false,
      message: expect.stringMatching(/aborted/),
    });
  });
});
