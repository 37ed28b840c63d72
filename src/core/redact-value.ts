/**
 * Redaction of structured values: every string inside a JSON-like value, and JSON text
 * (tool arguments, tool results) redacted inside its strings so it stays valid JSON.
 * @module
 */
import { redactSecrets } from './redact-secrets.js';

/**
 * A copy of `value` with {@link redactSecrets} applied to every string in it (object keys
 * stay as they are). Values without a string that needs it come back unchanged, the same
 * object included.
 */
export function redactValue<T>(value: T): T {
  return redactNode(value, 0) as T;
}

/**
 * Redacts JSON text inside its string values, so the result still parses (an unterminated
 * private key cannot swallow the closing quotes); text that is not JSON is redacted as text.
 */
export function redactJsonText(text: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return redactSecrets(text).text;
  }
  const redacted = redactNode(parsed, 0);
  return redacted === parsed ? text : JSON.stringify(redacted);
}

// Deeper values are redacted as their JSON text rather than walked further.
const MAX_DEPTH = 64;

function redactNode(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return redactSecrets(value).text;
  if (typeof value !== 'object' || value === null) return value;
  if (depth >= MAX_DEPTH) return redactDeepRemainder(value);
  if (Array.isArray(value)) {
    const items = value.map((item) => redactNode(item, depth + 1));
    return items.some((item, index) => item !== value[index]) ? items : value;
  }
  let changed = false;
  const entries = Object.entries(value).map(([key, item]) => {
    const next = redactNode(item, depth + 1);
    if (next !== item) changed = true;
    return [key, next] as const;
  });
  return changed ? Object.fromEntries(entries) : value;
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
