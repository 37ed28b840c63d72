/**
 * The end-to-end fixture: the real harness (SQLite in a temp workspace, the real
 * OpenAI-compatible client) served over real HTTP on an ephemeral port, with both the agent
 * and the memory model pointed at the scripted model server. Replies are routed by request
 * content: observer prompts, reflector prompts, and agent turns (by the run's prompt and step).
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect, vi } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import { createHarness } from '../../src/server/create-harness.js';
import type { Harness } from '../../src/server/create-harness.js';
import { startServer } from '../../src/server/serve.js';
import type { Tool } from '../../src/tools/tool.js';
import type { RunningServer } from '../../src/server/serve.js';
import type { Logger } from '../../src/server/fault-log.js';
import { startScriptedOpenAIServer } from '../support/scripted-openai-server.js';
import type { ScriptedReply, ScriptedRequest, ScriptedServer } from '../support/scripted-openai-server.js';
import { eventData, openSse } from './sse-client.js';
import type { RunEventData, SseFrame } from './sse-client.js';

/** Text only the observer prompt contains. */
export const OBSERVER_MARK = 'observational memory processor';
/** Text only the reflector prompt contains. */
export const REFLECTOR_MARK = 'structured reflection';

/** Who a model request is for. */
export type ModelRole = 'agent' | 'observer' | 'reflector';

/** A chat message as the client sent it. */
export interface ChatMessage {
  readonly role: string;
  readonly content?: string | null;
  readonly tool_calls?: ReadonlyArray<{ id: string; function: { name: string; arguments: string } }>;
  readonly tool_call_id?: string;
}

/** The chat messages of a logged request. */
export function messagesOf(request: ScriptedRequest): ChatMessage[] {
  const body = request.body as { messages?: ChatMessage[] } | undefined;
  return body?.messages ?? [];
}

/** Routes a model request by its content: memory prompts carry fixed phrases. */
export function roleOf(request: ScriptedRequest): ModelRole {
  const [first, second] = messagesOf(request);
  const head = `${first?.content ?? ''}\n${second?.content ?? ''}`;
  if (first?.role === 'system' && head.includes(REFLECTOR_MARK)) return 'reflector';
  if (head.includes(OBSERVER_MARK)) return 'observer';
  return 'agent';
}

/** One agent turn: the run's prompt (the last user message) and the step within the run, from 0. */
export interface AgentTurn {
  readonly prompt: string;
  readonly step: number;
  readonly request: ScriptedRequest;
}

/** The agent turn a request is, from its messages. */
export function agentTurnOf(request: ScriptedRequest): AgentTurn {
  const messages = messagesOf(request);
  let lastUser = -1;
  messages.forEach((message, index) => {
    if (message.role === 'user') lastUser = index;
  });
  const step = messages.slice(lastUser + 1).filter((message) => message.role === 'assistant').length;
  return { prompt: String(messages[lastUser]?.content ?? ''), step, request };
}

/** How the scripted model answers; each function may be replaced by a test. */
export interface ModelScript {
  agent: (turn: AgentTurn) => ScriptedReply;
  observer: (request: ScriptedRequest) => ScriptedReply;
  reflector: (request: ScriptedRequest) => ScriptedReply;
}

/** The observer's default: one observation quoting each user line of the transcript. */
export function observeUserLines(request: ScriptedRequest): ScriptedReply {
  const user = String(messagesOf(request)[1]?.content ?? '');
  const transcript = user.slice(user.indexOf('<transcript>'));
  const said = [...transcript.matchAll(/^\[\d+\] user: (.*)$/gm)].map((match) => match[1] ?? '');
  const lines = said.length > 0 ? said.map((text) => `The user said: ${text}`) : ['The agent continued the task.'];
  return { text: lines.map((line) => `IMPORTANCE:0.9\n${line}`).join('\n\n') };
}

/** The default script: the agent answers at once, the observer quotes the user. */
export function defaultScript(): ModelScript {
  return {
    agent: () => ({ text: 'final answer' }),
    observer: observeUserLines,
    reflector: () => ({ text: 'SUMMARY:\nThe user is working on a project.\n\nSUPERSESSIONS:\n\nCONTRADICTIONS:\n' }),
  };
}

/** Options of {@link startE2E}. */
export interface StartE2EOptions {
  /** More environment variables for `loadConfig` (e.g. `HARNESS_API_KEYS`). */
  readonly env?: Readonly<Record<string, string>>;
  /** @default 200 */
  readonly heartbeatMs?: number;
  /** Tools besides the memory tools. */
  readonly tools?: readonly Tool[];
  /** The server's `shutdownTimeoutMs`. @default its default */
  readonly shutdownTimeoutMs?: number;
  /** `createHarness`'s `databaseCheckMs`. @default its default */
  readonly databaseCheckMs?: number;
  /** `createHarness`'s `runSweepMs`. @default its default */
  readonly runSweepMs?: number;
  /** Where the server's log (its faults) goes. @default standard error, as JSON lines */
  readonly logger?: Logger;
}

/** A request to the harness: `json` is sent as the body, `key` as a bearer token. */
export interface ApiInit extends RequestInit {
  readonly key?: string;
  readonly json?: unknown;
}

/** A running end-to-end setup. */
export interface E2E {
  /** The harness base URL, `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly harness: Harness;
  readonly server: RunningServer;
  readonly model: ScriptedServer;
  readonly script: ModelScript;
  readonly workspace: string;
  /** The SQLite file the harness writes. */
  readonly dbPath: string;
  /** Logged model requests for the agent, in order. */
  agentRequests(): ScriptedRequest[];
  /** `fetch` against the harness. */
  api(path: string, init?: ApiInit): Promise<Response>;
  /** `api`, then the JSON body. */
  apiJson(path: string, init?: ApiInit): Promise<{ status: number; body: Record<string, any> }>;
  /** Starts a run; resolves with its id. */
  startRun(body: Record<string, unknown>, key?: string): Promise<string>;
  /** Reads the run's event stream until it closes; resolves with every frame. */
  events(runId: string, options?: { key?: string; lastEventId?: string }): Promise<SseFrame[]>;
  /** Rows in a table of the SQLite file, read through a separate read-only connection. */
  countRows(table: string): number;
  close(): Promise<void>;
}

/**
 * Starts the scripted model server and the harness over HTTP on an ephemeral port, with the
 * configuration read only from an explicit env, a temp home and a temp workspace.
 */
export async function startE2E(options: StartE2EOptions = {}): Promise<E2E> {
  const script = defaultScript();
  const model = await startScriptedOpenAIServer();
  model.setDefaultReply((request) => {
    const role = roleOf(request);
    if (role === 'observer') return script.observer(request);
    if (role === 'reflector') return script.reflector(request);
    return script.agent(agentTurnOf(request));
  });
  const root = mkdtempSync(join(tmpdir(), 'hm-e2e-'));
  const workspace = join(root, 'workspace');
  const home = join(root, 'home');
  // The workspace exists, as a real one does (on Postgres no SQLite file creates it).
  mkdirSync(workspace);
  const env: Record<string, string> = {
    HARNESS_WORKSPACE: workspace,
    OPENAI_BASE_URL: model.url,
    OPENAI_API_KEY: 'test',
    HARNESS_MEMORY_DEFAULT_ENABLED: 'true',
    HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '1',
    ...options.env,
  };
  let harness: Harness | undefined;
  try {
    const config = loadConfig({ env, cwd: root, homeDir: home });
    harness = await createHarness({
      config,
      env,
      heartbeatMs: options.heartbeatMs ?? 200,
      ...(options.databaseCheckMs === undefined ? {} : { databaseCheckMs: options.databaseCheckMs }),
      ...(options.runSweepMs === undefined ? {} : { runSweepMs: options.runSweepMs }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
      ...(options.tools ? { tools: options.tools } : {}),
    });
    const server = await startServer(harness, {
      port: 0,
      ...(options.shutdownTimeoutMs === undefined ? {} : { shutdownTimeoutMs: options.shutdownTimeoutMs }),
    });
    const dbPath = config.memory.sqlitePath;
    const api = (path: string, init: ApiInit = {}): Promise<Response> => {
      const { key, json, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (key !== undefined) headers.set('authorization', `Bearer ${key}`);
      let body = rest.body;
      if (json !== undefined) {
        body = typeof json === 'string' ? json : JSON.stringify(json);
        if (!headers.has('content-type')) headers.set('content-type', 'application/json');
      }
      return fetch(`${server.url}${path}`, { ...rest, headers, ...(body === undefined ? {} : { body }) });
    };
    const apiJson = async (path: string, init?: ApiInit) => {
      const response = await api(path, init);
      const text = await response.text();
      return { status: response.status, body: (text === '' ? {} : JSON.parse(text)) as Record<string, any> };
    };
    const started = harness;
    return {
      url: server.url,
      harness: started,
      server,
      model,
      script,
      workspace,
      dbPath,
      agentRequests: () =>
        model.requests.filter((request) => request.path === '/v1/chat/completions' && roleOf(request) === 'agent'),
      api,
      apiJson,
      async startRun(body, key) {
        const { status, body: answer } = await apiJson('/v1/runs', {
          method: 'POST',
          json: body,
          ...(key === undefined ? {} : { key }),
        });
        if (status !== 202) throw new Error(`POST /v1/runs answered ${status}: ${JSON.stringify(answer)}`);
        return String(answer['run_id']);
      },
      async events(runId, eventOptions = {}) {
        const stream = await openSse(`${server.url}/v1/runs/${runId}/events`, {
          ...(eventOptions.lastEventId === undefined ? {} : { lastEventId: eventOptions.lastEventId }),
          ...(eventOptions.key === undefined ? {} : { headers: { authorization: `Bearer ${eventOptions.key}` } }),
        });
        if (stream.status !== 200) throw new Error(`GET events answered ${stream.status}: ${stream.errorText}`);
        return stream.collect({ timeoutMs: 15_000 });
      },
      countRows(table) {
        const db = new Database(dbPath, { readonly: true, fileMustExist: true });
        try {
          return (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
        } finally {
          db.close();
        }
      },
      async close() {
        await server.close();
        await model.close();
        rmSync(root, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await harness?.dispose();
    await model.close();
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}

/** The run events of frames. */
export function eventsOf(frames: readonly SseFrame[]): RunEventData[] {
  return frames.map(eventData);
}

/** The event types of frames, in order. */
export function typesOf(frames: readonly SseFrame[]): string[] {
  return frames.map((frame) => frame.event ?? 'message');
}

/**
 * Starts `call` with a signal and aborts it once `asked()` reports the model was asked for it;
 * how the call ended: `cancelled` when it rejected (as a client's call does when aborted).
 */
export async function abortOnceAsked(
  call: (signal: AbortSignal) => Promise<unknown>,
  asked: () => number,
): Promise<'answered' | 'cancelled'> {
  const controller = new AbortController();
  const settled = call(controller.signal).then(
    () => 'answered' as const,
    () => 'cancelled' as const,
  );
  await vi.waitFor(() => expect(asked()).toBe(1), { timeout: 10_000, interval: 20 });
  controller.abort();
  return settled;
}
