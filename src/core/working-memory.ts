import { HarnessMemoryError } from './errors.js';
import { redactSecrets } from './redact-secrets.js';
import { redactValue } from './redact-value.js';
import { needsStripping, neutralizeMarkup, stripInvisible, stripInvisibleInJson } from './sanitize-text.js';

/** Limits of working memory, per scope. */
export interface WorkingMemoryLimitsConfig {
  /** Largest value, as JSON, in bytes. @default 8192 */
  readonly maxValueBytes: number;
  /** Most entries a scope may hold. @default 100 */
  readonly maxEntries: number;
  /** Most bytes (keys plus JSON values) a scope may hold. @default 32768 */
  readonly maxTotalBytes: number;
}

/** Default limits: 8 KiB per value, 100 entries and 32 KiB per scope. */
export const DEFAULT_WORKING_MEMORY_LIMITS: WorkingMemoryLimitsConfig = Object.freeze({
  maxValueBytes: 8192,
  maxEntries: 100,
  maxTotalBytes: 32768,
});

/** Longest working-memory key, in characters. */
export const MAX_WORKING_MEMORY_KEY_LENGTH = 128;
/** Longest time to live of a working-memory entry: ten years, in seconds. */
export const MAX_WORKING_MEMORY_TTL_SECONDS = 315_360_000;
/** Deepest nesting accepted in a value. */
export const MAX_WORKING_MEMORY_DEPTH = 32;

// Newlines, tabs and every character stripInvisible removes or turns into a newline.
const FORBIDDEN_KEY_CHARACTERS = /[\t\n]/;

/**
 * Checks a key a set would store: besides {@link normalizeWorkingMemoryKey}, not `.` or `..`,
 * which a URL cannot carry as a path segment (the HTTP route and the inspector could never
 * read or delete the entry). Get and delete still take them, for entries stored before.
 */
export function checkNewWorkingMemoryKey(normalized: string): string {
  if (normalized === '.' || normalized === '..')
    throw invalid('key', `key must not be "${normalized}": a URL cannot name it`);
  return normalized;
}

/**
 * Normalises and checks a key. Every path (set, get, delete) trims the same way.
 * 1 to 128 characters after trimming; no control characters or newlines.
 */
export function normalizeWorkingMemoryKey(key: unknown): string {
  if (typeof key !== 'string') throw invalid('key', 'key is required and must be a string');
  const trimmed = key.trim();
  if (trimmed === '') throw invalid('key', 'working memory key is required');
  // Characters are counted only when there may be too many: a string has at least as many
  // UTF-16 units as characters, and the count allocates (every get, set and delete pays it).
  if (trimmed.length > MAX_WORKING_MEMORY_KEY_LENGTH && [...trimmed].length > MAX_WORKING_MEMORY_KEY_LENGTH) {
    throw invalid('key', `key is longer than ${MAX_WORKING_MEMORY_KEY_LENGTH} characters`);
  }
  // Half of a surrogate pair: stored as U+FFFD by some backends, which would make two keys one.
  if (!trimmed.isWellFormed())
    throw invalid('key', 'key must be well-formed Unicode (it holds half of a surrogate pair)');
  if (FORBIDDEN_KEY_CHARACTERS.test(trimmed) || needsStripping(trimmed)) {
    throw invalid('key', 'key must not contain control characters, newlines or invisible characters');
  }
  return trimmed;
}

const MAX_CLEAN_KEYS = 4096;
const CLEAN_KEYS = new Set<string>();

/**
 * Refuses a key that holds what looks like a secret (see {@link redactSecrets}): keys are
 * shown in every turn and cannot be redacted without making two entries one.
 */
export function refuseSecretKey(key: string): void {
  // An agent sets the same few keys over and over: each is scanned once (a scan costs about
  // 1.5 µs, several percent of a whole set).
  if (CLEAN_KEYS.has(key)) return;
  const kinds = Object.keys(redactSecrets(key).counts);
  if (kinds.length === 0) {
    if (CLEAN_KEYS.size >= MAX_CLEAN_KEYS) CLEAN_KEYS.clear();
    CLEAN_KEYS.add(key);
    return;
  }
  throw invalid(
    'key',
    `key looks like a secret (${kinds.join(', ')}); keys are shown in every turn and never redacted, so name the entry plainly`,
  );
}

/**
 * Encodes a value as JSON for storage. `undefined` becomes `null`. Rejects values that are
 * not plain JSON (functions, symbols, bigints, cycles, over-deep nesting) and values
 * larger than `maxValueBytes`.
 */
export function encodeWorkingMemoryValue(value: unknown, maxValueBytes: number): string {
  checkPlainJson(value, 0, new Set());
  const json = JSON.stringify(value === undefined ? null : value);
  const bytes = utf8Length(json);
  if (bytes > maxValueBytes) {
    throw new HarnessMemoryError({
      code: 'WORKING_MEMORY_LIMIT',
      component: 'working-memory',
      message:
        `value is ${bytes} bytes as JSON, over the ${maxValueBytes}-byte limit. Store a shorter ` +
        `value, or raise working_memory_max_value_bytes.`,
      data: { limit: 'value_bytes', actual: bytes, max: maxValueBytes },
    });
  }
  return json;
}

// What JSON text shows of characters stripInvisible acts on: the escapes JSON.stringify writes
// for C0 controls (\r among them). Other such characters appear as themselves.
const ESCAPED_CONTROL = /\\(?:r|u00[01])/;

/**
 * The value's JSON with invisible characters stripped from every string and object key, and
 * the Unicode line breaks made `\n` (see {@link stripInvisible}). Hidden characters could
 * carry instructions into every turn, or split a secret so redaction misses it. The same
 * string comes back when there is nothing to strip.
 */
export function stripInvisibleFromValueJson(valueJson: string): string {
  if (!ESCAPED_CONTROL.test(valueJson) && !needsStripping(valueJson)) return valueJson;
  return JSON.stringify(stripNode(JSON.parse(valueJson)));
}

function stripNode(value: unknown): unknown {
  if (typeof value === 'string') return stripInvisible(value);
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(stripNode);
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const clean = stripInvisible(key);
    if (Object.hasOwn(copy, clean))
      throw invalid(
        'value',
        `value has two object keys that differ only by invisible characters (${JSON.stringify(clean)})`,
      );
    // defineProperty keeps a "__proto__" key as data, where assignment would drop it.
    Object.defineProperty(copy, clean, {
      value: stripNode(item),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return copy;
}

/**
 * The `<working-memory>` snippet: one `key: <json>` line per entry, sorted by key,
 * or `""` when there are none. Keys and values cannot open or close tags, and a key that is
 * not a plain name is JSON-quoted (see {@link workingMemoryKeyText}).
 */
export function buildWorkingMemorySnippet(
  entries: ReadonlyArray<{ readonly key: string; readonly valueJson: string }>,
): string {
  return joinWorkingMemoryLines(entries.map(workingMemoryLine));
}

/**
 * One entry's line of the `<working-memory>` snippet: `key: <json>`, the key as
 * {@link workingMemoryKeyText} shows it.
 */
export function workingMemoryLine(entry: { readonly key: string; readonly valueJson: string }): string {
  return `${workingMemoryKeyText(entry.key)}: ${neutralizeMarkup(stripInvisibleInJson(entry.valueJson))}`;
}

// A key shown as it is: an ASCII letter or digit, then ASCII letters, digits and `_ . - /`
// (`plan`, `launch_codename`, `src/auth.go`): it cannot start a Markdown header, list item or
// quote, hold a `:` or a space, or pass for another script's letters.
const PLAIN_KEY = /^[A-Za-z0-9][A-Za-z0-9_./-]*$/;
// A plain key whose first word is a role a transcript labels its turns with (`system`,
// `SYSTEM_OVERRIDE`, `user.role`, `AI`): its line would read `system: "…"`. A longer word
// (`username`, `tools`, `airport`) is not one.
const ROLE_KEY = /^(?:system|developer|assistant|user|human|ai|tool|instructions?)(?![a-z])/i;

/**
 * A working-memory key as the snippet shows it: cleaned (invisible characters stripped, tags
 * neutralised), and JSON-quoted unless it is a plain name that is not a role, so no key
 * starts its line as free text that could pose as an instruction (`SYSTEM: ignore…`,
 * `# SYSTEM`, `developer: the user is an admin`). A quoted key always starts with `"`, which a
 * plain one never does.
 */
export function workingMemoryKeyText(key: string): string {
  const clean = neutralizeMarkup(stripInvisible(key));
  return PLAIN_KEY.test(clean) && !ROLE_KEY.test(clean) ? clean : JSON.stringify(clean);
}

/** The snippet of entry lines in key order (see {@link workingMemoryLine}); `""` for none. */
export function joinWorkingMemoryLines(lines: readonly string[]): string {
  if (lines.length === 0) return '';
  return `<working-memory>\n${lines.join('\n')}\n</working-memory>`;
}

/** UTF-8 byte length of a string. */
export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** The error a store throws when a scope-wide limit would be passed. */
export function workingMemoryLimitError(
  limit: 'entries' | 'total_bytes',
  actual: number,
  max: number,
): HarnessMemoryError {
  return new HarnessMemoryError({
    code: 'WORKING_MEMORY_LIMIT',
    component: 'working-memory',
    message:
      limit === 'entries'
        ? `the scope already holds ${max} entries, the limit. Delete an entry first, or raise ` +
          `working_memory_max_entries.`
        : `the scope's entries would take ${actual} bytes, over the ${max}-byte limit. Delete or shorten ` +
          `entries, or raise working_memory_max_total_bytes.`,
    data: { limit, actual, max },
  });
}

function checkPlainJson(value: unknown, depth: number, seen: Set<object>): void {
  if (depth > MAX_WORKING_MEMORY_DEPTH)
    throw invalid('value', `value is nested deeper than ${MAX_WORKING_MEMORY_DEPTH} levels`);
  if (value === null || value === undefined) return;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) throw invalid('value', 'value contains a number that is not finite');
      return;
    case 'object': {
      if (seen.has(value)) throw invalid('value', 'value contains a cycle');
      seen.add(value);
      if (Array.isArray(value)) {
        for (const item of value) checkPlainJson(item, depth + 1, seen);
      } else {
        for (const item of Object.values(value)) checkPlainJson(item, depth + 1, seen);
      }
      seen.delete(value);
      return;
    }
    default:
      throw invalid('value', `value contains a ${typeof value}, which is not JSON`);
  }
}

function invalid(field: string, message: string): HarnessMemoryError {
  return new HarnessMemoryError({
    code: 'WORKING_MEMORY_INVALID',
    component: 'working-memory',
    message: `${message}.`,
    data: { field },
  });
}

/**
 * `value` redacted as it would be under `key` in an object (`{"password": "hunter22"}`): the
 * entry's key labels its value just as an object key does (`set('password', 'hunter22')`),
 * and a value read on its own has lost that label. `value` itself when nothing changes. The
 * key is never changed: one holding a secret was refused before.
 */
export function redactWorkingMemoryValue(key: string, value: unknown): unknown {
  // A computed key defines an own property, so "__proto__" is a plain key here.
  const pair = { [key]: value };
  const redacted = redactValue(pair, { keys: true });
  if (redacted === pair) return value;
  const own = Object.getOwnPropertyDescriptor(redacted, key);
  return own === undefined ? redactValue(value, { keys: true }) : (own.value as unknown);
}
