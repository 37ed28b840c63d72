/**
 * A printable view of a loaded configuration, with secrets masked.
 * @module
 */
import { maskPasswords, maskSecret } from '../core/mask-passwords.js';
import type { HarnessConfig } from './schema.js';

/** One line of {@link describeConfig}: a dotted key, its display value (secrets masked) and its source. */
export interface ConfigRow {
  key: string;
  value: string;
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
    source: key === 'workspace' ? displaySource(source) : source,
  }));
}

/** The workspace's source for people: `options.cwd` and `process.cwd()` are the same folder to them. */
function displaySource(source: string): string {
  return source === 'options.cwd' || source === 'process.cwd()' ? 'current directory' : source;
}

function displayValue(config: HarnessConfig, key: string): string {
  switch (key) {
    case 'memory.llm_api_key':
      return maskSecret(config.memory.llmApiKey);
    case 'openai.api_key':
      return maskSecret(config.openai.apiKey);
    case 'memory.db_dsn':
      return config.memory.dbDsn === '' ? '""' : maskPasswords(config.memory.dbDsn);
    case 'server.api_keys':
      return (
        config.server.apiKeys
          .map((entry) => `${maskSecret(entry.key)}:${[entry.tenantId, ...(entry.scopes ?? [])].join(' ')}`)
          .join(', ') || '(none)'
      );
    case 'memory.mode':
      return config.memory.enabled ? config.memory.mode : `${config.memory.mode} (memory.enabled = false)`;
  }
  if (key.endsWith('base_url')) return maskPasswords(plainValue(config, key));
  return plainValue(config, key);
}

function plainValue(config: HarnessConfig, key: string): string {
  const segments = key.split('.');
  let value: unknown = config;
  for (const [index, segment] of segments.entries()) {
    // Sections and provider names are written as they are; setting names become camelCase.
    const verbatim = index === 0 || (segments[0] === 'providers' && index === 1);
    value = (value as Record<string, unknown> | undefined)?.[verbatim ? segment : camelCase(segment)];
  }
  if (value === undefined) return '(unset)';
  if (value === '') return '""';
  return String(value);
}

function camelCase(snake: string): string {
  return snake.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
}
