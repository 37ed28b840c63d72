/**
 * What an API key may hold. A key travels in an `Authorization` header, which carries
 * visible ASCII reliably: a key with other characters reaches the server as different
 * bytes from different clients (curl sends UTF-8, a browser Latin-1, and most refuse it),
 * so it could never be used. Such keys are refused where they are configured.
 * @module
 */

/** The longest API key accepted, in characters. */
export const MAX_API_KEY_LENGTH = 512;

/**
 * Why `key` cannot be an API key, or `undefined` when it can. The key itself is never
 * part of the answer (it is a secret).
 * @example
 * apiKeyProblem('sk-harness-1'); // undefined
 * apiKeyProblem('clé'); // 'may hold only visible ASCII characters …'
 */
export function apiKeyProblem(key: string): string | undefined {
  if (key.length === 0) return 'must not be empty';
  if (key.length > MAX_API_KEY_LENGTH)
    return `is ${key.length} characters long; at most ${MAX_API_KEY_LENGTH} are allowed`;
  if (/[^\x21-\x7e]/u.test(key))
    return 'may hold only visible ASCII characters (letters, digits, punctuation; no spaces), which is what an HTTP header carries';
  return undefined;
}
