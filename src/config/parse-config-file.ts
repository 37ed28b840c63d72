/**
 * Validating one parsed config file (or one environment variable shaped like one) against the
 * schema, and the one error that names its first problem.
 * @module
 */
import type { z } from 'zod/v4';
import { ConfigError } from '../core/errors.js';
import { CONFIG_FILE_KEYS, configFileSchema, type ConfigFile } from './schema.js';

const SECTIONS = Object.keys(CONFIG_FILE_KEYS).join(', ');

/**
 * Validates parsed TOML (or one env variable shaped like it) against {@link configFileSchema}.
 * Throws a {@link ConfigError} naming `source` and the dotted key of the first problem.
 */
export function parseConfigFile(data: unknown, source: string): ConfigFile {
  const result = configFileSchema.safeParse(data, { reportInput: true });
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (issue === undefined) throw new ConfigError({ key: '(file)', source, message: 'is not a valid config' });
  throw configErrorFromIssue(issue, source);
}

function configErrorFromIssue(issue: z.core.$ZodIssue, source: string): ConfigError {
  const path = issue.path.filter((segment): segment is string => typeof segment === 'string');
  const key = path.join('.');
  if (issue.code === 'unrecognized_keys') {
    const unknown = issue.keys[0] ?? '';
    if (path.length === 0) {
      const value = (issue.input as Record<string, unknown> | undefined)?.[unknown];
      return new ConfigError({ key: unknown, source, message: unknownTopLevelMessage(unknown, value) });
    }
    const section = path[0] === 'providers' ? 'providers' : (path[0] as keyof ConfigFile);
    const known = CONFIG_FILE_KEYS[section]?.join(', ') ?? '';
    return new ConfigError({
      key: `${key}.${unknown}`,
      source,
      message: `unknown key in [${key}]; known keys: ${known}${secretHint(unknown)}`,
    });
  }
  const message = issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
  // Secrets and what may be one are never quoted.
  const secret = key === 'server.api_keys' || key === 'memory.db_dsn' || /^providers\.[^.]+\.api_key_env$/.test(key);
  const got = secret ? '' : ` (got ${describeValue(issue.input)})`;
  return new ConfigError({ key, source, message: `${message}${got}` });
}

/** A table at the top level is an unknown section; anything else is a key that may belong in one. */
function unknownTopLevelMessage(name: string, value: unknown): string {
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date))
    return `unknown section [${name}]; known sections: ${SECTIONS}`;
  const section = (Object.keys(CONFIG_FILE_KEYS) as Array<keyof ConfigFile>).find((candidate) =>
    CONFIG_FILE_KEYS[candidate].includes(name),
  );
  if (section === undefined)
    return `unknown key at the top level; no section has it: remove it (known sections: ${SECTIONS})${secretHint(name)}`;
  return `unknown key at the top level; it belongs in [${section === 'providers' ? 'providers.NAME' : section}]`;
}

function secretHint(key: string): string {
  if (!/api_key$|password|secret|token$/.test(key)) return '';
  return (
    '. Secrets are read only from environment variables (HARNESS_MEMORY_LLM_API_KEY, OPENAI_API_KEY, ' +
    'HARNESS_API_KEYS)'
  );
}

function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Date) return 'a date';
  return 'a table';
}
