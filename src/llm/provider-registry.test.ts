import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig, type HarnessConfig } from '../config/load-config.js';
import { ConfigError } from '../core/errors.js';
import { BUILT_IN_PROVIDERS, isLoopbackUrl, listProviders, resolveProvider } from './provider-registry.js';

const root = mkdtempSync(join(tmpdir(), 'harness-providers-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function configWith(toml: string, env: Record<string, string> = {}): HarnessConfig {
  const workspace = mkdtempSync(join(root, 'ws-'));
  mkdirSync(join(workspace, '.harness'));
  writeFileSync(join(workspace, '.harness', 'config.toml'), toml);
  return loadConfig({ homeDir: workspace, workspace, env });
}

describe('provider registry: built-ins', () => {
  it('knows openai, openrouter and ollama with their base URLs and key variables', () => {
    expect(BUILT_IN_PROVIDERS).toMatchObject({
      openai: { baseUrl: 'https://api.openai.com/v1', apiKeyEnv: 'OPENAI_API_KEY' },
      openrouter: { baseUrl: 'https://openrouter.ai/api/v1', apiKeyEnv: 'OPENROUTER_API_KEY' },
      ollama: { baseUrl: 'http://127.0.0.1:11434/v1' },
    });
    expect(BUILT_IN_PROVIDERS['ollama']?.apiKeyEnv).toBeUndefined();
  });

  it('reads the key from the provider variable, and the openai key also from config', () => {
    const config = configWith('', { OPENAI_API_KEY: 'sk-config' });
    expect(resolveProvider('openrouter', config, { OPENROUTER_API_KEY: 'or-key' }).apiKey).toBe('or-key');
    expect(resolveProvider('openrouter', config, {}).apiKey).toBeUndefined();
    expect(resolveProvider('openai', config, {}).apiKey).toBe('sk-config');
    expect(resolveProvider('openai', config, { OPENAI_API_KEY: 'sk-env' }).apiKey).toBe('sk-env');
  });
});

describe('provider registry: config entries', () => {
  it('adds [providers.NAME] entries and lets them override a built-in', () => {
    const config = configWith(
      '[providers.vllm]\nbase_url = "http://10.0.0.5:8000"\napi_key_env = "VLLM_KEY"\nmodel = "qwen"\n' +
        '[providers.ollama]\nbase_url = "http://gpu-box:11434"\nmodel = "llama3.2"\n',
    );
    expect(Object.keys(listProviders(config)).sort()).toEqual(['ollama', 'openai', 'openrouter', 'vllm']);
    const vllm = resolveProvider('vllm', config, { VLLM_KEY: 'v' });
    expect(vllm).toMatchObject({
      name: 'vllm',
      baseUrl: 'http://10.0.0.5:8000',
      apiKeyEnv: 'VLLM_KEY',
      model: 'qwen',
      apiKey: 'v',
    });
    expect(vllm.source).toMatch(/config\.toml$/);
    expect(resolveProvider('ollama', config, {})).toMatchObject({ baseUrl: 'http://gpu-box:11434', model: 'llama3.2' });
  });

  it('merges a table for a built-in over it field by field, keeping its key variable', () => {
    const config = configWith(
      '[providers.openrouter]\nbase_url = "https://openrouter.ai/api/v1"\nmodel = "anthropic/claude-sonnet-4"\n' +
        '[providers.openai]\nbase_url = "https://proxy.example/v1"\n',
    );
    expect(resolveProvider('openrouter', config, { OPENROUTER_API_KEY: 'or-key' })).toMatchObject({
      baseUrl: 'https://openrouter.ai/api/v1',
      apiKeyEnv: 'OPENROUTER_API_KEY',
      model: 'anthropic/claude-sonnet-4',
      apiKey: 'or-key',
    });
    expect(resolveProvider('openai', config, { OPENAI_API_KEY: 'sk-env' })).toMatchObject({
      baseUrl: 'https://proxy.example/v1',
      apiKeyEnv: 'OPENAI_API_KEY',
      apiKey: 'sk-env',
    });
  });

  it('lets a table for a built-in name its own key variable, or none with api_key_env = ""', () => {
    const config = configWith(
      '[providers.openrouter]\nbase_url = "https://gw.example/v1"\napi_key_env = "GW_KEY"\n' +
        '[providers.openai]\nbase_url = "http://127.0.0.1:8000/v1"\napi_key_env = ""\n',
    );
    expect(resolveProvider('openrouter', config, { OPENROUTER_API_KEY: 'or-key', GW_KEY: 'gw' })).toMatchObject({
      apiKeyEnv: 'GW_KEY',
      apiKey: 'gw',
    });
    const openai = resolveProvider('openai', config, { OPENAI_API_KEY: 'sk-env' });
    expect(openai.apiKeyEnv).toBeUndefined();
    expect(openai.apiKey).toBeUndefined();
  });

  it('reads a provider name case-insensitively', () => {
    const config = configWith('[providers.local]\nbase_url = "http://127.0.0.1:8080"\n');
    expect(resolveProvider('OpenRouter', config, { OPENROUTER_API_KEY: 'or-key' })).toMatchObject({
      name: 'openrouter',
      apiKey: 'or-key',
    });
    expect(resolveProvider(' Local ', config, {}).baseUrl).toBe('http://127.0.0.1:8080');
  });

  it('never suggests a [providers.NAME] table the name pattern refuses', () => {
    const config = configWith('');
    expect(() => resolveProvider('Anthropic', config, {})).toThrow('Add a [providers.anthropic] table');
    const run = () => resolveProvider('my provider', config, {});
    expect(run).toThrow(/unknown provider "my provider"/);
    expect(run).not.toThrow(/\[providers\.my provider\]/);
    expect(run).toThrow(/a-z, 0-9/);
  });

  it('names the known providers and the setting when the name is unknown', () => {
    const config = configWith('[providers.local]\nbase_url = "http://127.0.0.1:8080"\n');
    const run = () =>
      resolveProvider(
        'anthropic',
        config,
        {},
        { key: 'memory.llm_provider', source: 'env:HARNESS_MEMORY_LLM_PROVIDER' },
      );
    expect(run).toThrow(ConfigError);
    expect(run).toThrow(
      'env:HARNESS_MEMORY_LLM_PROVIDER: memory.llm_provider: unknown provider "anthropic"; known providers: ' +
        'local, ollama, openai, openrouter',
    );
    expect(() => resolveProvider('toString', config, {})).toThrow(/unknown provider/);
  });
});

describe('provider registry: loopback', () => {
  it('recognises URLs on this machine', () => {
    expect(['http://127.0.0.1:11434/v1', 'http://localhost:8000', 'http://[::1]:9000'].map(isLoopbackUrl)).toEqual([
      true,
      true,
      true,
    ]);
    expect(['https://api.openai.com/v1', 'http://10.0.0.5', 'nonsense'].map(isLoopbackUrl)).toEqual([
      false,
      false,
      false,
    ]);
  });
});
