/**
 * A scripted OpenAI-compatible chat completions server on 127.0.0.1, for tests that drive
 * our real client over real HTTP. Replies are queued per request; every request is logged.
 * @module
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the server received. */
export interface ScriptedRequest {
  readonly method: string;
  readonly path: string;
  /** Lower-cased header names. */
  readonly headers: Readonly<Record<string, string>>;
  /** The parsed JSON body, or the raw text when it is not JSON. */
  readonly body: unknown;
  /** `Date.now()` when the body had been read. */
  readonly receivedAt: number;
}

/** A tool call in a scripted answer; `arguments` objects are sent as JSON text. */
export interface ScriptedToolCall {
  readonly id?: string;
  readonly name: string;
  readonly arguments: string | Record<string, unknown>;
}

/** A chat completion answer. */
export interface ScriptedAnswer {
  readonly text?: string;
  /** The raw OpenAI value. @default "tool_calls" with tool calls, else "stop" */
  readonly finishReason?: string;
  readonly toolCalls?: readonly ScriptedToolCall[];
  /** `null` omits the usage. @default { promptTokens: 11, completionTokens: 7 } */
  readonly usage?: { readonly promptTokens: number; readonly completionTokens: number } | null;
  readonly refusal?: string;
}

/** A raw HTTP answer; an object `body` is sent as JSON, a string as it is. */
export interface ScriptedStatus {
  readonly status: number;
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * Waits, then answers with `reply`. (Not `then`: an object with a `then` function is a
 * thenable, and awaiting a function reply's result would call it.)
 */
export interface ScriptedDelay {
  readonly delayMs: number;
  readonly reply: ScriptedReply;
}

/** Sends the first bytes of `reply`'s body (streamed or not), then destroys the socket. */
export interface ScriptedTruncation {
  readonly truncateAfterBytes: number;
  /** @default { text: 'this answer is cut off before it ends' } */
  readonly reply?: ScriptedAnswer;
}

/**
 * A body too large to script as one string: `head`, then `fill` `repeat` times, then `tail`,
 * written as the client reads it. Stops when the client goes away.
 */
export interface ScriptedLargeBody {
  readonly largeBody: {
    /** @default 200 */
    readonly status?: number;
    /** @default "application/json" */
    readonly contentType?: string;
    readonly head?: string;
    readonly fill: string;
    readonly repeat: number;
    readonly tail?: string;
  };
}

/**
 * Sends the status and headers, then `chunk` every `everyMs` milliseconds and never ends the
 * body: a server that keeps the connection busy (SSE keepalives, say) but never answers.
 */
export interface ScriptedTrickle {
  readonly trickle: {
    /** @default 200 */
    readonly status?: number;
    /** @default "text/event-stream" */
    readonly contentType?: string;
    readonly chunk: string;
    readonly everyMs: number;
  };
}

/** What the server does with one chat completions request. */
export type ScriptedReply =
  | ScriptedAnswer
  | ScriptedStatus
  | ScriptedDelay
  | ScriptedTruncation
  | ScriptedLargeBody
  | ScriptedTrickle
  | ((request: ScriptedRequest) => ScriptedReply | Promise<ScriptedReply>);

/** A running scripted server. */
export interface ScriptedServer {
  /** Base URL ending in `/v1`, like `http://127.0.0.1:41234/v1`. */
  readonly url: string;
  /** `http://127.0.0.1:<port>`, without a path. */
  readonly origin: string;
  /** Every request received, in order, on any path. */
  readonly requests: ScriptedRequest[];
  /** Replies for the next chat completions requests, in order. */
  enqueue(...replies: ScriptedReply[]): void;
  /** The reply used once the queue is empty. @default { text: 'ok' } */
  setDefaultReply(reply: ScriptedReply): void;
  close(): Promise<void>;
}

/** Options of {@link startScriptedOpenAIServer}. */
export interface ScriptedServerOptions {
  /**
   * Check each request's transcript as OpenAI does, answering `400 invalid_request_error`
   * (with OpenAI's wording) for an assistant message whose tool calls are not all followed by
   * their results, or a tool message that answers no call of the assistant message before it.
   * @default false
   */
  readonly strict?: boolean;
  /**
   * The API base path the server answers under (`<basePath>/chat/completions`), as a provider
   * with its own version path (`/v1beta/openai`) has. @default '/v1'
   */
  readonly basePath?: string;
}

const DEFAULT_TRUNCATED: ScriptedAnswer = { text: 'this answer is cut off before it ends' };

/** Starts a scripted server on 127.0.0.1 and a free port. */
export async function startScriptedOpenAIServer(options: ScriptedServerOptions = {}): Promise<ScriptedServer> {
  const requests: ScriptedRequest[] = [];
  const queue: ScriptedReply[] = [];
  let defaultReply: ScriptedReply = { text: 'ok' };
  const completionsPath = `${options.basePath ?? '/v1'}/chat/completions`;
  let counter = 0;

  const server = createServer((incoming, response) => {
    void (async () => {
      const request = await readRequest(incoming);
      requests.push(request);
      if (request.method !== 'POST' || request.path !== completionsPath) {
        sendJson(response, 404, {
          error: { message: `no route for ${request.method} ${request.path}`, type: 'not_found' },
        });
        return;
      }
      const refusal = options.strict ? transcriptProblem(request.body) : undefined;
      if (refusal) {
        sendJson(response, 400, {
          error: { message: refusal.message, type: 'invalid_request_error', param: refusal.param, code: null },
        });
        return;
      }
      counter += 1;
      await respond(response, request, queue.shift() ?? defaultReply, `chatcmpl-${counter}`);
    })().catch((error: unknown) => {
      if (!response.headersSent) sendJson(response, 500, { error: { message: String(error), type: 'script_error' } });
      else response.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;

  return {
    url: `${origin}/v1`,
    origin,
    requests,
    enqueue: (...replies) => void queue.push(...replies),
    setDefaultReply: (reply) => void (defaultReply = reply),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function readRequest(incoming: IncomingMessage): Promise<ScriptedRequest> {
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  let body: unknown = text;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    // Not JSON: keep the raw text.
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return {
    method: incoming.method ?? 'GET',
    path: (incoming.url ?? '/').split('?')[0] ?? '/',
    headers,
    body,
    receivedAt: Date.now(),
  };
}

async function respond(
  response: ServerResponse,
  request: ScriptedRequest,
  reply: ScriptedReply,
  id: string,
): Promise<void> {
  if (typeof reply === 'function') return respond(response, request, await reply(request), id);
  if ('delayMs' in reply) {
    const waited = await wait(reply.delayMs, response);
    if (waited) await respond(response, request, reply.reply, id);
    return;
  }
  if ('largeBody' in reply) return sendLargeBody(response, reply.largeBody);
  if ('trickle' in reply) return trickle(response, reply.trickle);
  if ('status' in reply) {
    const body = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {});
    const type = typeof reply.body === 'string' ? 'text/plain' : 'application/json';
    response.writeHead(reply.status, { 'content-type': type, ...reply.headers });
    response.end(body);
    return;
  }
  const streamed = isStreamRequest(request.body);
  const answer = 'truncateAfterBytes' in reply ? (reply.reply ?? DEFAULT_TRUNCATED) : reply;
  const body = streamed ? sseBody(answer, request.body, id) : JSON.stringify(completion(answer, request.body, id));
  const bytes = Buffer.from(body, 'utf8');
  if (streamed) {
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  } else {
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(bytes.length) });
  }
  if (!('truncateAfterBytes' in reply)) {
    response.end(bytes);
    return;
  }
  response.write(bytes.subarray(0, reply.truncateAfterBytes));
  // Give the client the first bytes before the connection drops.
  setTimeout(() => response.destroy(), 20);
}

async function sendLargeBody(response: ServerResponse, body: ScriptedLargeBody['largeBody']): Promise<void> {
  response.writeHead(body.status ?? 200, { 'content-type': body.contentType ?? 'application/json' });
  // Waits for the client to read what is buffered, so a client that stops reading stops the body.
  const write = async (text: string): Promise<void> => {
    if (response.write(text)) return;
    await new Promise<void>((resolve) => {
      // Both listeners go once either fires: a long body waits for many drains.
      const done = (): void => {
        response.off('drain', done).off('close', done);
        resolve();
      };
      response.once('drain', done).once('close', done);
    });
  };
  await write(body.head ?? '');
  for (let index = 0; index < body.repeat && !response.destroyed; index++) await write(body.fill);
  if (!response.destroyed) response.end(body.tail ?? '');
}

function trickle(response: ServerResponse, body: ScriptedTrickle['trickle']): void {
  response.writeHead(body.status ?? 200, { 'content-type': body.contentType ?? 'text/event-stream' });
  response.flushHeaders();
  const timer = setInterval(() => response.write(body.chunk), body.everyMs);
  response.once('close', () => clearInterval(timer));
}

/** Resolves false when the client went away first. */
function wait(ms: number, response: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(!response.destroyed), ms);
    response.once('close', () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
}

interface WireMessage {
  readonly role?: unknown;
  readonly tool_call_id?: unknown;
  readonly tool_calls?: ReadonlyArray<{ readonly id?: unknown }>;
}

/** What OpenAI refuses in a transcript: a tool call without its result, a result without its call. */
function transcriptProblem(body: unknown): { message: string; param: string } | undefined {
  const messages = (
    typeof body === 'object' && body !== null ? (body as { messages?: unknown }).messages : undefined
  ) as WireMessage[] | undefined;
  if (!Array.isArray(messages)) return undefined;
  for (const [index, message] of messages.entries()) {
    const calls = message.role === 'assistant' && Array.isArray(message.tool_calls) ? message.tool_calls : [];
    if (calls.length > 0) {
      const unanswered = new Set(calls.map((call) => call.id));
      for (let next = index + 1; next < messages.length && messages[next]?.role === 'tool'; next++)
        unanswered.delete(messages[next]?.tool_call_id);
      if (unanswered.size > 0) {
        return {
          message:
            `An assistant message with 'tool_calls' must be followed by tool messages responding to ` +
            `each 'tool_call_id'. The following tool_call_ids did not have response messages: ` +
            `${[...unanswered].join(', ')}`,
          param: `messages.[${index}].role`,
        };
      }
    }
    if (message.role === 'tool') {
      let owner = index - 1;
      while (owner >= 0 && messages[owner]?.role === 'tool') owner--;
      const previous = messages[owner];
      if (
        previous?.role !== 'assistant' ||
        !(previous.tool_calls ?? []).some((call) => call.id === message.tool_call_id)
      ) {
        return {
          message:
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with " +
            "'tool_calls'.",
          param: `messages.[${index}].role`,
        };
      }
    }
  }
  return undefined;
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

function isStreamRequest(body: unknown): boolean {
  return typeof body === 'object' && body !== null && (body as { stream?: unknown }).stream === true;
}

function modelOf(body: unknown): string {
  const model = typeof body === 'object' && body !== null ? (body as { model?: unknown }).model : undefined;
  return typeof model === 'string' ? model : 'scripted-model';
}

function toolCallsOf(answer: ScriptedAnswer) {
  return (answer.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? `call_${index + 1}`,
    type: 'function' as const,
    function: {
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    },
  }));
}

function finishReasonOf(answer: ScriptedAnswer): string {
  return answer.finishReason ?? ((answer.toolCalls?.length ?? 0) > 0 ? 'tool_calls' : 'stop');
}

function usageOf(answer: ScriptedAnswer) {
  if (answer.usage === null) return undefined;
  const { promptTokens, completionTokens } = answer.usage ?? { promptTokens: 11, completionTokens: 7 };
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
  };
}

function completion(answer: ScriptedAnswer, request: unknown, id: string) {
  const toolCalls = toolCallsOf(answer);
  const usage = usageOf(answer);
  return {
    id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: modelOf(request),
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: answer.text ?? (toolCalls.length > 0 || answer.refusal !== undefined ? null : ''),
          refusal: answer.refusal ?? null,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        finish_reason: finishReasonOf(answer),
        logprobs: null,
      },
    ],
    ...(usage ? { usage } : {}),
  };
}

/** Text in chunks of about 4 characters; each tool call as a header delta then argument pieces. */
function sseBody(answer: ScriptedAnswer, request: unknown, id: string): string {
  const base = { id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: modelOf(request) };
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }],
  });
  const events: unknown[] = [chunk({ role: 'assistant', content: '' })];
  for (const piece of pieces(answer.text ?? '', 4)) events.push(chunk({ content: piece }));
  if (answer.refusal !== undefined) events.push(chunk({ refusal: answer.refusal }));
  toolCallsOf(answer).forEach((call, index) => {
    events.push(
      chunk({
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }],
      }),
    );
    for (const piece of pieces(call.function.arguments, 5)) {
      events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  events.push(chunk({}, finishReasonOf(answer)));
  const options = (request as { stream_options?: { include_usage?: unknown } }).stream_options;
  const usage = usageOf(answer);
  if (options?.include_usage === true && usage) events.push({ ...base, choices: [], usage });
  return `${events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join('')}data: [DONE]\n\n`;
}

function pieces(text: string, size: number): string[] {
  const result: string[] = [];
  for (let index = 0; index < text.length; index += size) result.push(text.slice(index, index + size));
  return result;
}
