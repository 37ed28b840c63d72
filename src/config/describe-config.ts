/**
 * A printable view of a loaded configuration, with secrets masked.
 * @module
 */
import { maskPasswords, maskSecret, maskUrlPassword } from '../core/mask-passwords.js';
import type { HarnessConfig } from './schema.js';

/** One line of {@link describeConfig}: a dotted key, its display value (secrets masked) and its source. */
export interface ConfigRow {
  key: string;
  value: string;
  source: string;
}

/**
 * A setting's value as data (`harness config --json`): strings, numbers, booleans and lists as
 * the configuration holds them, `null` for one that is unset, secrets masked as in
 * {@link ConfigRow}. `server.api_keys` is a list of `key:tenant [scopes]` entries, each key masked.
 */
export type ConfigValue = string | number | boolean | null | readonly string[];

/** One line of {@link describeConfigValues}: a dotted key, its value as data (secrets masked) and its source. */
export interface ConfigValueRow {
  key: string;
  value: ConfigValue;
  source: string;
}

/**
 * Every effective setting as `{ key, value, source }`, for `harness config` and startup logs.
 * API keys, server keys and the password of a DSN or a base URL show as `****` plus their last 4
 * characters. A mode that `memory.enabled = false` turned off says so, and a workspace that is the
 * current directory says that rather than which option gave it.
 * @example
 * for (const row of describeConfig(loadConfig())) console.log(`${row.key} = ${row.value}  (${row.source})`);
 */
export function describeConfig(config: HarnessConfig): ConfigRow[] {
  return Object.entries(config.sources).map(([key, source]) => ({
    key,
    value: displayValue(config, key),
    source: displaySource(key, source),
  }));
}

/**
 * The rows of {@link describeConfig} with each value as data rather than text: `1200` and
 * `false`, not `"1200"` and `"false"`; `""` for an empty string and `null` for an unset value
 * (where the text shows `""` and `(unset)`); the effective mode without the text's note
 * (`off` when `memory.enabled = false` turned it off: that row says so). The same keys,
 * sources and masking.
 * @example
 * const port = describeConfigValues(loadConfig()).find((row) => row.key === 'server.port')?.value; // 8080
 */
export function describeConfigValues(config: HarnessConfig): ConfigValueRow[] {
  return Object.entries(config.sources).map(([key, source]) => ({
    key,
    value: valueOf(config, key),
    source: displaySource(key, source),
  }));
}

/** The workspace's source for people: `options.cwd` and `process.cwd()` are the same folder to them. */
function displaySource(key: string, source: string): string {
  if (key !== 'workspace') return source;
  return source === 'options.cwd' || source === 'process.cwd()' ? 'current directory' : source;
}

function displayValue(config: HarnessConfig, key: string): string {
  const value = valueOf(config, key);
  if (key === 'memory.mode' && !config.memory.enabled) return `${String(value)} (memory.enabled = false)`;
  if (key === 'server.api_keys' && Array.isArray(value)) return value.join(', ') || '(none)';
  if (value === null) return '(unset)';
  if (value === '') return '""';
  return String(value);
}

function valueOf(config: HarnessConfig, key: string): ConfigValue {
  switch (key) {
    case 'memory.llm_api_key':
      return secretValue(config.memory.llmApiKey);
    case 'openai.api_key':
      return secretValue(config.openai.apiKey);
    case 'memory.db_dsn':
      return config.memory.dbDsn === '' ? '' : maskUrlPassword(config.memory.dbDsn);
    case 'server.api_keys':
      return config.server.apiKeys.map(
        (entry) => `${maskSecret(entry.key)}:${[entry.tenantId, ...(entry.scopes ?? [])].join(' ')}`,
      );
  }
  const value = settingValue(config, key);
  return typeof value === 'string' && key.endsWith('base_url') ? maskPasswords(value) : value;
}

function secretValue(secret: string): string | null {
  return secret === '' ? null : maskSecret(secret);
}

function settingValue(config: HarnessConfig, key: string): ConfigValue {
  const segments = key.split('.');
  let value: unknown = config;
  for (const [index, segment] of segments.entries()) {
    // Sections and provider names are written as they are; setting names become camelCase.
    const verbatim = index === 0 || (segments[0] === 'providers' && index === 1);
    value = (value as Record<string, unknown> | undefined)?.[verbatim ? segment : camelCase(segment)];
  }
  if (value === undefined || value === null) return null;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  if (Array.isArray(value)) return value.map(String);
  return String(value);
}

function camelCase(snake: string): string {
  return snake.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
}
