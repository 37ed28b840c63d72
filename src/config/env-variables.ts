/**
 * The environment variables of the config cascade, and how their strings become settings.
 * @module
 */
import { ConfigError } from '../core/errors.js';
import { parseConfigFile, type ConfigLayer, type ConfigLayerValues } from './schema.js';

/** How a variable's string is read before validation. `secret` values are env-only and taken as they are. */
type EnvKind = 'string' | 'boolean' | 'integer' | 'number' | 'list' | 'secret';

/** One environment variable and the dotted key it sets. */
export interface EnvVariable {
  readonly name: string;
  /** Dotted snake_case key, like `memory.observe_min_tokens`. */
  readonly key: string;
  readonly kind: EnvKind;
}

/** Prefix reserved for memory settings: an unknown variable with it is an error. */
export const MEMORY_ENV_PREFIX = 'HARNESS_MEMORY_';

const memory = (key: string, kind: EnvKind): EnvVariable => ({
  name: `${MEMORY_ENV_PREFIX}${key.toUpperCase()}`,
  key: `memory.${key}`,
  kind,
});

/** Every variable the loader reads, besides `HARNESS_WORKSPACE`. Each overrides its key in every file. */
export const ENV_VARIABLES: readonly EnvVariable[] = [
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
  { name: 'HARNESS_MODEL', key: 'model.name', kind: 'string' },
  { name: 'HARNESS_API_KEYS', key: 'server.api_keys', kind: 'list' },
  { name: 'HARNESS_HOST', key: 'server.host', kind: 'string' },
  { name: 'HARNESS_PORT', key: 'server.port', kind: 'integer' },
  { name: 'HARNESS_REDACT_TRANSCRIPTS', key: 'server.redact_transcripts', kind: 'boolean' },
  { name: 'HARNESS_MAX_CONCURRENT_RUNS', key: 'server.max_concurrent_runs', kind: 'integer' },
  { name: 'HARNESS_MAX_SSE_CONNECTIONS', key: 'server.max_sse_connections', kind: 'integer' },
  { name: 'HARNESS_MAX_WRITES_PER_SECOND', key: 'server.max_writes_per_second', kind: 'integer' },
  { name: 'OPENAI_API_KEY', key: 'openai.api_key', kind: 'secret' },
  { name: 'OPENAI_BASE_URL', key: 'openai.base_url', kind: 'secret' },
];

const KNOWN_NAMES = new Set(ENV_VARIABLES.map((variable) => variable.name));
const TRUE_WORDS = new Set(['true', '1', 'yes', 'on']);
const FALSE_WORDS = new Set(['false', '0', 'no', 'off']);

/** Reads `env` into one layer per set variable. An empty (or blank) variable counts as unset. */
export function readEnvironment(env: Readonly<Record<string, string | undefined>>): ConfigLayer[] {
  for (const name of Object.keys(env)) {
    if (name.startsWith(MEMORY_ENV_PREFIX) && !KNOWN_NAMES.has(name) && isSet(env[name])) {
      const known = ENV_VARIABLES.filter((variable) => variable.name.startsWith(MEMORY_ENV_PREFIX));
      throw new ConfigError({
        key: `memory.${name.slice(MEMORY_ENV_PREFIX.length).toLowerCase()}`,
        source: `env:${name}`,
        message: `unknown variable; known ${MEMORY_ENV_PREFIX}* variables: ${known.map((variable) => variable.name).join(', ')}`,
      });
    }
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
        message: `must be one of: true, false, 1, 0, yes, no, on, off (got ${JSON.stringify(value)})`,
      });
    }
    // A string that is not an integer fails the schema's number check, which then names the allowed values.
    case 'integer':
      return /^[+-]?\d+$/.test(value) ? Number(value) : value;
    case 'number':
      return /^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(value) ? Number(value) : value;
    case 'list':
      return value
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== '');
    default:
      return value;
  }
}
