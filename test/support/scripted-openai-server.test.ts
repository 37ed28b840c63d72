import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startScriptedOpenAIServer, type ScriptedServer } from './scripted-openai-server.js';

let server: ScriptedServer;
beforeEach(async () => {
  server = await startScriptedOpenAIServer();
});
afterEach(async () => {
  await server.close();
});

const post = (body: unknown, path = '/v1/chat/completions'): Promise<Response> =>
  fetch(`${server.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
    body: JSON.stringify(body),
  });

describe('scripted openai server: replies', () => {
  it('answers queued replies in order, then the default reply', async () => {
    server.enqueue({ text: 'first' }, { text: 'second', usage: null });
    const first = (await (await post({ model: 'm', messages: [] })).json()) as Record<string, any>;
    const second = (await (await post({ model: 'm', messages: [] })).json()) as Record<string, any>;
    const third = (await (await post({ model: 'm', messages: [] })).json()) as Record<string, any>;
    expect(first.choices[0].message.content).toBe('first');
    expect(first.usage).toEqual({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
    expect(second.choices[0].message.content).toBe('second');
    expect(second.usage).toBeUndefined();
    expect(third.choices[0].message.content).toBe('ok');
    expect(server.url).toBe(`${server.origin}/v1`);
  });

  it('logs every request with its method, path, headers and parsed body', async () => {
    await post({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    await post({}, '/v1/models');
    expect(server.requests).toHaveLength(2);
    expect(server.requests[0]).toMatchObject({
      method: 'POST',
      path: '/v1/chat/completions',
      body: { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(server.requests[0]?.headers['authorization']).toBe('Bearer k');
    expect(server.requests[1]?.path).toBe('/v1/models');
  });

  it('answers 404 JSON on other paths', async () => {
    const response = await post({}, '/v1/v1/chat/completions');
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { type: string } }).error.type).toBe('not_found');
  });

  it('sends tool calls with finish_reason tool_calls', async () => {
    server.enqueue({ toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] });
    const body = (await (await post({ model: 'm', messages: [] })).json()) as Record<string, any>;
    expect(body.choices[0].finish_reason).toBe('tool_calls');
    expect(body.choices[0].message.tool_calls[0]).toEqual({
      id: 'call_1',
      type: 'function',
      function: { name: 'lookup', arguments: '{"q":"x"}' },
    });
  });

  it('sends statuses with headers, delays, and function replies', async () => {
    server.enqueue({ status: 429, body: { error: { message: 'slow down' } }, headers: { 'retry-after': '1' } });
    server.enqueue({
      delayMs: 50,
      reply: (request) => ({ text: `model was ${(request.body as { model: string }).model}` }),
    });
    const limited = await post({ model: 'm', messages: [] });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    const started = Date.now();
    const delayed = (await (await post({ model: 'dyn', messages: [] })).json()) as Record<string, any>;
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    expect(delayed.choices[0].message.content).toBe('model was dyn');
  });

  it('destroys the socket after the first bytes of a truncated reply', async () => {
    server.enqueue({ truncateAfterBytes: 20 });
    const response = await post({ model: 'm', messages: [] });
    await expect(response.text()).rejects.toThrow();
  });
});

describe('scripted openai server: streaming', () => {
  it('streams text, tool-call deltas and a usage chunk, then [DONE]', async () => {
    server.enqueue({ text: 'Hello there', toolCalls: [{ id: 'c1', name: 'f', arguments: '{"a":1}' }] });
    const response = await post({ model: 'm', messages: [], stream: true, stream_options: { include_usage: true } });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const events = (await response.text())
      .split('\n\n')
      .filter(Boolean)
      .map((line) => line.replace(/^data: /, ''));
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((event) => JSON.parse(event) as Record<string, any>);
    const text = chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? '').join('');
    const args = chunks.map((chunk) => chunk.choices[0]?.delta?.tool_calls?.[0]?.function?.arguments ?? '').join('');
    expect(text).toBe('Hello there');
    expect(args).toBe('{"a":1}');
    expect(chunks.at(-2)?.choices[0].finish_reason).toBe('tool_calls');
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 11 } });
  });

  it('leaves the usage chunk out unless include_usage is asked for', async () => {
    const response = await post({ model: 'm', messages: [], stream: true });
    const events = (await response.text()).split('\n\n').filter(Boolean);
    expect(events.some((event) => event.includes('"usage"'))).toBe(false);
  });
});

describe('scripted openai server: strict transcripts', () => {
  let strict: ScriptedServer;
  beforeEach(async () => {
    strict = await startScriptedOpenAIServer({ strict: true });
  });
  afterEach(async () => {
    await strict.close();
  });
  const send = (messages: unknown[]): Promise<Response> =>
    fetch(`${strict.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages }),
    });
  const call = (id: string) => ({ id, type: 'function', function: { name: 'f', arguments: '{}' } });

  it('answers 400 like OpenAI for a tool call without its result, and for a result without its call', async () => {
    const unanswered = await send([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: null, tool_calls: [call('c1'), call('c2')] },
      { role: 'tool', tool_call_id: 'c1', content: '{}' },
      { role: 'user', content: 'next' },
    ]);
    expect(unanswered.status).toBe(400);
    expect(((await unanswered.json()) as { error: { message: string; type: string } }).error).toMatchObject({
      type: 'invalid_request_error',
      message: expect.stringContaining('did not have response messages: c2'),
    });
    const orphan = await send([
      { role: 'user', content: 'go' },
      { role: 'tool', tool_call_id: 'c9', content: '{}' },
    ]);
    expect(orphan.status).toBe(400);
    expect(((await orphan.json()) as { error: { message: string } }).error.message).toContain(
      "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
    );
    expect(strict.requests).toHaveLength(2);
  });

  it('accepts a transcript whose every tool call has its result', async () => {
    const ok = await send([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: null, tool_calls: [call('c1'), call('c2')] },
      { role: 'tool', tool_call_id: 'c2', content: '{}' },
      { role: 'tool', tool_call_id: 'c1', content: '{}' },
      { role: 'assistant', content: 'done' },
    ]);
    expect(ok.status).toBe(200);
  });
});

describe('scripted openai server: large and trickling bodies', () => {
  it('sends head, fill repeated and tail as one body', async () => {
    server.enqueue({
      largeBody: { status: 502, contentType: 'text/plain', head: '<', fill: 'ab', repeat: 3, tail: '>' },
    });
    const response = await post({});
    expect(response.status).toBe(502);
    expect(response.headers.get('content-type')).toBe('text/plain');
    expect(await response.text()).toBe('<ababab>');
  });

  it('trickles chunks until the client goes away', async () => {
    server.enqueue({ trickle: { chunk: ': keepalive\n\n', everyMs: 5 } });
    const response = await post({ stream: true });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (text.split(': keepalive').length <= 3) text += decoder.decode((await reader.read()).value);
    await reader.cancel();
    expect(text.startsWith(': keepalive\n\n: keepalive\n\n')).toBe(true);
  });
});
