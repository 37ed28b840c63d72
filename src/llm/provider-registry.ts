/**
 * Named OpenAI-compatible providers: `openai`, `openrouter` and `ollama` built in, plus the
 * `[providers.NAME]` tables of the config, merged over a built-in of the same name.
 * @module
 */
import type { ModelSelectionConfig } from './model-selection-config.js';
import { ConfigError } from '../core/errors.js';

/** A provider: where it lives and where its API key comes from. */
export interface ProviderDefinition {
  readonly name: string;
  readonly baseUrl: string;
  /** Environment variable holding the API key; none for servers that need no key. */
  readonly apiKeyEnv?: string;
  /** Model used when no setting names one. */
  readonly model?: string;
  /** `built-in`, or the config source of the `[providers.NAME]` table. */
  readonly source: string;
}

/** A provider with its API key looked up. */
export interface ResolvedProvider extends ProviderDefinition {
  /** The key from `apiKeyEnv`; `undefined` when it has none or the variable is unset. */
  readonly apiKey: string | undefined;
}

// The config's PROVIDER_NAME_PATTERN, which this layer may not import.
const NAME_PATTERN = /^[a-z0-9_-]+$/;

/** The providers known without any config. */
export const BUILT_IN_PROVIDERS: Readonly<Record<string, ProviderDefinition>> = Object.freeze({
  openai: { name: 'openai', baseUrl: 'https://api.openai.com/v1', apiKeyEnv: 'OPENAI_API_KEY', source: 'built-in' },
  openrouter: {
    name: 'openrouter',
    baseUrl: 'https://openrouter.ai/api/v1',
    apiKeyEnv: 'OPENROUTER_API_KEY',
    source: 'built-in',
  },
  ollama: { name: 'ollama', baseUrl: 'http://127.0.0.1:11434/v1', source: 'built-in' },
});

/**
 * Every provider: the built-ins, extended by `config.providers`. A table for a built-in's name
 * is merged over it field by field: a key it leaves out keeps the built-in's (`api_key_env`
 * among them), and `api_key_env = ""` removes the key variable.
 */
export function listProviders(
  config: Pick<ModelSelectionConfig, 'providers' | 'sources'>,
): Readonly<Record<string, ProviderDefinition>> {
  const providers: Record<string, ProviderDefinition> = { ...BUILT_IN_PROVIDERS };
  for (const [name, entry] of Object.entries(config.providers)) {
    const builtIn = Object.hasOwn(BUILT_IN_PROVIDERS, name) ? BUILT_IN_PROVIDERS[name] : undefined;
    const apiKeyEnv = entry.apiKeyEnv ?? builtIn?.apiKeyEnv;
    const model = entry.model || builtIn?.model;
    providers[name] = {
      name,
      baseUrl: entry.baseUrl,
      ...(apiKeyEnv ? { apiKeyEnv } : {}),
      ...(model ? { model } : {}),
      source: config.sources[`providers.${name}.base_url`] ?? 'config',
    };
  }
  return providers;
}

/**
 * Looks up provider `name` (in any case) and its API key in `env`. The `openai` key also falls back to
 * `config.openai.apiKey`. An unknown name throws a `ConfigError` listing the known ones,
 * attributed to `origin` (the setting that named the provider).
 * @example resolveProvider('ollama', config, process.env).baseUrl // 'http://127.0.0.1:11434/v1'
 */
export function resolveProvider(
  name: string,
  config: Pick<ModelSelectionConfig, 'providers' | 'sources' | 'openai'>,
  env: Readonly<Record<string, string | undefined>>,
  origin: { readonly key: string; readonly source: string } = { key: 'provider', source: 'provider registry' },
): ResolvedProvider {
  const providers = listProviders(config);
  // Table names are lower case (the config refuses others), so "OpenAI" means openai.
  const key = name.trim().toLowerCase();
  const provider = Object.hasOwn(providers, key) ? providers[key] : undefined;
  if (provider === undefined) {
    const define = NAME_PATTERN.test(key)
      ? `Add a [providers.${key}] table with base_url to define it.`
      : 'A [providers.NAME] table name may contain only a-z, 0-9, "_" and "-".';
    throw new ConfigError({
      ...origin,
      message:
        `unknown provider ${JSON.stringify(name)}; known providers: ` +
        `${Object.keys(providers).sort().join(', ')}. ${define}`,
    });
  }
  const fromEnv = provider.apiKeyEnv ? nonBlank(env[provider.apiKeyEnv]) : undefined;
  const fallback = provider.apiKeyEnv === 'OPENAI_API_KEY' ? nonBlank(config.openai.apiKey) : undefined;
  return { ...provider, apiKey: fromEnv ?? fallback };
}

/** True for URLs on this machine, where a placeholder API key is fine. */
export function isLoopbackUrl(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return host === 'localhost' || host === '[::1]' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
  } catch {
    return false;
  }
}

/** The trimmed value, or `undefined` when it is missing or blank. */
export function nonBlank(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}
