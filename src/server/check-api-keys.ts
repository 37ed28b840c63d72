/**
 * The `apiKeys` option of `createApp`, checked where it is given: a key no client could send,
 * a tenant that is not a scope id, or a key given twice fails at start-up, not at the first
 * request.
 * @module
 */
import { API_KEY_SCOPES, apiKeyProblem, apiKeyScopesProblem } from '../core/api-key.js';
import type { ApiKeyScope } from '../core/api-key.js';
import { HarnessMemoryError } from '../core/errors.js';
import { invalidOption } from '../core/require-option.js';
import { validateScopeId } from '../core/scope.js';

/** One key, the tenant it stands for and what it may do (absent: everything). */
export interface ApiKeyEntry {
  readonly key: string;
  readonly tenantId: string;
  readonly scopes?: readonly ApiKeyScope[];
}

const HINT =
  'Pass [{ key, tenantId, scopes? }, …]: keys of visible ASCII without ":", tenants that are scope ids, each key once, ' +
  `scopes among ${API_KEY_SCOPES.join(', ')}.`;

/**
 * The entries, checked; `OPTION_INVALID` naming the entry (by position, never by its key)
 * otherwise.
 */
export function checkApiKeys(factory: string, entries: unknown): readonly ApiKeyEntry[] {
  if (entries === undefined) return [];
  if (!Array.isArray(entries)) throw invalidOption(factory, 'apiKeys', 'must be an array', HINT);
  const seen = new Set<string>();
  return entries.map((entry: unknown, index) => {
    const option = `apiKeys[${index}]`;
    if (typeof entry !== 'object' || entry === null)
      throw invalidOption(factory, option, 'must be an object { key, tenantId }', HINT);
    const { key, tenantId } = entry as Record<string, unknown>;
    if (typeof key !== 'string') throw invalidOption(factory, `${option}.key`, 'must be a string', HINT);
    const problem = apiKeyProblem(key);
    if (problem !== undefined) throw invalidOption(factory, `${option}.key`, problem, HINT);
    if (seen.has(key)) throw invalidOption(factory, `${option}.key`, 'repeats an earlier key', HINT);
    seen.add(key);
    try {
      validateScopeId('tenantId', tenantId);
    } catch (error) {
      if (!HarnessMemoryError.isInstance(error)) throw error;
      throw invalidOption(
        factory,
        `${option}.tenantId`,
        `is not a scope id: ${error.detail.replace(/\.$/u, '')}`,
        HINT,
      );
    }
    const { scopes } = entry as Record<string, unknown>;
    if (scopes === undefined) return { key, tenantId: tenantId as string };
    if (!Array.isArray(scopes)) throw invalidOption(factory, `${option}.scopes`, 'must be an array', HINT);
    const scopeProblem = apiKeyScopesProblem(scopes);
    if (scopeProblem !== undefined) throw invalidOption(factory, `${option}.scopes`, scopeProblem, HINT);
    return { key, tenantId: tenantId as string, scopes: Object.freeze([...(scopes as ApiKeyScope[])]) };
  });
}
