/**
 * A run store that redacts secrets and strips invisible characters before anything reaches the
 * store it wraps: run prompts, system prompts, outputs and error messages, conversation
 * messages (tool-call arguments and tool results included) and event payloads. Events are
 * delivered live as stored, so SSE streams carry the cleaned text too. Reads pass through.
 * @module
 */
import { wellFormed } from '../core/cut-text.js';
import { needsStripping, stripInvisible, stripInvisibleInJson } from '../core/sanitize-text.js';
import { redactSecrets } from '../core/redact-secrets.js';
import { requireObject } from '../core/require-option.js';
import { redactJsonText, redactValue, revealHiddenSecrets } from '../core/redact-value.js';
import type { ConversationMessage, RunPatch, RunStore } from './run-store.js';

/**
 * Wraps `store` so that nothing it stores holds a secret or an invisible character (Unicode
 * tag characters, bidi controls, zero-width marks: what {@link stripInvisible} removes, emoji
 * and script joiners kept where they join). The record `createRun` returns keeps the prompt
 * and system prompt as given, so the process running the run works with what the caller
 * sent; every later read, and every later run of the conversation, gets the cleaned text.
 * With `redactSecrets: false`, only conversation messages are cleaned, and of invisible
 * characters only: they are what later runs replay to the model.
 * @example
 * const runStore = createRedactingRunStore(createSqliteRunStore({ path: '.harness/state.db' }));
 */
export function createRedactingRunStore(store: RunStore, options: RedactingRunStoreOptions = {}): RunStore {
  requireObject(
    'createRedactingRunStore',
    'store',
    store,
    ['createRun', 'updateRun', 'appendEvent', 'appendMessages'],
    'Pass the RunStore to wrap.',
  );
  const clean = options.redactSecrets === false ? STRIP_MESSAGES : REDACT;
  const recentHistory = store.recentHistory?.bind(store);
  const deleteEndedRuns = store.deleteEndedRuns?.bind(store);
  return {
    specificationVersion: 'v1',
    name: store.name,
    ...(store.supportsClipAt === undefined ? {} : { supportsClipAt: store.supportsClipAt }),
    async createRun(run) {
      const stored = await store.createRun({
        ...run,
        prompt: clean.text(run.prompt),
        systemPrompt: clean.text(run.systemPrompt),
        output: run.output === null ? null : clean.text(run.output),
        error: run.error === null ? null : { code: run.error.code, message: clean.text(run.error.message) },
      });
      return { ...stored, prompt: run.prompt, systemPrompt: run.systemPrompt };
    },
    getRun: (runId) => store.getRun(runId),
    updateRun: (runId, patch) => store.updateRun(runId, clean.patch(patch)),
    appendEvent: (runId, type, payload) => store.appendEvent(runId, type, withIdsKept(payload, clean.payload(payload))),
    listEvents: (runId, afterSeq) => store.listEvents(runId, afterSeq),
    appendMessages: (memoryId, messages, options) =>
      store.appendMessages(memoryId, messages.map(clean.message), options),
    recentMessages: (memoryId, maxTokens, options) => store.recentMessages(memoryId, maxTokens, options),
    ...(recentHistory ? { recentHistory } : {}),
    listStaleRuns: (olderThanSeconds) => store.listStaleRuns(olderThanSeconds),
    abandonStaleRun: (runId, olderThanSeconds, error) =>
      store.abandonStaleRun(runId, olderThanSeconds, clean.patch({ error }).error ?? error),
    ...(deleteEndedRuns ? { deleteEndedRuns } : {}),
    listRuns: (query) => store.listRuns(query),
    forgetConversation: (memoryId) => store.forgetConversation(memoryId),
    conversationGeneration: (memoryId) => store.conversationGeneration(memoryId),
    dispose: () => store.dispose(),
  };
}

/** Options of {@link createRedactingRunStore}. */
export interface RedactingRunStoreOptions {
  /**
   * Whether secrets are redacted (and invisible characters stripped) in everything stored;
   * `false` (`[server] redact_transcripts = false`) still strips invisible characters from
   * conversation messages, which later runs replay to the model.
   * @default true
   */
  readonly redactSecrets?: boolean;
}

/** How each kind of stored text is cleaned. */
interface Cleaning {
  text(text: string): string;
  patch(patch: RunPatch): RunPatch;
  payload(payload: Record<string, unknown>): Record<string, unknown>;
  message(message: ConversationMessage): ConversationMessage;
}

const REDACT: Cleaning = { text: redact, patch: redactPatch, payload: redactPayload, message: redactMessage };

// NOTE: run records and events keep their text as sent (the inspector shows their bidi controls
// as markers); the history is what a later run replays, so it is stripped (F41).
const STRIP_MESSAGES: Cleaning = {
  text: (text) => text,
  patch: (patch) => patch,
  payload: (payload) => payload,
  message: stripMessage,
};

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

// What is stored is also stripped of invisible characters: a tag-character instruction in a
// fetched page was replayed to the model in every later run of the conversation (F41).
function redact(text: string): string {
  return redactStripped(text, redactText, stripInvisible);
}

function redactText(text: string): string {
  return redactSecrets(text).text;
}

/**
 * `text` redacted (`redactAs`), also as read without invisible characters (`strip`) when it
 * holds one, and stored without them. `strip(redacted)` is the reading `revealHiddenSecrets`
 * checked; stripping anything else (the reading it kept, stripped once more: `A\u200D\uFE0FB`
 * keeps the selector for a second pass; JSON escapes that redacting wrote out as characters)
 * can join a secret's pieces, so that is redacted once more.
 */
function redactStripped(text: string, redactAs: (text: string) => string, strip: (text: string) => string): string {
  if (!needsStripping(text)) {
    const redacted = redactAs(text);
    return redacted === text || !needsStripping(redacted) ? redacted : redactAs(strip(redacted));
  }
  const stripOnce = remembering(strip);
  const redacted = redactAs(text);
  const read = revealHiddenSecrets(text, redacted, redactAs, stripOnce);
  if (read === redacted) return stripOnce(redacted);
  const stripped = needsStripping(read) ? strip(read) : read;
  return stripped === read ? read : redactAs(stripped);
}

/** `strip`, giving a text it was given before what it gave then (stripping 2 KB costs about 50 µs). */
function remembering(strip: (text: string) => string): (text: string) => string {
  const given = new Map<string, string>();
  return (text) => {
    const known = given.get(text);
    if (known !== undefined) return known;
    const stripped = strip(text);
    given.set(text, stripped);
    return stripped;
  };
}

// Every string of an event payload (`run.started`'s prompt, `assistant.message`'s content).
function redactPayload(payload: Record<string, unknown>): Record<string, unknown> {
  const redacted = redactValue(payload, HIDDEN_TOO);
  const stripped = stripStrings(redacted);
  return stripped === redacted ? redacted : (redactValue(stripped) as Record<string, unknown>);
}

// Object keys too: a tool's result may key its data by address or token.
const JSON_KEYS = { keys: true } as const;

/**
 * JSON text redacted; when it holds invisible characters, also as read without them, the
 * whole text, and that reading is stored if it finds more; stored without them either way.
 */
function redactJson(text: string): string {
  return redactStripped(text, (given) => redactJsonText(given, JSON_KEYS), stripJsonStrings);
}

/**
 * JSON text with every string in it (keys too) read without invisible characters, so it
 * stays JSON (stripping the raw text would turn line breaks between tokens into `\n`), as it
 * was when none needed it; text that is not JSON, as text.
 */
function stripJsonStrings(text: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return stripInvisible(text);
  }
  try {
    const stripped = stripStrings(parsed);
    return stripped === parsed ? text : JSON.stringify(stripped);
  } catch {
    // NOTE: the walk and JSON.stringify recurse: nesting thousands deep overflows the stack. In
    // JSON text a raw CR is only ever space between tokens (a string holds it escaped), so the
    // text as text is stripped and stays JSON.
    return wellFormed(stripInvisibleInJson(text.replace(CARRIAGE_RETURN, '\n')));
  }
}

const CARRIAGE_RETURN = /\r\n?/g;

/**
 * `value` with every string in it, object keys too, stripped; the same value when none
 * changed. Keys that stripping leaves as they are keep their names; the others take free ones
 * (`a\u200Bb` beside `ab` becomes `ab (2)`), so no value is lost.
 */
function stripStrings(value: unknown): unknown {
  if (typeof value === 'string') return needsStripping(value) ? stripInvisible(value) : value;
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const items = value.map(stripStrings);
    return items.some((item, index) => item !== value[index]) ? items : value;
  }
  const entries = Object.entries(value);
  const keys = entries.map(([key]) => stripStrings(key) as string);
  const taken = new Set(entries.filter(([key], index) => keys[index] === key).map(([key]) => key));
  let changed = false;
  const stripped = entries.map(([key, item], index) => {
    const strippedKey = keys[index] ?? key;
    const nextKey = strippedKey === key ? key : distinctKey(strippedKey, taken);
    const next = stripStrings(item);
    if (nextKey !== key || next !== item) changed = true;
    return [nextKey, next] as const;
  });
  // fromEntries defines own properties, so a "__proto__" key stays a plain key.
  return changed ? Object.fromEntries(stripped) : value;
}

/** `key` made distinct from the keys `taken`, which it joins. */
function distinctKey(key: string, taken: Set<string>): string {
  let next = key;
  for (let copy = 2; taken.has(next); copy++) next = `${key} (${copy})`;
  taken.add(next);
  return next;
}

function redactPatch(patch: RunPatch): RunPatch {
  return {
    ...patch,
    ...(typeof patch.output === 'string' ? { output: redact(patch.output) } : {}),
    ...(patch.error ? { error: { code: patch.error.code, message: redact(patch.error.message) } } : {}),
  };
}

/** `message` without invisible characters, tool results and tool-call arguments still JSON. */
function stripMessage(message: ConversationMessage): ConversationMessage {
  return {
    ...message,
    content: message.role === 'tool' ? stripJson(message.content) : stripText(message.content),
    ...(message.toolCalls
      ? { toolCalls: message.toolCalls.map((call) => ({ ...call, arguments: stripJson(call.arguments) })) }
      : {}),
  };
}

function stripText(text: string): string {
  return needsStripping(text) ? stripInvisible(text) : text;
}

// A JSON escape (`\u200b`, `\udb40\udc41`) is an invisible character once the text is parsed.
function stripJson(text: string): string {
  return needsStripping(text) || text.includes('\\u') ? stripJsonStrings(text) : text;
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
