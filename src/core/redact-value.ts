/**
 * Redaction of structured values: every string inside a JSON-like value, and JSON text
 * (tool arguments, tool results) redacted inside its strings so it stays valid JSON.
 * @module
 */
import { redactSecrets } from './redact-secrets.js';

/** Options of {@link redactValue}. */
export interface RedactValueOptions {
  /** Redact object keys too (working memory stores what the agent wrote as keys). @default false */
  readonly keys?: boolean;
}

/**
 * A copy of `value` with {@link redactSecrets} applied to every string in it (object keys
 * only with `keys: true`), a string value read with its key too, so `{"api_key": "…"}` is
 * redacted as the same JSON text would be. Values without a string that needs it come back unchanged, the
 * same object included.
 */
export function redactValue<T>(value: T, options: RedactValueOptions = {}): T {
  if (typeof value === 'string') return redactSecrets(value).text as T;
  if (typeof value !== 'object' || value === null) return value;
  const keys = options.keys ?? false;
  return needsRedaction(value, keys) ? (redactNode(value, 0, keys) as T) : value;
}

/**
 * Redacts JSON text inside its string values (and, with `keys: true`, its object keys), so the
 * result still parses (an unterminated private key cannot swallow the closing quotes); text
 * that is not JSON is redacted as text.
 */
export function redactJsonText(text: string, options: RedactValueOptions = {}): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return redactSecrets(text).text;
  }
  const redacted = redactValue(parsed, options);
  return redacted === parsed ? text : JSON.stringify(redacted);
}

// Deeper values are redacted as their JSON text rather than walked further.
const MAX_DEPTH = 64;

// Every rule stops at a line break except the private-key block, which always replaces what
// it matches. So a string that one rule would change is changed the same way inside the
// strings joined by line breaks: one pass over the joined text tells whether any string of
// the value needs redacting, at about the cost of redacting one string.
const SEPARATOR = '\n';

function needsRedaction(value: object, keys: boolean): boolean {
  const texts: string[] = [];
  collectTexts(value, 0, keys, texts);
  const joined = texts.join(SEPARATOR);
  return redactSecrets(joined).text !== joined;
}

function collectTexts(value: unknown, depth: number, keys: boolean, into: string[]): void {
  if (typeof value === 'string') {
    into.push(value);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  // Past the depth the walk stops, the remainder is redacted as JSON text: check that text.
  if (depth >= MAX_DEPTH) {
    into.push(JSON.stringify(value));
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) collectTexts(item, depth + 1, keys, into);
    return;
  }
  for (const [key, item] of Object.entries(value)) {
    if (keys) into.push(key);
    collectTexts(item, depth + 1, keys, into);
    if (typeof item === 'string' && SECRET_LABEL.test(key)) into.push(pairText(key, item));
  }
}

// The words a key must hold for its value to be read as labelled by it (every labelled rule of
// redactSecrets ends its label with one of them): other keys cost no second pass.
const SECRET_LABEL = /passw|passphrase|secret|api[_-]?key|account[_-]?key|private[_-]?key|token|authorization/iu;

/**
 * A string value with its key as JSON text: `{"api_key":"…"}`. The key is what labels the
 * value a secret (`api_key`, `db_password`, `SecretAccessKey`), and a value read on its own
 * has lost it.
 */
function pairText(key: string, item: string): string {
  return `{${JSON.stringify(key)}:${JSON.stringify(item)}}`;
}

/** The string `item` of `key`, redacted on its own and as labelled by its key. */
function redactEntry(key: string, item: string): string {
  const own = redactSecrets(item).text;
  if (!SECRET_LABEL.test(key)) return own;
  // The key redacted first, so a secret in it (an unterminated private key) cannot run on
  // through the value's quotes.
  const text = pairText(redactSecrets(key).text, own);
  const redacted = redactSecrets(text).text;
  if (redacted === text) return own;
  try {
    const [value] = Object.values(JSON.parse(redacted) as Record<string, unknown>);
    return typeof value === 'string' ? value : own;
  } catch {
    return own;
  }
}

function redactNode(value: unknown, depth: number, keys: boolean): unknown {
  if (typeof value === 'string') return redactSecrets(value).text;
  if (typeof value !== 'object' || value === null) return value;
  if (depth >= MAX_DEPTH) return redactDeepRemainder(value);
  if (Array.isArray(value)) {
    const items = value.map((item) => redactNode(item, depth + 1, keys));
    return items.some((item, index) => item !== value[index]) ? items : value;
  }
  let changed = false;
  const given = Object.entries(value);
  const redactedKeys = keys ? given.map(([key]) => redactSecrets(key).text) : [];
  // Keys that redacting leaves as they are keep their names; the others take free ones.
  const taken = new Set(given.filter((_entry, index) => redactedKeys[index] === given[index]?.[0]).map(([key]) => key));
  const entries = given.map(([key, item], index) => {
    const redactedKey = redactedKeys[index] ?? key;
    const nextKey = keys && redactedKey !== key ? distinctKey(redactedKey, taken) : key;
    const next = typeof item === 'string' ? redactEntry(key, item) : redactNode(item, depth + 1, keys);
    if (next !== item || nextKey !== key) changed = true;
    return [nextKey, next] as const;
  });
  // fromEntries defines own properties, so a "__proto__" key stays a plain key.
  return changed ? Object.fromEntries(entries) : value;
}

/**
 * `redacted` (a key redacting changed), made distinct from the keys `taken` (every key left
 * as it was, and the changed ones placed so far): two addresses as keys would otherwise
 * become one key, and one value would be lost.
 */
function distinctKey(redacted: string, taken: Set<string>): string {
  let next = redacted;
  for (let copy = 2; taken.has(next); copy++) next = `${redacted} (${copy})`;
  taken.add(next);
  return next;
}

function redactDeepRemainder(value: object): unknown {
  const text = JSON.stringify(value);
  const redacted = redactSecrets(text).text;
  if (redacted === text) return value;
  try {
    return JSON.parse(redacted) as unknown;
  } catch {
    return redacted;
  }
}
