/**
 * What an API key may hold. A key travels in an `Authorization` header, which carries
 * visible ASCII reliably: a key with other characters reaches the server as different
 * bytes from different clients (curl sends UTF-8, a browser Latin-1, and most refuse it),
 * so it could never be used. A key also holds no `:`, the separator of a `"key:tenant"`
 * entry. Such keys are refused where they are configured.
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
  // Tenant ids may hold ":", so a "key:tenant" entry can only end its key at the first one:
  // a key with a colon would load as its prefix, a working key for another tenant.
  if (key.includes(':')) return 'must not hold ":", which ends the key in a "key:tenant" entry';
  return undefined;
}

/**
 * What an API key may be allowed to do (the reference's `runs:read` and `runs:write`, and the
 * same two for memory). A key given no scopes may do everything.
 */
export const API_KEY_SCOPES = ['runs:read', 'runs:write', 'memory:read', 'memory:write'] as const;

/** One of {@link API_KEY_SCOPES}. */
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

/**
 * Why `scopes` cannot be a key's scopes, or `undefined` when they can: each one known, none
 * twice.
 * @example
 * apiKeyScopesProblem(['runs:read']); // undefined
 * apiKeyScopesProblem(['runs:admin']); // 'has an unknown scope "runs:admin"; …'
 */
export function apiKeyScopesProblem(scopes: readonly unknown[]): string | undefined {
  const seen = new Set<unknown>();
  for (const scope of scopes) {
    if (typeof scope !== 'string' || !(API_KEY_SCOPES as readonly string[]).includes(scope)) {
      const shown = typeof scope === 'string' ? JSON.stringify(scope.slice(0, 40)) : typeof scope;
      return `has an unknown scope ${shown}; the scopes are ${API_KEY_SCOPES.join(', ')}`;
    }
    if (seen.has(scope)) return `names the scope ${scope} twice`;
    seen.add(scope);
  }
  return undefined;
}
