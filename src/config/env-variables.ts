/**
 * The environment variables of the config cascade, and how their strings become settings.
 * @module
 */
import { ConfigError } from '../core/errors.js';
import { parseConfigFile } from './parse-config-file.js';
import type { ConfigLayer, ConfigLayerValues } from './schema.js';

/** How a variable's string is read before validation. `secret` values are env-only and taken as they are. */
type EnvKind = 'string' | 'boolean' | 'integer' | 'number' | 'list' | 'secret';

/** One environment variable and the dotted key it sets. */
export interface EnvVariable {
  readonly name: string;
  /** Dotted snake_case key, like `memory.observe_min_tokens`. */
  readonly key: string;
  readonly kind: EnvKind;
}

/** Prefix of the memory settings' variables. */
export const MEMORY_ENV_PREFIX = 'HARNESS_MEMORY_';

/** Prefix of every variable the harness reads; an unknown one is warned about, naming the nearest known one. */
export const ENV_PREFIX = 'HARNESS_';

/** Variables with the prefix that are read outside the config cascade, or reserved for our own tests. */
const OTHER_NAMES = new Set(['HARNESS_WORKSPACE']);
const RESERVED_PREFIX = 'HARNESS_TEST_';

const memory = (key: string, kind: EnvKind): EnvVariable => ({
  name: `${MEMORY_ENV_PREFIX}${key.toUpperCase()}`,
  key: `memory.${key}`,
  kind,
});

/** Every variable the loader reads, besides `HARNESS_WORKSPACE`. Each overrides its key in every file. */
export const ENV_VARIABLES: readonly EnvVariable[] = [
  memory('enabled', 'boolean'),
  memory('mode', 'string'),
  memory('db_driver', 'string'),
  memory('db_dsn', 'string'),
  memory('sqlite_path', 'string'),
  memory('schema', 'string'),
  memory('default_enabled', 'boolean'),
  memory('observe_min_tokens', 'integer'),
  memory('snippet_max_tokens', 'integer'),
  memory('reflect_threshold_tokens', 'integer'),
  memory('stale_operation_seconds', 'integer'),
  memory('max_operation_attempts', 'integer'),
  memory('redact_secrets', 'boolean'),
  memory('tool_importance_cap', 'number'),
  memory('llm_mode', 'string'),
  memory('llm_provider', 'string'),
  memory('llm_model', 'string'),
  memory('llm_base_url', 'string'),
  memory('llm_api_key', 'secret'),
  memory('working_memory_max_value_bytes', 'integer'),
  memory('working_memory_max_entries', 'integer'),
  memory('working_memory_max_total_bytes', 'integer'),
  memory('working_memory_default_ttl_seconds', 'integer'),
  memory('operation_retention_days', 'integer'),
  memory('sqlite_wal_alert_mb', 'integer'),
  { name: 'HARNESS_MODEL', key: 'model.name', kind: 'string' },
  { name: 'HARNESS_API_KEYS', key: 'server.api_keys', kind: 'list' },
  { name: 'HARNESS_HOST', key: 'server.host', kind: 'string' },
  { name: 'HARNESS_PORT', key: 'server.port', kind: 'integer' },
  { name: 'HARNESS_REDACT_TRANSCRIPTS', key: 'server.redact_transcripts', kind: 'boolean' },
  { name: 'HARNESS_MAX_CONCURRENT_RUNS', key: 'server.max_concurrent_runs', kind: 'integer' },
  { name: 'HARNESS_MAX_SSE_CONNECTIONS', key: 'server.max_sse_connections', kind: 'integer' },
  { name: 'HARNESS_MAX_WRITES_PER_SECOND', key: 'server.max_writes_per_second', kind: 'integer' },
  { name: 'HARNESS_MAX_READS_PER_SECOND', key: 'server.max_reads_per_second', kind: 'integer' },
  { name: 'HARNESS_RUN_RETENTION_DAYS', key: 'server.run_retention_days', kind: 'integer' },
  { name: 'HARNESS_ALLOWED_MODELS', key: 'server.allowed_models', kind: 'list' },
  { name: 'OPENAI_API_KEY', key: 'openai.api_key', kind: 'secret' },
  { name: 'OPENAI_BASE_URL', key: 'openai.base_url', kind: 'secret' },
];

const KNOWN_NAMES = new Set(ENV_VARIABLES.map((variable) => variable.name));
// Go's ParseBool spellings (`t`, `f`, any case) too, which the reference reads.
const TRUE_WORDS = new Set(['true', '1', 'yes', 'on', 't']);
const FALSE_WORDS = new Set(['false', '0', 'no', 'off', 'f']);

/**
 * Reads `env` into one layer per set variable. An empty (or blank) variable counts as unset.
 * An unknown `HARNESS_*` variable is not an error (a shell may hold one for another tool, or
 * an old name): `warn` gets a message naming it and the nearest known variable.
 */
export function readEnvironment(
  env: Readonly<Record<string, string | undefined>>,
  warn: (message: string) => void = () => {},
): ConfigLayer[] {
  for (const name of Object.keys(env).sort()) {
    if (
      !name.startsWith(ENV_PREFIX) ||
      name.startsWith(RESERVED_PREFIX) ||
      KNOWN_NAMES.has(name) ||
      OTHER_NAMES.has(name) ||
      !isSet(env[name])
    )
      continue;
    warn(`${name} is not a harness variable and is ignored; did you mean ${nearestKnownName(name)}?`);
  }
  const layers: ConfigLayer[] = [];
  for (const variable of ENV_VARIABLES) {
    const raw = env[variable.name];
    if (raw === undefined || !isSet(raw)) continue;
    const source = `env:${variable.name}`;
    layers.push({ source, values: toValues(variable, raw, source) });
  }
  return layers;
}

function isSet(raw: string | undefined): boolean {
  return raw !== undefined && raw.trim() !== '';
}

function toValues(variable: EnvVariable, raw: string, source: string): ConfigLayerValues {
  const [section = '', key = ''] = variable.key.split('.');
  if (variable.kind === 'secret') return { [section]: { [key]: raw.trim() } };
  // NOTE: the value goes through the same schema as the TOML files, so both report errors alike.
  return parseConfigFile({ [section]: { [key]: convert(variable, raw, source) } }, source);
}

function convert(variable: EnvVariable, raw: string, source: string): unknown {
  const value = raw.trim();
  switch (variable.kind) {
    case 'boolean': {
      const word = value.toLowerCase();
      if (TRUE_WORDS.has(word)) return true;
      if (FALSE_WORDS.has(word)) return false;
      throw new ConfigError({
        key: variable.key,
        source,
        message: `must be one of: true, false, 1, 0, yes, no, on, off, t, f (got ${JSON.stringify(value)})`,
      });
    }
    // A string that is not an integer fails the schema's number check, which then names the allowed
    // values and quotes it; so does one too large to be read exactly, as it was given.
    case 'integer':
      return /^[+-]?\d+$/.test(value) && Number.isSafeInteger(Number(value)) ? Number(value) : value;
    // Exponent forms (`1e-1`) too: TOML floats and Go's ParseFloat, which the reference uses, take them.
    case 'number':
      return /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(value) ? Number(value) : value;
    case 'list': {
      const entries = value
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== '');
      // NOTE: an empty list would silently replace the keys of the config files with none.
      if (entries.length === 0) {
        throw new ConfigError({
          key: variable.key,
          source,
          message:
            variable.key === 'server.api_keys'
              ? 'lists no "key:tenant" entry; give at least one, or unset it to use the keys of the config file'
              : 'lists no entry; give at least one, or unset it to use the list of the config file',
        });
      }
      return entries;
    }
    default:
      return value;
  }
}

/** The known variable closest to `name` by edit distance (ties: the first in {@link ENV_VARIABLES}). */
export function nearestKnownName(name: string): string {
  let best = '';
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const known of [...ENV_VARIABLES.map((variable) => variable.name), ...OTHER_NAMES]) {
    const distance = editDistance(name, known);
    if (distance < bestDistance) [best, bestDistance] = [known, distance];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (current[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
