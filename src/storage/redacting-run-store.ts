/**
 * A run store that redacts secrets before anything reaches the store it wraps: run prompts,
 * system prompts, outputs and error messages, conversation messages (tool-call arguments and
 * tool results included) and event payloads. Events are delivered live as stored, so SSE
 * streams carry the redacted text too. Reads pass through.
 * @module
 */
import { stripInvisible } from '../core/sanitize-text.js';
import { requireObject } from '../core/require-option.js';
import { redactJsonText, redactValue, revealHiddenSecrets } from '../core/redact-value.js';
import type { ConversationMessage, RunPatch, RunStore } from './run-store.js';

/**
 * Wraps `store` so that nothing it stores holds a secret. The record `createRun` returns
 * keeps the prompt and system prompt as given, so the process running the run works with
 * what the caller sent; every later read shows the redacted text.
 * @example
 * const runStore = createRedactingRunStore(createSqliteRunStore({ path: '.harness/state.db' }));
 */
export function createRedactingRunStore(store: RunStore): RunStore {
  requireObject(
    'createRedactingRunStore',
    'store',
    store,
    ['createRun', 'updateRun', 'appendEvent', 'appendMessages'],
    'Pass the RunStore to wrap.',
  );
  const recentHistory = store.recentHistory?.bind(store);
  const deleteEndedRuns = store.deleteEndedRuns?.bind(store);
  return {
    specificationVersion: 'v1',
    name: store.name,
    ...(store.supportsClipAt === undefined ? {} : { supportsClipAt: store.supportsClipAt }),
    async createRun(run) {
      const stored = await store.createRun({
        ...run,
        prompt: redact(run.prompt),
        systemPrompt: redact(run.systemPrompt),
        output: run.output === null ? null : redact(run.output),
        error: run.error === null ? null : { code: run.error.code, message: redact(run.error.message) },
      });
      return { ...stored, prompt: run.prompt, systemPrompt: run.systemPrompt };
    },
    getRun: (runId) => store.getRun(runId),
    updateRun: (runId, patch) => store.updateRun(runId, redactPatch(patch)),
    appendEvent: (runId, type, payload) => store.appendEvent(runId, type, withIdsKept(payload, redactPayload(payload))),
    listEvents: (runId, afterSeq) => store.listEvents(runId, afterSeq),
    appendMessages: (memoryId, messages, options) =>
      store.appendMessages(memoryId, messages.map(redactMessage), options),
    recentMessages: (memoryId, maxTokens, options) => store.recentMessages(memoryId, maxTokens, options),
    ...(recentHistory ? { recentHistory } : {}),
    listStaleRuns: (olderThanSeconds) => store.listStaleRuns(olderThanSeconds),
    abandonStaleRun: (runId, olderThanSeconds, error) =>
      store.abandonStaleRun(runId, olderThanSeconds, redactPatch({ error }).error ?? error),
    ...(deleteEndedRuns ? { deleteEndedRuns } : {}),
    listRuns: (query) => store.listRuns(query),
    forgetConversation: (memoryId) => store.forgetConversation(memoryId),
    conversationGeneration: (memoryId) => store.conversationGeneration(memoryId),
    dispose: () => store.dispose(),
  };
}

// The ids the runner puts on every event are checked scope ids, shown unredacted by the
// run itself (`GET /v1/runs/{id}`): an email address or a long number as a conversation id
// must reach subscribers as it is, or they could not tell its events from another's.
const ID_FIELDS = ['conversation_id', 'tenant_id', 'agent_id', 'run_id'] as const;

function withIdsKept(payload: Record<string, unknown>, redacted: Record<string, unknown>): Record<string, unknown> {
  if (redacted === payload) return payload;
  const kept = { ...redacted };
  for (const field of ID_FIELDS) if (typeof payload[field] === 'string') kept[field] = payload[field];
  return kept;
}

// Each string is also read without invisible characters (`sk-\u200Bproj-…` hides a key from
// the rules only while the zero-width space is there), and stored that way when it finds more.
const HIDDEN_TOO = { readWithoutInvisible: true } as const;

function redact(text: string): string {
  return redactValue(text, HIDDEN_TOO);
}

// Every string of an event payload (`run.started`'s prompt, `assistant.message`'s content).
function redactPayload(payload: Record<string, unknown>): Record<string, unknown> {
  return redactValue(payload, HIDDEN_TOO);
}

// Object keys too: a tool's result may key its data by address or token.
const JSON_KEYS = { keys: true } as const;

/**
 * JSON text redacted; when it holds invisible characters, also as read without them, the
 * whole text, and that reading is stored if it finds more.
 */
function redactJson(text: string): string {
  const redactAs = (given: string): string => redactJsonText(given, JSON_KEYS);
  return revealHiddenSecrets(text, redactAs(text), redactAs, stripJsonStrings);
}

/**
 * JSON text with every string in it (keys too) read without invisible characters, so it
 * stays JSON (stripping the raw text would turn line breaks between tokens into `\n`); text
 * that is not JSON, as text.
 */
function stripJsonStrings(text: string): string {
  try {
    return JSON.stringify(stripStrings(JSON.parse(text), 0));
  } catch {
    return stripInvisible(text);
  }
}

function stripStrings(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return stripInvisible(value);
  if (typeof value !== 'object' || value === null || depth >= 64) return value;
  if (Array.isArray(value)) return value.map((item) => stripStrings(item, depth + 1));
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [stripInvisible(key), stripStrings(item, depth + 1)]),
  );
}

function redactPatch(patch: RunPatch): RunPatch {
  return {
    ...patch,
    ...(typeof patch.output === 'string' ? { output: redact(patch.output) } : {}),
    ...(patch.error ? { error: { code: patch.error.code, message: redact(patch.error.message) } } : {}),
  };
}

// Tool results and tool-call arguments are JSON: they are redacted inside their strings so
// that they still parse when a later run replays them.
function redactMessage(message: ConversationMessage): ConversationMessage {
  return {
    ...message,
    content: message.role === 'tool' ? redactJson(message.content) : redact(message.content),
    ...(message.toolCalls
      ? { toolCalls: message.toolCalls.map((call) => ({ ...call, arguments: redactJson(call.arguments) })) }
      : {}),
  };
}
