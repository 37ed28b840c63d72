import { HarnessMemoryError } from './errors.js';
import { redactSecrets } from './redact-secrets.js';
import { redactValue } from './redact-value.js';
import { stripInvisible } from './sanitize-text.js';
import type { TokenEstimator } from './token-estimator.js';
import { estimateMessageTokens } from './token-estimator.js';

/**
 * A transcript message handed to observational memory. Each message needs a stable
 * identity: an `id`, or an `index` that is a per-conversation sequence number (never
 * reused). Identity, not array position, decides what is already observed.
 */
export interface TranscriptMessage {
  readonly id?: string;
  readonly index?: number;
  readonly role: string;
  readonly content?: string | null;
  readonly name?: string;
  readonly toolCallId?: string;
  readonly toolCalls?: ReadonlyArray<{ readonly id?: string; readonly name: string; readonly arguments: string }>;
}

/** A message ready to store: identity key, rendered text, token cost. */
export interface PreparedMessage {
  readonly messageKey: string;
  readonly role: string;
  readonly name: string;
  readonly toolCallId: string;
  readonly content: string;
  readonly tokenCount: number;
}

/** Longest message id accepted. */
export const MAX_MESSAGE_ID_LENGTH = 256;

// C0 controls, DEL and C1 controls.
const CONTROL = /\p{Cc}/u;
const ROLE = /^[a-z][a-z0-9_-]{0,31}$/;

const SNIPPET_PREFIXES = ['<working-memory>', '<observational-memory>'];

const SNIPPET_TAGS = ['working-memory', 'observational-memory'];

/**
 * The memory tools: the agent's (`working_memory`, `observational_memory`) and the MCP
 * server's (`memory_context`, `memory_search`, `memory_remember`, `memory_correct`,
 * `memory_observe`, `memory_forget`). Their calls and results are memory reading and writing
 * itself, never something to observe. Observed, a `list` or a `get` stored working-memory
 * values again as observations, which went stale (and contradicted the entry) once the entry
 * changed; a `memory_context` result fed the snippet back to the observer.
 */
export const MEMORY_TOOL_NAMES: ReadonlySet<string> = new Set([
  'working_memory',
  'observational_memory',
  'memory_context',
  'memory_search',
  'memory_remember',
  'memory_correct',
  'memory_observe',
  'memory_forget',
]);

/**
 * Whether `name` is one of {@link MEMORY_TOOL_NAMES}, also as an MCP client names another
 * server's tool (`mcp__harness-memory__memory_context`).
 */
export function isMemoryToolName(name: unknown): boolean {
  if (typeof name !== 'string') return false;
  const trimmed = name.trim();
  const prefixed = trimmed.lastIndexOf('__');
  return MEMORY_TOOL_NAMES.has(trimmed) || (prefixed !== -1 && MEMORY_TOOL_NAMES.has(trimmed.slice(prefixed + 2)));
}

/**
 * Validates, filters and renders messages for storage. The harness's own prompts
 * (system messages), memory snippets and the memory tools' calls and results
 * ({@link MEMORY_TOOL_NAMES}) are never observed; a `context_reset` system message is. Secrets are redacted when `redact` is on. Messages whose key is in `skip`
 * (known stored) are left out.
 */
export function prepareTranscript(
  messages: readonly TranscriptMessage[],
  estimator: TokenEstimator,
  options: { redact: boolean; skip?: ReadonlySet<string> | undefined },
): PreparedMessage[] {
  if (!Array.isArray(messages)) throw invalid(-1, 'messages must be an array');
  const prepared: PreparedMessage[] = [];
  const seen = new Map<string, number>();
  // A tool result may carry only the id of its call (OpenAI-style history): the ids of the
  // memory tools' calls tell their results.
  const memoryCalls = new Set<string>();
  for (const message of messages)
    for (const call of Array.isArray(message?.toolCalls) ? message.toolCalls : [])
      if (isMemoryToolName(call?.name) && typeof call?.id === 'string') memoryCalls.add(call.id);
  messages.forEach((message, position) => {
    const key = messageKeyOf(message, position);
    const first = seen.get(key);
    if (first !== undefined) {
      // The same message sent twice is harmless; another message under its id would be lost.
      if (sameMessage(messages[first] as TranscriptMessage, message)) return;
      throw invalid(
        position,
        `has the ${key.startsWith('id:') ? 'id' : 'index'} of message ${first} (${key.slice(key.indexOf(':') + 1)}) ` +
          'with another role or content; give each message its own id',
      );
    }
    seen.set(key, position);
    if (options.skip?.has(key)) return;
    const role = roleOf(message);
    // The role starts the message's line in the observer's prompt and decides the importance
    // cap of tool output: a role of several lines, or of look-alike letters, would forge both.
    if (role !== '' && !ROLE.test(role))
      throw invalid(position, 'role must be one word of ASCII letters, digits, _ or - (user, assistant, tool, system)');
    const name = typeof message.name === 'string' ? stripInvisible(message.name) : '';
    const rawContent = message.content ?? '';
    if (typeof rawContent !== 'string') throw invalid(position, 'content must be a string');
    if (role === 'system' && name !== 'context_reset') return;
    if (SNIPPET_PREFIXES.some((prefix) => rawContent.trimStart().startsWith(prefix))) return;
    if (
      role === 'tool' &&
      (isMemoryToolName(name) || (typeof message.toolCallId === 'string' && memoryCalls.has(message.toolCallId)))
    )
      return;
    const toolCalls = (message.toolCalls ?? []).filter(
      (call: NonNullable<TranscriptMessage['toolCalls']>[number]) => !isMemoryToolName(call?.name),
    );
    const readable = options.redact ? unescapedJson : (text: string) => text;
    const said = withoutSnippets(rawContent);
    let content = role === 'tool' ? readable(said) : said;
    for (const call of toolCalls)
      content += `${content === '' ? '' : '\n'}[tool call ${call.name}] ${readable(call.arguments)}`;
    content = stripInvisible(content);
    if (options.redact) content = redactSecrets(content).text;
    if (content.trim() === '') return;
    prepared.push({
      messageKey: key,
      role,
      name,
      toolCallId: typeof message.toolCallId === 'string' ? stripInvisible(message.toolCallId) : '',
      content,
      tokenCount: estimateMessageTokens(estimator, { content: said, toolCalls }),
    });
  });
  return prepared;
}

/**
 * JSON text (tool-call arguments, a tool's result) as the redaction rules must read it: a
 * `\u0043` or an escaped invisible character inside a key hides it from the text rules, which
 * read the text as it stands, and a value labelled secret by its key (`{"api_key": …}`) is
 * redacted only when read with its key. Such text is written again without escapes, secrets
 * redacted; text with neither is kept as it was (numbers and spacing untouched), and text that
 * is not JSON, or too deep to walk, comes back as it was.
 */
function unescapedJson(text: string): string {
  const first = text.trimStart()[0];
  if (first !== '{' && first !== '[' && first !== '"') return text;
  try {
    const parsed: unknown = JSON.parse(text);
    const redacted = redactValue(parsed);
    if (redacted === parsed && !text.includes('\\')) return text;
    // Invisible characters come out raw, for the pass over the whole message to strip.
    return JSON.stringify(redacted);
  } catch {
    return text;
  }
}

/**
 * `text` without our snippets quoted anywhere in it: a tool's result that quotes one (the MCP
 * server's `memory_context` returns both inside JSON) is memory read back, not something said.
 * One pass, linear in the text: a regular expression with a lazy body rescans to the end for
 * every opening tag that never closes (9 s for 1 MB of them).
 */
function withoutSnippets(text: string): string {
  if (!SNIPPET_TAGS.some((tag) => text.includes(`<${tag}>`))) return text;
  // Each tag's next opening at or after `at`; -1 once none of its blocks can close any more.
  const next = new Map(SNIPPET_TAGS.map((tag) => [tag, text.indexOf(`<${tag}>`)]));
  let kept = '';
  let at = 0;
  for (;;) {
    let tag: string | undefined;
    for (const [name, index] of next) {
      let found = index;
      if (found !== -1 && found < at) next.set(name, (found = text.indexOf(`<${name}>`, at)));
      if (found !== -1 && (tag === undefined || found < (next.get(tag) ?? -1))) tag = name;
    }
    if (tag === undefined) break;
    const start = next.get(tag) ?? -1;
    const close = text.indexOf(`</${tag}>`, start + tag.length + 2);
    // No closing tag after this opening: none after a later one either.
    if (close === -1) {
      next.set(tag, -1);
      continue;
    }
    kept += text.slice(at, start);
    at = close + tag.length + 3;
  }
  return kept + text.slice(at);
}

/** Whether two messages under one key say the same thing (role, name, content, tool calls). */
function sameMessage(a: TranscriptMessage, b: TranscriptMessage): boolean {
  return (
    roleOf(a) === roleOf(b) &&
    (a.content ?? '') === (b.content ?? '') &&
    (a.name ?? '') === (b.name ?? '') &&
    (a.toolCallId ?? '') === (b.toolCallId ?? '') &&
    callsText(a) !== null &&
    callsText(a) === callsText(b)
  );
}

/** Roles other libraries name otherwise (LangChain's), read as ours. */
const ROLE_ALIASES: ReadonlyMap<string, string> = new Map([
  ['human', 'user'],
  ['ai', 'assistant'],
]);

function roleOf(message: TranscriptMessage): string {
  if (typeof message.role !== 'string') return '';
  const role = stripInvisible(message.role).trim().toLowerCase();
  return ROLE_ALIASES.get(role) ?? role;
}

/** The tool calls as JSON text; null when they are not JSON (a cycle, a bigint), the same as nothing. */
function callsText(message: TranscriptMessage): string | null {
  try {
    return JSON.stringify(message.toolCalls ?? []);
  } catch {
    return null;
  }
}

function messageKeyOf(message: TranscriptMessage, position: number): string {
  if (typeof message !== 'object' || message === null) throw invalid(position, 'each message must be an object');
  if (message.id !== undefined) {
    if (typeof message.id !== 'string' || message.id.length === 0 || message.id.length > MAX_MESSAGE_ID_LENGTH) {
      throw invalid(position, `id must be a string of 1 to ${MAX_MESSAGE_ID_LENGTH} characters`);
    }
    // A control character is never part of a real id, and Postgres cannot store U+0000.
    if (CONTROL.test(message.id)) throw invalid(position, 'id must not contain control characters');
    // Half of a surrogate pair: Postgres stores it as U+FFFD, which would make two ids one.
    if (!message.id.isWellFormed())
      throw invalid(position, 'id must be well-formed Unicode (it holds half of a surrogate pair)');
    return `id:${message.id}`;
  }
  if (message.index !== undefined) {
    if (!Number.isSafeInteger(message.index) || message.index < 0)
      throw invalid(position, 'index must be a non-negative integer');
    return `index:${message.index}`;
  }
  throw invalid(
    position,
    'has neither an id nor an index. Give each message a stable id (or a per-conversation sequence number as ' +
      'index) so memory can tell which messages it has already observed',
  );
}

function invalid(position: number, message: string): HarnessMemoryError {
  return new HarnessMemoryError({
    code: 'OBSERVE_INPUT_INVALID',
    component: 'observe',
    message: position >= 0 ? `message ${position} ${message}.` : `${message}.`,
    data: { index: position },
  });
}
