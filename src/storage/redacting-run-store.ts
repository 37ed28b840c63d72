/**
 * A run store that redacts secrets before anything reaches the store it wraps: run prompts,
 * system prompts, outputs and error messages, conversation messages (tool-call arguments and
 * tool results included) and event payloads. Events are delivered live as stored, so SSE
 * streams carry the redacted text too. Reads pass through.
 * @module
 */
import { redactSecrets } from '../core/redact-secrets.js';
import { needsStripping, stripInvisible } from '../core/sanitize-text.js';
import { requireObject } from '../core/require-option.js';
import { redactJsonText, redactValue } from '../core/redact-value.js';
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
    recentMessages: (memoryId, maxTokens) => store.recentMessages(memoryId, maxTokens),
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

/**
 * `text` redacted; when it holds invisible characters, also as read without them, and that
 * reading is stored if it finds more (`sk-\u200Bproj-…` hides a key from the rules only
 * while the zero-width space is there). Text without a hidden secret is stored as given.
 */
function hiddenSecretsToo(text: string, redactAs: (text: string) => string, strip: (text: string) => string): string {
  const direct = redactAs(text);
  if (!needsStripping(text)) return direct;
  const stripped = strip(text);
  const revealed = redactAs(stripped);
  return revealed !== stripped && redactionCount(revealed) > redactionCount(direct) ? revealed : direct;
}

/**
 * An event payload redacted, every string of it also as read without invisible characters
 * (`run.started`'s prompt, `assistant.message`'s content): the string is stored that way when
 * it finds more, as `hiddenSecretsToo` decides for text. Strings without one stay as redacted.
 */
function redactPayload(payload: Record<string, unknown>): Record<string, unknown> {
  const redacted = redactValue(payload);
  return hiddenInStrings(payload, redacted, undefined, 0) as Record<string, unknown>;
}

/**
 * `redacted` (`given` redacted by `redactValue`, which keeps keys and shape) with each string
 * `given` holds invisible characters in replaced by its reading without them when that finds
 * more; `key` labels a string of an object. Payloads are shallow: deeper than 64 levels,
 * `redacted` stays as it is.
 */
function hiddenInStrings(given: unknown, redacted: unknown, key: string | undefined, depth: number): unknown {
  if (typeof given === 'string') {
    if (!needsStripping(given) || typeof redacted !== 'string') return redacted;
    const stripped = stripInvisible(given);
    // A string of an object is read with its key, as redactValue reads it (`{"api_key": …}`).
    const revealed =
      key === undefined ? redactSecrets(stripped).text : (redactValue({ [key]: stripped })[key] ?? stripped);
    return revealed !== stripped && redactionCount(revealed) > redactionCount(redacted) ? revealed : redacted;
  }
  if (depth >= 64 || typeof given !== 'object' || given === null || typeof redacted !== 'object' || redacted === null)
    return redacted;
  if (Array.isArray(given)) {
    if (!Array.isArray(redacted)) return redacted;
    const items = redacted.map((item: unknown, index) => hiddenInStrings(given[index], item, undefined, depth + 1));
    return items.some((item, index) => item !== redacted[index]) ? items : redacted;
  }
  const source = given as Record<string, unknown>;
  let changed = false;
  const entries = Object.entries(redacted).map(([name, item]) => {
    const next = Object.hasOwn(source, name) ? hiddenInStrings(source[name], item, name, depth + 1) : item;
    if (next !== item) changed = true;
    return [name, next] as const;
  });
  // fromEntries defines own properties, so a "__proto__" key stays a plain key.
  return changed ? Object.fromEntries(entries) : redacted;
}

function redactionCount(text: string): number {
  return text.split('[REDACTED:').length - 1;
}

function redact(text: string): string {
  return hiddenSecretsToo(text, (given) => redactSecrets(given).text, stripInvisible);
}

// Object keys too: a tool's result may key its data by address or token.
function redactJson(text: string): string {
  return hiddenSecretsToo(text, (given) => redactJsonText(given, { keys: true }), stripJsonStrings);
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
