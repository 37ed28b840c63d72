/**
 * Loads the configuration: built-in defaults < `~/.harness/config.toml` <
 * `<workspace>/.harness/config.toml` < environment variables. Validated once, then frozen.
 * @module
 */
import { deepFreeze } from '../core/deep-freeze.js';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { parse as parseToml, TomlError } from 'smol-toml';
import { ConfigError } from '../core/errors.js';
import {
  DEFAULT_OBSERVATION_CONFIG,
  DEFAULT_TOOL_IMPORTANCE_CAP,
  type ObservationConfig,
} from '../core/observation.js';
import { DEFAULT_WORKING_MEMORY_LIMITS } from '../core/working-memory.js';
import { readEnvironment } from './env-variables.js';
import { parseConfigFile } from './parse-config-file.js';
import { validateConfig } from './validate-config.js';
import {
  CONFIG_FILE_KEYS,
  parseApiKeyEntry,
  type ConfigLayer,
  type ForensicsFileSection,
  type HarnessConfig,
  type MemoryFileSection,
  type ModelFileSection,
  type ProviderConfig,
  type ProviderFileEntry,
  type ServerFileSection,
} from './schema.js';

export { describeConfig, type ConfigRow } from './describe-config.js';
export type {
  ForensicsConfig,
  HarnessConfig,
  MemoryConfig,
  MemoryDbDriver,
  MemoryLlmMode,
  MemoryMode,
  ModelConfig,
  OpenAiConfig,
  ProviderConfig,
  ServerApiKey,
  ServerConfig,
} from './schema.js';

/** Options of {@link loadConfig}. Nothing else is read from the process. */
export interface LoadConfigOptions {
  /** The workspace directory; relative paths are resolved against `cwd`. @default env.HARNESS_WORKSPACE ?? cwd */
  workspace?: string;
  /** @default process.cwd() */
  cwd?: string;
  /** The directory holding `.harness/config.toml` for the user. @default os.homedir() */
  homeDir?: string;
  /** The environment variables. @default process.env */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * Told about what is ignored but probably meant: an unknown `HARNESS_*` variable.
   * @default a process warning with the code `HARNESS_CONFIG`
   */
  onWarning?: (message: string) => void;
}

/** Where a config file lives, relative to the home directory or the workspace. */
export const CONFIG_FILE_PATH = '.harness/config.toml';

interface Settings {
  memory: Required<Omit<MemoryFileSection, 'llm_mode'>> & Pick<MemoryFileSection, 'llm_mode'> & { llm_api_key: string };
  forensics: Required<ForensicsFileSection>;
  model: Required<ModelFileSection>;
  server: Required<ServerFileSection>;
  openai: { api_key: string; base_url: string };
  providers: Map<string, ProviderFileEntry>;
}

/** Every key that has a default, by section; providers have none. */
const DEFAULT_KEYS: Readonly<Record<string, readonly string[]>> = {
  memory: [...CONFIG_FILE_KEYS.memory, 'llm_api_key'],
  forensics: CONFIG_FILE_KEYS.forensics,
  model: CONFIG_FILE_KEYS.model,
  server: CONFIG_FILE_KEYS.server,
  openai: ['api_key', 'base_url'],
};

function defaultSettings(): Settings {
  return {
    memory: {
      enabled: true,
      mode: 'auto',
      db_driver: 'sqlite',
      db_dsn: '',
      sqlite_path: '.harness/state.db',
      schema: '',
      default_enabled: false,
      observe_min_tokens: DEFAULT_OBSERVATION_CONFIG.observeMinTokens,
      snippet_max_tokens: DEFAULT_OBSERVATION_CONFIG.snippetMaxTokens,
      reflect_threshold_tokens: DEFAULT_OBSERVATION_CONFIG.reflectThresholdTokens,
      stale_operation_seconds: 300,
      max_operation_attempts: 5,
      redact_secrets: true,
      tool_importance_cap: DEFAULT_TOOL_IMPORTANCE_CAP,
      llm_provider: '',
      llm_model: '',
      llm_base_url: '',
      llm_api_key: '',
      working_memory_max_value_bytes: DEFAULT_WORKING_MEMORY_LIMITS.maxValueBytes,
      working_memory_max_entries: DEFAULT_WORKING_MEMORY_LIMITS.maxEntries,
      working_memory_max_total_bytes: DEFAULT_WORKING_MEMORY_LIMITS.maxTotalBytes,
      working_memory_default_ttl_seconds: 0,
      operation_retention_days: 0,
      sqlite_wal_alert_mb: 256,
    },
    forensics: { capture_request_envelope: false, snapshot_memory_snippet: false },
    model: { name: '', provider: 'openai', base_url: '' },
    server: {
      host: '127.0.0.1',
      port: 8080,
      api_keys: [],
      redact_transcripts: true,
      max_concurrent_runs: 16,
      max_sse_connections: 32,
      max_writes_per_second: 50,
      max_reads_per_second: 200,
      run_retention_days: 0,
      allowed_models: [],
    },
    openai: { api_key: '', base_url: '' },
    providers: new Map(),
  };
}

/**
 * Loads, validates and deep-freezes the configuration. A missing file is skipped; anything
 * malformed (TOML syntax, unknown key, bad value) throws a {@link ConfigError} naming the file
 * or variable and the key. An unknown `HARNESS_*` variable is only a warning (`onWarning`).
 * @example
 * ```ts
 * import { loadConfig } from 'harness-memory/config';
 *
 * const config = loadConfig({ workspace: '/srv/project' });
 * // 1200 unless a file or HARNESS_MEMORY_OBSERVE_MIN_TOKENS says otherwise:
 * console.log(config.memory.observeMinTokens);
 * ```
 */
export function loadConfig(options: LoadConfigOptions = {}): HarnessConfig {
  const env = options.env ?? process.env;
  const { workspace, workspaceSource } = resolveWorkspace(options, env);
  const homeFile = resolve(options.homeDir ?? homedir(), CONFIG_FILE_PATH);
  const workspaceFile = resolve(workspace, CONFIG_FILE_PATH);
  const files = homeFile === workspaceFile ? [homeFile] : [homeFile, workspaceFile];
  const layers = [...files.flatMap(readFileLayer), ...readEnvironment(env, options.onWarning ?? warnProcess)];

  const settings = defaultSettings();
  const sources: Record<string, string> = { workspace: workspaceSource };
  for (const [section, keys] of Object.entries(DEFAULT_KEYS)) {
    for (const key of keys) sources[`${section}.${key}`] = 'default';
  }
  for (const layer of layers) applyLayer(settings, layer, sources);
  applyMemoryEnabled(settings, sources);

  const config = toConfig(settings, workspace, sources);
  validateConfig(config);
  return deepFreeze(config);
}

function warnProcess(message: string): void {
  process.emitWarning(message, { code: 'HARNESS_CONFIG' });
}

function resolveWorkspace(
  options: LoadConfigOptions,
  env: Readonly<Record<string, string | undefined>>,
): { workspace: string; workspaceSource: string } {
  const cwd = options.cwd ?? process.cwd();
  const fromEnv = env['HARNESS_WORKSPACE']?.trim() || undefined;
  if (options.workspace !== undefined)
    return { workspace: resolve(cwd, options.workspace), workspaceSource: 'options.workspace' };
  if (fromEnv !== undefined) return { workspace: resolve(cwd, fromEnv), workspaceSource: 'env:HARNESS_WORKSPACE' };
  return { workspace: resolve(cwd), workspaceSource: options.cwd === undefined ? 'process.cwd()' : 'options.cwd' };
}

function readFileLayer(path: string): ConfigLayer[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    throw new ConfigError({
      key: '(file)',
      source: path,
      message: `cannot be read (${code ?? String(error)})`,
      cause: error,
    });
  }
  let data: unknown;
  try {
    data = parseToml(text);
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    // NOTE: only the first line of smol-toml's message, and not the TomlError itself as the cause:
    // its code block shows the lines around the error, a DSN password or server keys among them.
    const reason = (error.message.split('\n')[0] ?? '').replace(/^Invalid TOML document: /, '');
    throw new ConfigError({
      key: '(syntax)',
      source: path,
      message:
        `is not valid TOML at line ${error.line}, column ${error.column}: ${reason}. Fix the syntax ` +
        `or remove the file.`,
      cause: { line: error.line, column: error.column, reason },
    });
  }
  return [{ source: path, values: parseConfigFile(data, path) }];
}

function applyLayer(settings: Settings, layer: ConfigLayer, sources: Record<string, string>): void {
  const { values, source } = layer;
  assign(settings.memory, values.memory, 'memory', source, sources);
  assign(settings.forensics, values.forensics, 'forensics', source, sources);
  assign(settings.model, values.model, 'model', source, sources);
  assign(settings.server, values.server, 'server', source, sources);
  assign(settings.openai, values.openai, 'openai', source, sources);
  for (const [name, entry] of Object.entries(values.providers ?? {})) {
    const target = settings.providers.get(name) ?? {};
    settings.providers.set(name, target);
    assign(target, entry, `providers.${name}`, source, sources);
  }
}

/** `enabled = false` is `mode = "off"`; an explicit `local_coordinator` contradicts it. */
function applyMemoryEnabled(settings: Settings, sources: Record<string, string>): void {
  if (settings.memory.enabled) return;
  const enabledSource = sources['memory.enabled'] ?? 'default';
  if (settings.memory.mode === 'local_coordinator') {
    throw new ConfigError({
      key: 'memory.enabled',
      source: enabledSource,
      message:
        `is false, which turns memory off, but memory.mode is "local_coordinator" ` +
        `(${sources['memory.mode'] ?? 'default'}); remove one of them`,
    });
  }
  if (settings.memory.mode === 'off') return;
  settings.memory.mode = 'off';
  sources['memory.mode'] = enabledSource;
}

function assign<T extends object>(
  target: T,
  patch: Partial<T> | undefined,
  prefix: string,
  source: string,
  sources: Record<string, string>,
): void {
  for (const [key, value] of Object.entries(patch ?? {})) {
    if (value === undefined) continue;
    (target as Record<string, unknown>)[key] = value;
    sources[`${prefix}.${key}`] = source;
  }
}

function toConfig(settings: Settings, workspace: string, sources: Record<string, string>): HarnessConfig {
  const { memory, forensics, model, server, openai } = settings;
  return {
    workspace,
    memory: {
      enabled: memory.enabled,
      mode: memory.mode,
      dbDriver: memory.db_driver,
      dbDsn: memory.db_dsn.trim(),
      sqlitePath: memory.sqlite_path === ':memory:' ? ':memory:' : resolve(workspace, memory.sqlite_path),
      schema: memory.schema,
      defaultEnabled: memory.default_enabled,
      // 0 is the default, as in the reference.
      observeMinTokens: memory.observe_min_tokens || DEFAULT_OBSERVATION_CONFIG.observeMinTokens,
      snippetMaxTokens: memory.snippet_max_tokens || DEFAULT_OBSERVATION_CONFIG.snippetMaxTokens,
      reflectThresholdTokens: memory.reflect_threshold_tokens || DEFAULT_OBSERVATION_CONFIG.reflectThresholdTokens,
      staleOperationSeconds: memory.stale_operation_seconds,
      maxOperationAttempts: memory.max_operation_attempts,
      redactSecrets: memory.redact_secrets,
      toolImportanceCap: memory.tool_importance_cap,
      llmMode: memory.llm_mode,
      llmProvider: memory.llm_provider,
      llmModel: memory.llm_model,
      llmBaseUrl: memory.llm_base_url,
      llmApiKey: memory.llm_api_key,
      workingMemoryMaxValueBytes: memory.working_memory_max_value_bytes,
      workingMemoryMaxEntries: memory.working_memory_max_entries,
      workingMemoryMaxTotalBytes: memory.working_memory_max_total_bytes,
      workingMemoryDefaultTtlSeconds: memory.working_memory_default_ttl_seconds,
      operationRetentionDays: memory.operation_retention_days,
      sqliteWalAlertMb: memory.sqlite_wal_alert_mb,
    },
    forensics: {
      captureRequestEnvelope: forensics.capture_request_envelope,
      snapshotMemorySnippet: forensics.snapshot_memory_snippet,
    },
    model: { name: model.name, provider: model.provider, baseUrl: model.base_url },
    server: {
      host: server.host,
      port: server.port,
      // Entries were validated per layer, so none is dropped here.
      apiKeys: server.api_keys.flatMap((entry) => parseApiKeyEntry(entry) ?? []),
      redactTranscripts: server.redact_transcripts,
      maxConcurrentRuns: server.max_concurrent_runs,
      maxSseConnections: server.max_sse_connections,
      maxWritesPerSecond: server.max_writes_per_second,
      maxReadsPerSecond: server.max_reads_per_second,
      runRetentionDays: server.run_retention_days,
      allowedModels: [...new Set(server.allowed_models)],
    },
    providers: Object.fromEntries(
      [...settings.providers].map(([name, entry]) => [name, toProvider(name, entry, sources)]),
    ),
    openai: { apiKey: openai.api_key, baseUrl: openai.base_url },
    sources,
  };
}

function toProvider(name: string, entry: ProviderFileEntry, sources: Record<string, string>): ProviderConfig {
  if (entry.base_url === undefined) {
    const source = Object.entries(sources).find(([key]) => key.startsWith(`providers.${name}.`))?.[1] ?? 'default';
    throw new ConfigError({
      key: `providers.${name}.base_url`,
      source,
      message: 'is required for every [providers.NAME] table',
    });
  }
  return {
    baseUrl: entry.base_url,
    ...(entry.api_key_env === undefined ? {} : { apiKeyEnv: entry.api_key_env }),
    ...(entry.model === undefined ? {} : { model: entry.model }),
  };
}

/** The observation thresholds of a loaded config, as the core expects them. */
export function tokenConfigFrom(config: HarnessConfig): ObservationConfig {
  const { observeMinTokens, snippetMaxTokens, reflectThresholdTokens } = config.memory;
  return Object.freeze({ observeMinTokens, snippetMaxTokens, reflectThresholdTokens });
}
