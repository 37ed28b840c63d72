/**
 * What `[providers.NAME] api_key_env` may hold: the name of an environment variable, never
 * the key itself. The value is printed by `harness config` and named in error messages, so a
 * key pasted here would be shown in full.
 * @module
 */
import { redactSecrets } from './redact-secrets.js';

/** Letters, digits and underscores, not starting with a digit: what a shell can export. */
export const ENV_VARIABLE_NAME_PATTERN: RegExp = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Why `value` cannot be an `api_key_env`, or `undefined` when it can. The answer never quotes
 * the value. `""` is accepted: the provider then has no key variable.
 * @example
 * apiKeyEnvProblem('OPENROUTER_API_KEY'); // undefined
 * apiKeyEnvProblem('sk-proj-…'); // 'looks like an API key itself; …'
 */
export function apiKeyEnvProblem(value: string): string | undefined {
  if (value === '') return undefined;
  const isName = ENV_VARIABLE_NAME_PATTERN.test(value);
  if (looksLikeApiKey(value, isName))
    return 'looks like an API key itself; put the key in an environment variable and name that variable here';
  if (!isName) return 'must name an environment variable (letters, digits and underscores, not starting with a digit)';
  return undefined;
}

// NOTE: a variable name may be long and hold digits too (AWS_2023_07_KEY_FOR_PROD); one shaped
// like a name counts as a key when it is also lower case in part and has many digits or no
// underscore, or has a prefix redactSecrets knows.
function looksLikeApiKey(value: string, isName: boolean): boolean {
  if (Object.keys(redactSecrets(value).counts).length > 0) return true;
  if (value.length < 20 || /\s/.test(value)) return false;
  const digits = value.replace(/\D/g, '').length;
  if (!isName) return digits > 0;
  return /[a-z]/.test(value) && (digits >= 4 || (digits > 0 && !value.includes('_')));
}
