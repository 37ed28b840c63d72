/**
 * Chooses the memory LLM (observer and reflector) as the spec says, and builds the harness's
 * own agent model. Reference behaviour section 7.
 * @module
 */
import { apiKeyEnvProblem } from '../core/api-key-env.js';
import { requireObject, requireOptions } from '../core/require-option.js';
import { ConfigError } from '../core/errors.js';
import { maskPasswords } from '../core/mask-passwords.js';
import { withCircuitBreaker, type CircuitBreakerModel, type CircuitBreakerOptions } from './circuit-breaker.js';
import type { LanguageModel } from './language-model.js';
import type { ModelSelectionConfig } from './model-selection-config.js';
import {
  createOpenAICompatibleModel,
  DEFAULT_MODEL_TIMEOUT_MS,
  normalizeBaseUrl,
  type OpenAICompatibleSettings,
} from './openai-compatible.js';
import {
  BUILT_IN_PROVIDERS,
  isLoopbackUrl,
  nonBlank,
  resolveProvider,
  type ResolvedProvider,
} from './provider-registry.js';
import { withoutRetries, withRetries, type RetryPolicy } from './retrying-model.js';

/** How the memory model was chosen. */
export type MemoryModelMode = 'inherit' | 'openai' | 'provider';

/** Model of the `openai` memory mode when `llm_model` is unset. */
export const DEFAULT_MEMORY_OPENAI_MODEL = 'gpt-5-nano';
/** The harness's agent model when `HARNESS_MODEL` / `[model] name` is unset. */
export const DEFAULT_AGENT_MODEL = 'gpt-4.1-mini';

/** Input of {@link selectMemoryModel}. */
export interface SelectMemoryModelInput {
  readonly config: ModelSelectionConfig;
  /** Read for provider API keys, and ahead of `config` for the variables it also holds. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The harness's agent model, used by the `inherit` mode. */
  readonly inheritModel?: LanguageModel;
  /** Builds a model from settings. @default createOpenAICompatibleModel */
  readonly createModel?: (settings: OpenAICompatibleSettings) => LanguageModel;
  /** @default DEFAULT_RETRY_POLICY */
  readonly retry?: RetryPolicy;
  /** @default { failureThreshold: 5, resetMs: 30000 } */
  readonly circuitBreaker?: CircuitBreakerOptions;
}

/** The chosen memory model, wrapped in retries and a circuit breaker. */
export interface MemoryModelSelection {
  readonly mode: MemoryModelMode;
  readonly model: CircuitBreakerModel;
  readonly modelId: string;
  /** Why this mode: the setting that decided it and where it came from. */
  readonly source: string;
  /** The server's base URL, unless an inherited model was used as is. */
  readonly baseUrl?: string;
  /**
   * True when the agent model is inherited as it is (no memory model, base URL or key of its
   * own): memory then asks the model each run used (`run --model`), not only the default.
   */
  readonly followsRunModel: boolean;
}

interface Setting {
  readonly value: string;
  readonly source: string;
}

type Env = Readonly<Record<string, string | undefined>>;

/** An env variable wins over the loaded config, as in the cascade; blank counts as unset. */
function read(
  env: Env,
  name: string,
  configValue: string | undefined,
  config: ModelSelectionConfig,
  key: string,
): Setting | undefined {
  const fromEnv = nonBlank(env[name]);
  if (fromEnv !== undefined) return { value: fromEnv, source: `env:${name}` };
  const fromConfig = nonBlank(configValue);
  return fromConfig === undefined ? undefined : { value: fromConfig, source: config.sources[key] ?? 'config' };
}

function memorySettings(config: ModelSelectionConfig, env: Env) {
  const { memory } = config;
  return {
    mode: read(env, 'HARNESS_MEMORY_LLM_MODE', memory.llmMode, config, 'memory.llm_mode'),
    provider: read(env, 'HARNESS_MEMORY_LLM_PROVIDER', memory.llmProvider, config, 'memory.llm_provider'),
    model: read(env, 'HARNESS_MEMORY_LLM_MODEL', memory.llmModel, config, 'memory.llm_model'),
    baseUrl: read(env, 'HARNESS_MEMORY_LLM_BASE_URL', memory.llmBaseUrl, config, 'memory.llm_base_url'),
    apiKey: read(env, 'HARNESS_MEMORY_LLM_API_KEY', memory.llmApiKey, config, 'memory.llm_api_key'),
    openaiKey: read(env, 'OPENAI_API_KEY', config.openai.apiKey, config, 'openai.api_key'),
    openaiBaseUrl: read(env, 'OPENAI_BASE_URL', config.openai.baseUrl, config, 'openai.base_url'),
  };
}

type MemorySettings = ReturnType<typeof memorySettings>;

/**
 * Why `OPENAI_API_KEY` alone must not choose the openai mode, or `undefined` when it may: the
 * key is the agent's only when the agent's requests go to the server it belongs to
 * (`OPENAI_BASE_URL`, else OpenAI's). A key left in the shell must not send a local or other
 * provider's transcripts, or itself, to OpenAI or to a memory server (the reference's weak
 * spot 10.14). A memory base URL (`HARNESS_MEMORY_LLM_BASE_URL`) does not enter into it: it
 * says where memory goes, not whose key this is.
 */
function agentElsewhere(settings: MemorySettings, config: ModelSelectionConfig, env: Env): string | undefined {
  const keyBase = settings.openaiBaseUrl?.value ?? BUILT_IN_PROVIDERS['openai']?.baseUrl ?? '';
  let agentBase: string | undefined;
  try {
    agentBase = agentModelSettings(config, env).baseURL;
    if (normalizeBaseUrl(agentBase) === normalizeBaseUrl(keyBase)) return undefined;
  } catch {
    // An agent model that cannot be built is not known to be at that server.
  }
  const where = agentBase === undefined ? 'unknown' : maskPasswords(agentBase);
  return `the agent's model is at ${where}, not ${maskPasswords(keyBase)}`;
}

function chooseMode(
  settings: MemorySettings,
  config: ModelSelectionConfig,
  env: Env,
): { mode: MemoryModelMode; source: string } {
  const { mode, provider, openaiKey } = settings;
  if (mode !== undefined) {
    if (mode.value !== 'inherit' && mode.value !== 'openai' && mode.value !== 'provider') {
      throw new ConfigError({
        key: 'memory.llm_mode',
        source: mode.source,
        message: `must be one of: inherit, openai, provider (got ${JSON.stringify(mode.value)})`,
      });
    }
    return { mode: mode.value, source: `llm_mode from ${mode.source}` };
  }
  if (provider !== undefined) return { mode: 'provider', source: `inferred: llm_provider is set (${provider.source})` };
  if (openaiKey !== undefined) {
    const elsewhere = agentElsewhere(settings, config, env);
    if (elsewhere === undefined)
      return { mode: 'openai', source: `inferred: OPENAI_API_KEY is set (${openaiKey.source})` };
    return {
      mode: 'inherit',
      source: `inferred: OPENAI_API_KEY is set (${openaiKey.source}), but ${elsewhere}, so memory stays with it`,
    };
  }
  return { mode: 'inherit', source: 'inferred: neither llm_provider nor OPENAI_API_KEY is set' };
}

/**
 * Chooses the memory model: `llm_mode` when set; else `provider` when `llm_provider` is set;
 * else `openai` when `OPENAI_API_KEY` is set and the agent's requests go to the server that
 * key is for (`OPENAI_BASE_URL`, else OpenAI's); else `inherit` (the agent model). The
 * `HARNESS_MEMORY_LLM_MODEL`, `_BASE_URL` and `_API_KEY` settings override in every mode.
 * Missing pieces throw a `ConfigError` naming the setting or variable to set.
 * @example
 * ```ts
 * import { createModelObserver } from 'harness-memory';
 * import { loadConfig } from 'harness-memory/config';
 * import { createAgentModel, selectMemoryModel } from 'harness-memory/llm';
 *
 * const config = loadConfig();
 * const inheritModel = createAgentModel(config, process.env);
 * const { model, mode } = selectMemoryModel({ config, env: process.env, inheritModel });
 * const observer = createModelObserver(model);
 * console.log(mode, observer);
 * ```
 */
export function selectMemoryModel(input: SelectMemoryModelInput): MemoryModelSelection {
  requireOptions('selectMemoryModel', input, 'Pass { config, env }.');
  requireObject(
    'selectMemoryModel',
    'config',
    input.config,
    [],
    'Pass the loaded configuration: loadConfig() from harness-memory/config.',
  );
  const { config, env } = input;
  const createModel = input.createModel ?? createOpenAICompatibleModel;
  const settings = memorySettings(config, env);
  const { mode, source } = chooseMode(settings, input.config, input.env);
  const modeSource = settings.mode?.source ?? 'memory llm selection';
  let base: LanguageModel;
  let baseUrl: string | undefined;
  let followsRunModel = false;

  if (mode === 'openai') {
    const apiKey = settings.apiKey ?? settings.openaiKey;
    if (apiKey === undefined) {
      throw new ConfigError({
        key: 'memory.llm_api_key',
        source: modeSource,
        message: 'the openai memory mode needs an API key: set HARNESS_MEMORY_LLM_API_KEY or OPENAI_API_KEY',
      });
    }
    baseUrl = settings.baseUrl?.value ?? settings.openaiBaseUrl?.value ?? BUILT_IN_PROVIDERS['openai']?.baseUrl ?? '';
    const modelId = settings.model?.value ?? DEFAULT_MEMORY_OPENAI_MODEL;
    base = createModel({
      provider: 'openai',
      baseURL: baseUrl,
      modelId,
      apiKey: apiKey.value,
      timeout: DEFAULT_MODEL_TIMEOUT_MS,
    });
  } else if (mode === 'provider') {
    const chosen = providerSettings(settings, input, modeSource);
    baseUrl = chosen.baseURL;
    base = createModel(chosen);
  } else if (settings.baseUrl !== undefined || settings.apiKey !== undefined) {
    // The agent model cannot be re-pointed from outside, so build its settings with the overrides.
    const chosen = agentModelSettings(config, env, {
      baseUrl: settings.baseUrl?.value,
      apiKey: settings.apiKey?.value,
      modelId: settings.model?.value,
    });
    baseUrl = chosen.baseURL;
    base = createModel(chosen);
  } else {
    if (input.inheritModel === undefined) {
      throw new ConfigError({
        key: 'memory.llm_mode',
        source: modeSource,
        message:
          'the inherit memory mode uses the harness agent model, and none is configured: configure the agent model ' +
          '(HARNESS_MODEL or [model] name, with [model] base_url or OPENAI_BASE_URL, and OPENAI_API_KEY), ' +
          'or choose another mode with [memory] llm_mode / HARNESS_MEMORY_LLM_MODE',
      });
    }
    // Unwrap so the retry layer added below is the only one.
    const inherited = withoutRetries(input.inheritModel);
    base = settings.model === undefined ? inherited : withModelId(inherited, settings.model.value);
    followsRunModel = settings.model === undefined;
  }

  const model = withCircuitBreaker(withRetries(base, input.retry), input.circuitBreaker);
  return {
    mode,
    model,
    modelId: model.modelId,
    source,
    followsRunModel,
    ...(baseUrl === undefined ? {} : { baseUrl }),
  };
}

/**
 * The agent's model name as the agent resolves it, whether or not the agent model could be
 * built: a missing agent key must not change which model memory asks.
 */
function agentModelId(input: SelectMemoryModelInput): string {
  let provider: ResolvedProvider | undefined;
  try {
    provider = agentProvider(input.config, input.env);
  } catch {
    // An unknown agent provider has no model of its own; the name or the default still stands.
  }
  return agentModelName(input.config, input.env, provider);
}

function providerSettings(
  settings: MemorySettings,
  input: SelectMemoryModelInput,
  modeSource: string,
): OpenAICompatibleSettings {
  if (settings.provider === undefined) {
    throw new ConfigError({
      key: 'memory.llm_provider',
      source: modeSource,
      message: 'memory llm provider is required: set [memory] llm_provider or HARNESS_MEMORY_LLM_PROVIDER',
    });
  }
  const provider = resolveProvider(settings.provider.value, input.config, input.env, {
    key: 'memory.llm_provider',
    source: settings.provider.source,
  });
  const { name } = provider;
  const modelId = settings.model?.value ?? provider.model ?? agentModelId(input);
  const baseURL = settings.baseUrl?.value ?? provider.baseUrl;
  const apiKey = settings.apiKey?.value ?? provider.apiKey;
  if (apiKey === undefined && provider.apiKeyEnv !== undefined && !isLoopbackUrl(baseURL)) {
    throw new ConfigError({
      key: 'memory.llm_api_key',
      source: settings.provider.source,
      message: `provider "${name}" needs an API key: set ${keyVariableOf(name, provider.apiKeyEnv)} or HARNESS_MEMORY_LLM_API_KEY`,
    });
  }
  return {
    provider: name,
    baseURL,
    modelId,
    ...(apiKey === undefined ? {} : { apiKey }),
    timeout: DEFAULT_MODEL_TIMEOUT_MS,
  };
}

/**
 * The variable to set for a provider's key, for messages. `loadConfig` refuses an `api_key_env`
 * that is not a variable name; a configuration built otherwise may hold a key pasted there,
 * which must not be printed.
 */
function keyVariableOf(providerName: string, apiKeyEnv: string): string {
  return apiKeyEnv !== '' && apiKeyEnvProblem(apiKeyEnv) === undefined
    ? apiKeyEnv
    : `the variable that providers.${providerName}.api_key_env names`;
}

function withModelId(model: LanguageModel, modelId: string): LanguageModel {
  return {
    specificationVersion: 'v1',
    provider: model.provider,
    modelId,
    doGenerate: (options) => model.doGenerate({ ...options, modelId: options.modelId ?? modelId }),
  };
}

/** Overrides of {@link agentModelSettings}; `undefined` keeps the agent's value. */
interface AgentOverrides {
  readonly baseUrl?: string | undefined;
  readonly apiKey?: string | undefined;
  readonly modelId?: string | undefined;
}

/** The agent model's provider: `[model] provider`, default `openai`. */
function agentProvider(config: ModelSelectionConfig, env: Env): ResolvedProvider {
  return resolveProvider(nonBlank(config.model.provider) ?? 'openai', config, env, {
    key: 'model.provider',
    source: config.sources['model.provider'] ?? 'default',
  });
}

/** The agent's model name: `HARNESS_MODEL` / `[model] name`, else its provider's `model`, else the default. */
function agentModelName(config: ModelSelectionConfig, env: Env, provider: ResolvedProvider | undefined): string {
  return (
    read(env, 'HARNESS_MODEL', config.model.name, config, 'model.name')?.value ?? provider?.model ?? DEFAULT_AGENT_MODEL
  );
}

function agentModelSettings(
  config: ModelSelectionConfig,
  env: Env,
  overrides: AgentOverrides = {},
): OpenAICompatibleSettings {
  const source = config.sources['model.provider'] ?? 'default';
  const provider = agentProvider(config, env);
  const { name } = provider;
  // OPENAI_BASE_URL points the openai provider elsewhere; it must not redirect other providers.
  const openaiBaseUrl =
    name === 'openai'
      ? read(env, 'OPENAI_BASE_URL', config.openai.baseUrl, config, 'openai.base_url')?.value
      : undefined;
  const baseURL = overrides.baseUrl ?? nonBlank(config.model.baseUrl) ?? openaiBaseUrl ?? provider.baseUrl;
  const modelId = overrides.modelId ?? agentModelName(config, env, provider);
  const apiKey = overrides.apiKey ?? provider.apiKey;
  if (apiKey === undefined && provider.apiKeyEnv !== undefined && !isLoopbackUrl(baseURL)) {
    throw new ConfigError({
      key: 'model.provider',
      source,
      message:
        `the agent model's provider "${name}" at ${maskPasswords(baseURL)} needs an API key: set ` +
        keyVariableOf(name, provider.apiKeyEnv),
    });
  }
  return {
    provider: name,
    baseURL,
    modelId,
    ...(apiKey === undefined ? {} : { apiKey }),
    timeout: DEFAULT_MODEL_TIMEOUT_MS,
  };
}

/** Options of {@link createAgentModel}. */
export interface CreateAgentModelOptions {
  /** @default createOpenAICompatibleModel */
  readonly createModel?: (settings: OpenAICompatibleSettings) => LanguageModel;
  /** @default DEFAULT_RETRY_POLICY */
  readonly retry?: RetryPolicy;
}

/**
 * The harness's own agent model: provider `[model] provider` (default `openai`) from the
 * registry; base URL `[model] base_url`, else `OPENAI_BASE_URL` (openai only), else the
 * provider's; model `HARNESS_MODEL` / `[model] name`, else the provider's, else `gpt-4.1-mini`;
 * key from the provider's variable (none needed on loopback). Wrapped in `withRetries`.
 * @example const agent = createAgentModel(config, process.env);
 */
export function createAgentModel(
  config: ModelSelectionConfig,
  env: Env,
  options: CreateAgentModelOptions = {},
): LanguageModel {
  requireObject(
    'createAgentModel',
    'config',
    config,
    [],
    'Pass the loaded configuration: loadConfig() from harness-memory/config.',
  );
  const createModel = options.createModel ?? createOpenAICompatibleModel;
  return withRetries(createModel(agentModelSettings(config, env)), options.retry);
}
