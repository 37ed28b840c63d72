import { describe, expect, it } from 'vitest';
import { useScriptedOpenAIServer } from '../../test/support/use-scripted-openai-server.js';
import { createOpenAICompatibleModel, type LanguageModelStreamPart } from './openai-compatible.js';

const server = useScriptedOpenAIServer();
const call = { messages: [{ role: 'user' as const, content: 'hello' }] };

// Some providers answer `message.content` as an array of parts instead of a string.
const PARTS = [
  { type: 'thinking', thinking: 'The user greets me.' },
  { type: 'text', text: 'IMPORTANCE: 0.9\n' },
  { type: 'reasoning', text: 'hidden reasoning' },
  { type: 'output_text', text: 'User prefers tabs' },
];

describe('openai-compatible: content given as an array of parts', () => {
  it('joins the text parts of a whole answer and drops reasoning and thinking parts', async () => {
    server.enqueue({
      status: 200,
      body: {
        id: 'x',
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: PARTS }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 5, completion_tokens: 4 },
      },
    });
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' });
    expect(await model.doGenerate(call)).toEqual({
      text: 'IMPORTANCE: 0.9\nUser prefers tabs',
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 5, outputTokens: 4 },
    });
  });

  it('answers an empty text for an array with no text part', async () => {
    server.enqueue({
      status: 200,
      body: { choices: [{ message: { content: [{ type: 'reasoning', text: 'x' }] }, finish_reason: 'stop' }] },
    });
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' });
    expect((await model.doGenerate(call)).text).toBe('');
  });

  it('still refuses content of another shape', async () => {
    server.enqueue({ status: 200, body: { choices: [{ message: { content: 42 }, finish_reason: 'stop' }] } });
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' });
    await expect(model.doGenerate(call)).rejects.toMatchObject({
      message: expect.stringMatching(/not a chat completion/),
    });
  });

  it('joins the text parts of streamed deltas', async () => {
    const chunk = (delta: unknown, finish: string | null = null) =>
      `data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    server.enqueue({
      status: 200,
      body:
        chunk({ role: 'assistant', content: [PARTS[0], PARTS[1]] }) +
        chunk({ content: [PARTS[2], PARTS[3]] }) +
        chunk({ content: '!' }) +
        chunk({}, 'stop') +
        'data: [DONE]\n\n',
      headers: { 'content-type': 'text/event-stream' },
    });
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' });
    const parts: LanguageModelStreamPart[] = [];
    for await (const part of model.doStream(call)) parts.push(part);
    expect(parts.flatMap((part) => (part.type === 'text-delta' ? [part.delta] : []))).toEqual([
      'IMPORTANCE: 0.9\n',
      'User prefers tabs',
      '!',
    ]);
    expect(parts.at(-1)).toMatchObject({ type: 'finish', result: { text: 'IMPORTANCE: 0.9\nUser prefers tabs!' } });
  });
});
