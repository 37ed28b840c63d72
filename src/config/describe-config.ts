/**
 * A printable view of a loaded configuration, with secrets masked.
 * @module
 */
import type { HarnessConfig } from './schema.js';

/** One line of {@link describeConfig}: a dotted key, its display value (secrets masked) and its source. */
export interface ConfigRow {
  key: string;
  value: string;
  source: string;
}

/**
 * Every effective setting as `{ key, value, source }`, for `harness config` and startup logs.
 * API keys, server keys and a DSN password show as `****` plus their last 4 characters.
 * @example
 * for (const row of describeConfig(loadConfig())) console.log(`${row.key} = ${row.value}  (${row.source})`);
 */
export function describeConfig(config: HarnessConfig): ConfigRow[] {
  return Object.entries(config.sources).map(([key, source]) => ({ key, value: displayValue(config, key), source }));
}

function displayValue(config: HarnessConfig, key: string): string {
  switch (key) {
    case 'memory.llm_api_key':
      return maskSecret(config.memory.llmApiKey);
    case 'openai.api_key':
      return maskSecret(config.openai.apiKey);
    case 'memory.db_dsn':
      return maskDsn(config.memory.dbDsn);
    case 'server.api_keys':
      return config.server.apiKeys.map((entry) => `${maskSecret(entry.key)}:${entry.tenantId}`).join(', ') || '(none)';
  }
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

/** `****` plus the last 4 characters; short secrets show no characters at all. */
function maskSecret(secret: string): string {
  if (secret === '') return '(unset)';
  return secret.length >= 12 ? `****${secret.slice(-4)}` : '****';
}

/** Masks the password of a URL DSN (`postgres://user:pw@host`) or a keyword DSN (`password=pw`). */
function maskDsn(dsn: string): string {
  if (dsn === '') return '""';
  return dsn
    .replace(
      /^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:)([^/]*)@/i,
      (_, head: string, password: string) => `${head}${maskSecret(password)}@`,
    )
    .replace(
      /(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)/gi,
      (_, head: string, password: string) => `${head}${maskSecret(password.replace(/^'|'$/g, ''))}`,
    );
}
