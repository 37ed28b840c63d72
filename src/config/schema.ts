/**
 * Zod schemas of `.harness/config.toml` and the types of the loaded configuration.
 * The file types are snake_case, as written in TOML; {@link HarnessConfig} is camelCase.
 * @module
 */
import { z } from 'zod/v4';
import { HarnessMemoryError } from '../core/errors.js';
import { validateScopeId } from '../core/scope.js';
import { POSTGRES_SCHEMA_PATTERN, reservedSchemaProblem } from '../core/postgres-schema-name.js';
import { apiKeyProblem, apiKeyScopesProblem } from '../core/api-key.js';
import type { ApiKeyScope } from '../core/api-key.js';
import { apiKeyEnvProblem } from '../core/api-key-env.js';
import {
  MAX_MODEL_ID_LENGTH,
  MAX_OBSERVE_MIN_TOKENS,
  MAX_REFLECT_THRESHOLD_TOKENS,
  MAX_SNIPPET_MAX_TOKENS,
} from '../core/observation.js';
import { MAX_WORKING_MEMORY_TTL_SECONDS } from '../core/working-memory.js';

/** Values of `[memory] mode`. `off` disables memory; `local_coordinator` runs it in-process for one host. */
export type MemoryMode = 'auto' | 'off' | 'local_coordinator';
/** Values of `[memory] db_driver`. */
export type MemoryDbDriver = 'sqlite' | 'postgres';
/** Values of `[memory] llm_mode`. Unset means "infer" (provider, else openai, else inherit). */
export type MemoryLlmMode = 'inherit' | 'openai' | 'provider';

/** Accepted values of `[memory] mode`. */
export const MEMORY_MODES: readonly MemoryMode[] = ['auto', 'off', 'local_coordinator'];
/** Accepted values of `[memory] db_driver`. */
export const MEMORY_DB_DRIVERS: readonly MemoryDbDriver[] = ['sqlite', 'postgres'];
/** Accepted values of `[memory] llm_mode`. */
export const MEMORY_LLM_MODES: readonly MemoryLlmMode[] = ['inherit', 'openai', 'provider'];
/** Pattern of a `[providers.NAME]` name. */
export const PROVIDER_NAME_PATTERN: RegExp = /^[a-z0-9_-]+$/;
/** Pattern of `[memory] schema`, the Postgres store's own (`validateSchemaName`); `""` means `public`. */
export { POSTGRES_SCHEMA_PATTERN };

/** The `[memory]` table of a config file; every key is optional. */
export interface MemoryFileSection {
  /** `false` turns memory off, as `mode = "off"` does. */
  enabled?: boolean;
  mode?: MemoryMode;
  db_driver?: MemoryDbDriver;
  db_dsn?: string;
  sqlite_path?: string;
  schema?: string;
  default_enabled?: boolean;
  observe_min_tokens?: number;
  snippet_max_tokens?: number;
  reflect_threshold_tokens?: number;
  stale_operation_seconds?: number;
  max_operation_attempts?: number;
  redact_secrets?: boolean;
  tool_importance_cap?: number;
  llm_mode?: MemoryLlmMode;
  llm_provider?: string;
  llm_model?: string;
  llm_base_url?: string;
  working_memory_max_value_bytes?: number;
  working_memory_max_entries?: number;
  working_memory_max_total_bytes?: number;
  working_memory_default_ttl_seconds?: number;
  operation_retention_days?: number;
  sqlite_wal_alert_mb?: number;
}

/** The `[forensics]` table of a config file. */
export interface ForensicsFileSection {
  capture_request_envelope?: boolean;
  snapshot_memory_snippet?: boolean;
}

/** The `[model]` table of a config file. */
export interface ModelFileSection {
  name?: string;
  provider?: string;
  base_url?: string;
}

/** The `[server]` table of a config file. */
export interface ServerFileSection {
  host?: string;
  port?: number;
  /** Entries shaped `"key:tenant"`. */
  api_keys?: string[];
  redact_transcripts?: boolean;
  max_concurrent_runs?: number;
  max_sse_connections?: number;
  max_writes_per_second?: number;
  max_reads_per_second?: number;
  run_retention_days?: number;
  allowed_models?: string[];
}

/** One `[providers.NAME]` table. `base_url` is required once all files are merged. */
export interface ProviderFileEntry {
  base_url?: string;
  api_key_env?: string;
  model?: string;
}

/** A whole `.harness/config.toml`, as validated by {@link configFileSchema}. */
export interface ConfigFile {
  memory?: MemoryFileSection;
  forensics?: ForensicsFileSection;
  model?: ModelFileSection;
  server?: ServerFileSection;
  providers?: Record<string, ProviderFileEntry>;
}

const oneOf = (values: readonly string[]): string => `must be one of: ${values.join(', ')}`;
const POSITIVE_INTEGER = 'must be a positive integer';

const text = () => z.string({ error: 'must be a string' });
const flag = () => z.boolean({ error: 'must be true or false' });
// A token setting: 0 means its default, as in the reference (a negative one is an error).
const TOKEN_SETTING = 'must be a positive integer, or 0 for the default';
const tokenSetting = () => z.number({ error: TOKEN_SETTING }).int(TOKEN_SETTING).min(0, TOKEN_SETTING);
// A token setting at most `max`, which its message names.
const boundedTokenSetting = (max: number) => tokenSetting().max(max, `must be at most ${max} (or 0 for the default)`);
const positiveInteger = () => z.number({ error: POSITIVE_INTEGER }).int(POSITIVE_INTEGER).positive(POSITIVE_INTEGER);
const UNIT_INTERVAL = 'must be a number from 0 to 1';
const unitInterval = () => z.number({ error: UNIT_INTERVAL }).min(0, UNIT_INTERVAL).max(1, UNIT_INTERVAL);
const literal = <const T extends string>(values: readonly T[]) =>
  z.enum(values as [T, ...T[]], { error: oneOf(values) });
// The reference reads "" as the default for these (mode auto, llm_mode inferred): a blank one is
// unset, as a blank environment variable is, so a config spelling the defaults out still loads.
const blankAsUnset = <Schema extends z.ZodType>(schema: Schema) =>
  z.preprocess((value) => (typeof value === 'string' && value.trim() === '' ? undefined : value), schema.optional());

/** The longest `[memory] stale_operation_seconds`: the lease, in milliseconds, must fit a Node timer. */
export const MAX_STALE_OPERATION_SECONDS = 2_147_483;
const STALE_SECONDS = `must be a whole number of seconds from 1 to ${MAX_STALE_OPERATION_SECONDS} (about 24 days)`;

const DEFAULT_TTL_SECONDS =
  `must be a whole number of seconds from 1 to ${MAX_WORKING_MEMORY_TTL_SECONDS} (ten years), or 0 for entries ` +
  'that never expire';

const SQLITE_PATH_TILDE =
  'starts with ~, which is not expanded here: give an absolute path, or one relative to the workspace';

/** The longest `[server] run_retention_days` and `[memory] operation_retention_days` (a hundred years). */
export const MAX_RUN_RETENTION_DAYS = 36_500;
const RETENTION_DAYS = `must be a whole number of days from 1 to ${MAX_RUN_RETENTION_DAYS}, or 0 to keep runs for ever`;
const OPERATION_RETENTION_DAYS = `must be a whole number of days from 1 to ${MAX_RUN_RETENTION_DAYS}, or 0 to keep settled operations for ever`;
/** The largest `[memory] sqlite_wal_alert_mb`: a tebibyte. */
const MAX_WAL_ALERT_MB = 1024 * 1024;
const WAL_ALERT_MB = `must be a whole number of MiB from 1 to ${MAX_WAL_ALERT_MB}, or 0 for no alert`;

const PORT = 'must be an integer from 0 to 65535 (0: a free port the system picks)';

const API_KEY_ENTRY = 'must look like "key:tenant" or "key:tenant scope …", with neither part empty';

/** Entries `"key:tenant"`. Messages name the entry by index so the key itself never lands in a log. */
const apiKeyEntries = () =>
  z
    .array(text(), { error: 'must be an array of "key:tenant" or "key:tenant scope …" strings' })
    .superRefine((entries, context) => {
      const seen = new Set<string>();
      entries.forEach((entry, index) => {
        const parsed = parseApiKeyEntry(entry);
        const tenantProblem = parsed === undefined ? undefined : tenantIdProblem(parsed.tenantId);
        const keyProblem = parsed === undefined ? undefined : apiKeyProblem(parsed.key);
        if (parsed === undefined) {
          context.addIssue({ code: 'custom', path: [index], message: `entry ${index + 1} ${API_KEY_ENTRY}` });
        } else if (keyProblem !== undefined) {
          context.addIssue({ code: 'custom', path: [index], message: `entry ${index + 1}: the key ${keyProblem}` });
        } else if (parsed.scopes !== undefined && apiKeyScopesProblem(parsed.scopes) !== undefined) {
          context.addIssue({
            code: 'custom',
            path: [index],
            message: `entry ${index + 1} ${apiKeyScopesProblem(parsed.scopes) ?? ''}`,
          });
        } else if (tenantProblem !== undefined) {
          context.addIssue({
            code: 'custom',
            path: [index],
            message: `entry ${index + 1} has an invalid tenant id: ${tenantProblem}`,
          });
        } else if (seen.has(parsed.key)) {
          context.addIssue({ code: 'custom', path: [index], message: `entry ${index + 1} repeats an earlier key` });
        } else {
          seen.add(parsed.key);
        }
      });
    });

/** Why `tenantId` is not a valid scope id, or `undefined` when it is. */
function tenantIdProblem(tenantId: string): string | undefined {
  try {
    validateScopeId('tenant_id', tenantId);
    return undefined;
  } catch (error) {
    if (!HarnessMemoryError.isInstance(error)) throw error;
    return error.detail.replace(/\.$/, '');
  }
}

const SCHEMA_NAME =
  `must match ${POSTGRES_SCHEMA_PATTERN.source} (lower-case letters, digits and underscores, at most 63), ` +
  'or be "" for "public"';

const memoryShape = {
  enabled: flag(),
  mode: blankAsUnset(text().trim().toLowerCase().pipe(literal(MEMORY_MODES))),
  db_driver: blankAsUnset(literal(MEMORY_DB_DRIVERS)),
  db_dsn: text(),
  sqlite_path: text()
    .refine((path) => path.trim() !== '', 'must not be empty or blank')
    .refine((path) => !path.startsWith('~'), SQLITE_PATH_TILDE),
  schema: text()
    .refine((name) => name === '' || POSTGRES_SCHEMA_PATTERN.test(name), SCHEMA_NAME)
    .superRefine((name, context) => {
      const problem = reservedSchemaProblem(name);
      if (problem !== undefined) context.addIssue({ code: 'custom', message: problem });
    }),
  default_enabled: flag(),
  observe_min_tokens: boundedTokenSetting(MAX_OBSERVE_MIN_TOKENS),
  snippet_max_tokens: boundedTokenSetting(MAX_SNIPPET_MAX_TOKENS),
  reflect_threshold_tokens: boundedTokenSetting(MAX_REFLECT_THRESHOLD_TOKENS),
  stale_operation_seconds: z
    .number({ error: STALE_SECONDS })
    .int(STALE_SECONDS)
    .min(1, STALE_SECONDS)
    .max(MAX_STALE_OPERATION_SECONDS, STALE_SECONDS),
  max_operation_attempts: positiveInteger(),
  redact_secrets: flag(),
  tool_importance_cap: unitInterval(),
  llm_mode: blankAsUnset(literal(MEMORY_LLM_MODES)),
  // Provider names are lower case ([providers.NAME] refuses others), so "OpenRouter" means openrouter.
  llm_provider: text().trim().toLowerCase(),
  llm_model: text(),
  llm_base_url: text(),
  working_memory_max_value_bytes: positiveInteger(),
  working_memory_max_entries: positiveInteger(),
  working_memory_max_total_bytes: positiveInteger(),
  working_memory_default_ttl_seconds: z
    .number({ error: DEFAULT_TTL_SECONDS })
    .int(DEFAULT_TTL_SECONDS)
    .min(0, DEFAULT_TTL_SECONDS)
    .max(MAX_WORKING_MEMORY_TTL_SECONDS, DEFAULT_TTL_SECONDS),
  operation_retention_days: z
    .number({ error: OPERATION_RETENTION_DAYS })
    .int(OPERATION_RETENTION_DAYS)
    .min(0, OPERATION_RETENTION_DAYS)
    .max(MAX_RUN_RETENTION_DAYS, OPERATION_RETENTION_DAYS),
  sqlite_wal_alert_mb: z
    .number({ error: WAL_ALERT_MB })
    .int(WAL_ALERT_MB)
    .min(0, WAL_ALERT_MB)
    .max(MAX_WAL_ALERT_MB, WAL_ALERT_MB),
} satisfies Record<keyof MemoryFileSection, z.ZodType>;

const forensicsShape = {
  capture_request_envelope: flag(),
  snapshot_memory_snippet: flag(),
} satisfies Record<keyof ForensicsFileSection, z.ZodType>;

const modelShape = {
  name: text(),
  provider: text().trim().toLowerCase().min(1, 'must not be empty or blank'),
  base_url: text(),
} satisfies Record<keyof ModelFileSection, z.ZodType>;

const serverShape = {
  host: text().trim().min(1, 'must not be blank: an empty host listens on every interface'),
  // 0: a free port the system picks, as `--port 0`.
  port: z.number({ error: PORT }).int(PORT).min(0, PORT).max(65535, PORT),
  api_keys: apiKeyEntries(),
  redact_transcripts: flag(),
  max_concurrent_runs: positiveInteger(),
  max_sse_connections: positiveInteger(),
  max_writes_per_second: positiveInteger(),
  max_reads_per_second: positiveInteger(),
  run_retention_days: z
    .number({ error: RETENTION_DAYS })
    .int(RETENTION_DAYS)
    .min(0, RETENTION_DAYS)
    .max(MAX_RUN_RETENTION_DAYS, RETENTION_DAYS),
  allowed_models: z
    .array(
      text()
        .trim()
        .min(1, 'must not hold an empty model id')
        .max(MAX_MODEL_ID_LENGTH, `must hold model ids of at most ${MAX_MODEL_ID_LENGTH} characters`),
      { error: 'must be a list of model ids' },
    )
    .max(1000, 'must list at most 1000 model ids'),
} satisfies Record<keyof ServerFileSection, z.ZodType>;

const providerShape = {
  base_url: text().min(1, 'must not be empty'),
  api_key_env: text().superRefine((name, context) => {
    const problem = apiKeyEnvProblem(name);
    if (problem !== undefined) context.addIssue({ code: 'custom', message: problem });
  }),
  model: text(),
} satisfies Record<keyof ProviderFileEntry, z.ZodType>;

const table = () => ({ error: 'must be a table' });

// A record skips a `__proto__` key (assigning it would set the prototype), so the table would vanish unseen.
function refuseProtoProvider(value: unknown, context: z.RefinementCtx): unknown {
  if (typeof value === 'object' && value !== null && Object.hasOwn(value, '__proto__'))
    context.addIssue({
      code: 'custom',
      path: ['__proto__'],
      message: 'is a name JavaScript reserves, so the table would be ignored: choose another provider name',
      input: value,
    });
  return value;
}

/** Validates one parsed config file. Objects are strict: an unknown section or key is an error. */
export const configFileSchema: z.ZodType<ConfigFile> = z.strictObject(
  {
    memory: z.strictObject(memoryShape, table()).partial().optional(),
    forensics: z.strictObject(forensicsShape, table()).partial().optional(),
    // The reference's configuration names the model at the top level (`model = "gpt-4.1-mini"`).
    model: z
      .preprocess(
        (value) => (typeof value === 'string' ? { name: value } : value),
        z.strictObject(modelShape, { error: 'must be a model name or a table' }).partial(),
      )
      .optional(),
    server: z.strictObject(serverShape, table()).partial().optional(),
    providers: z
      .preprocess(
        refuseProtoProvider,
        z.record(
          text().regex(PROVIDER_NAME_PATTERN, 'provider names may contain only a-z, 0-9, "_" and "-"'),
          z.strictObject(providerShape, table()).partial(),
          table(),
        ),
      )
      .optional(),
  },
  table(),
);

/** The known keys of every config-file table, for error messages. */
export const CONFIG_FILE_KEYS: Readonly<Record<keyof ConfigFile, readonly string[]>> = Object.freeze({
  memory: Object.keys(memoryShape),
  forensics: Object.keys(forensicsShape),
  model: Object.keys(modelShape),
  server: Object.keys(serverShape),
  providers: Object.keys(providerShape),
});

/**
 * Splits `"key:tenant"` at the first colon (a key holds none, a tenant id may), and
 * `"key:tenant scope scope"` at the spaces after the tenant (the key's scopes, unchecked
 * here); `undefined` when the key or the tenant is missing or empty.
 */
export function parseApiKeyEntry(entry: string): ServerApiKey | undefined {
  const colon = entry.indexOf(':');
  if (colon < 0) return undefined;
  const key = entry.slice(0, colon).trim();
  const [tenantId = '', ...scopes] = entry
    .slice(colon + 1)
    .trim()
    .split(/\s+/u);
  if (key === '' || tenantId === '') return undefined;
  return scopes.length === 0 ? { key, tenantId } : { key, tenantId, scopes: scopes as ApiKeyScope[] };
}

/** Settings of observational and working memory (`[memory]`). */
export interface MemoryConfig {
  /**
   * `false` turns memory off: {@link MemoryConfig.mode} is then `"off"`, and an explicit
   * `mode = "local_coordinator"` is a configuration error. @default true
   */
  readonly enabled: boolean;
  /** `"off"` whenever `enabled` is false. @default "auto" */
  readonly mode: MemoryMode;
  /** @default "sqlite" */
  readonly dbDriver: MemoryDbDriver;
  /** Postgres connection string. @default "" */
  readonly dbDsn: string;
  /**
   * Absolute path of the SQLite file (relative settings are resolved against the workspace). @default
   * "<workspace>/.harness/state.db"
   */
  readonly sqlitePath: string;
  /** Postgres schema. @default "" */
  readonly schema: string;
  /** Whether memory is on for a scope seen for the first time. @default false */
  readonly defaultEnabled: boolean;
  /** @default 1200 */
  readonly observeMinTokens: number;
  /** @default 900 */
  readonly snippetMaxTokens: number;
  /** @default 4000 */
  readonly reflectThresholdTokens: number;
  /** Age after which a running observe or reflect operation counts as abandoned. @default 300 */
  readonly staleOperationSeconds: number;
  /**
   * Attempts a memory operation gets (retryable failures and crashes alike) before it is parked as `dead`.
   * @default 5
   */
  readonly maxOperationAttempts: number;
  /** @default true */
  readonly redactSecrets: boolean;
  /** Highest importance of an observation made only from tool output, in [0, 1]. @default 0.6 */
  readonly toolImportanceCap: number;
  /** `undefined` means "infer". @default undefined */
  readonly llmMode: MemoryLlmMode | undefined;
  /** @default "" */
  readonly llmProvider: string;
  /** @default "" */
  readonly llmModel: string;
  /** Falls back to `OPENAI_BASE_URL` where the model is built. @default "" */
  readonly llmBaseUrl: string;
  /** From `HARNESS_MEMORY_LLM_API_KEY` only; falls back to `OPENAI_API_KEY` where the model is built. @default "" */
  readonly llmApiKey: string;
  /** @default 8192 */
  readonly workingMemoryMaxValueBytes: number;
  /** @default 100 */
  readonly workingMemoryMaxEntries: number;
  /** @default 32768 */
  readonly workingMemoryMaxTotalBytes: number;
  /** Seconds a working-memory entry set without its own time to live lives; 0: for ever. @default 0 */
  readonly workingMemoryDefaultTtlSeconds: number;
  /**
   * Days a settled operation (applied or failed) and its markers are kept after it was last
   * written; the server's sweep deletes older ones, keeping queued, processing and dead
   * operations and each scope's newest. 0 keeps them for ever. @default 0
   */
  readonly operationRetentionDays: number;
  /**
   * MiB of the SQLite write-ahead log (`<sqlite_path>-wal`) above which the server logs a
   * fault and `/healthz` carries a `warning` (the log grows without bound while another
   * connection keeps an old read open); 0: no alert. @default 256
   */
  readonly sqliteWalAlertMb: number;
}

/** Debug captures (`[forensics]`). */
export interface ForensicsConfig {
  /** @default false */
  readonly captureRequestEnvelope: boolean;
  /** @default false */
  readonly snapshotMemorySnippet: boolean;
}

/** The agent's model (`[model]`). */
export interface ModelConfig {
  /** Model id; empty means the agent's built-in default. Overridden by `HARNESS_MODEL`. @default "" */
  readonly name: string;
  /** @default "openai" */
  readonly provider: string;
  /** @default "" */
  readonly baseUrl: string;
}

/** One API key of the HTTP server, the tenant it authenticates and what it may do. */
export interface ServerApiKey {
  readonly key: string;
  readonly tenantId: string;
  /** What the key may do; absent, everything. */
  readonly scopes?: readonly ApiKeyScope[];
}

/** The HTTP server (`[server]`). */
export interface ServerConfig {
  /** @default "127.0.0.1" */
  readonly host: string;
  /** @default 8080 */
  readonly port: number;
  /** Empty means authentication is off. @default [] */
  readonly apiKeys: readonly ServerApiKey[];
  /**
   * Redact secrets from run prompts, outputs, errors, conversation messages and event payloads before they are
   * stored (and so before SSE). @default true
   */
  readonly redactTranscripts: boolean;
  /** Runs queued or running at once, per API key (per tenant without keys), in this process. @default 16 */
  readonly maxConcurrentRuns: number;
  /** Open SSE event streams, per API key (per tenant without keys), in this process. @default 32 */
  readonly maxSseConnections: number;
  /**
   * Write requests (POST, PUT, DELETE) per second, per API key (per tenant without keys); bursts up to one
   * second's worth. @default 50
   */
  readonly maxWritesPerSecond: number;
  /** Read requests (GET) per second, per API key; bursts up to one second's worth. @default 200 */
  readonly maxReadsPerSecond: number;
  /**
   * Days an ended run (completed, failed or cancelled) and its events are kept after it was last
   * written; the server's sweep deletes older ones. Conversation messages are kept. 0 keeps runs
   * for ever. @default 0
   */
  readonly runRetentionDays: number;
  /**
   * The model ids a run may name (`model` of `POST /v1/runs`); empty: any. A run that names
   * none uses the agent's default, which is always allowed. @default []
   */
  readonly allowedModels: readonly string[];
}

/** One user-defined model provider (`[providers.NAME]`). */
export interface ProviderConfig {
  readonly baseUrl: string;
  /** Name of the environment variable holding the provider's API key. */
  readonly apiKeyEnv?: string;
  readonly model?: string;
}

/** `OPENAI_API_KEY` and `OPENAI_BASE_URL`, read once at startup. */
export interface OpenAiConfig {
  /** @default "" */
  readonly apiKey: string;
  /** @default "" */
  readonly baseUrl: string;
}

/** The loaded, validated and deep-frozen configuration. */
export interface HarnessConfig {
  /** Absolute path of the workspace. */
  readonly workspace: string;
  readonly memory: MemoryConfig;
  readonly forensics: ForensicsConfig;
  readonly model: ModelConfig;
  readonly server: ServerConfig;
  readonly providers: Readonly<Record<string, ProviderConfig>>;
  readonly openai: OpenAiConfig;
  /**
   * Where each effective value came from, by dotted snake_case key (`memory.observe_min_tokens`):
   * `"default"`, an absolute file path, or `"env:VAR"`. The `workspace` entry is one of
   * `"options.workspace"`, `"env:HARNESS_WORKSPACE"`, `"options.cwd"` or `"process.cwd()"`.
   */
  readonly sources: Readonly<Record<string, string>>;
}

/** A config file's settings, or one environment variable's, plus the env-only secrets. */
export interface ConfigLayerValues extends ConfigFile {
  memory?: MemoryFileSection & { llm_api_key?: string };
  openai?: { api_key?: string; base_url?: string };
}

/** One level of the cascade: values and where they came from (`"default"`, a file path or `"env:VAR"`). */
export interface ConfigLayer {
  readonly source: string;
  readonly values: ConfigLayerValues;
}
