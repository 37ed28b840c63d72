import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startScriptedOpenAIServer, type ScriptedServer } from '../../test/support/scripted-openai-server.js';
import { configErrorOf } from '../../test/support/config-files.js';
import { loadConfig, type HarnessConfig } from '../config/load-config.js';
import {
  createAgentModel,
  DEFAULT_AGENT_MODEL,
  selectMemoryModel,
  type SelectMemoryModelInput,
} from './memory-model-selection.js';
import { createOpenAICompatibleModel, type OpenAICompatibleSettings } from './openai-compatible.js';
import { withoutRetries } from './retrying-model.js';

let server: ScriptedServer;
const root = mkdtempSync(join(tmpdir(), 'harness-llm-select-'));
beforeAll(async () => {
  server = await startScriptedOpenAIServer();
});
afterAll(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});
beforeEach(() => {
  server.requests.length = 0;
});

type Env = Record<string, string>;

function configWith(env: Env = {}, toml = ''): HarnessConfig {
  const workspace = mkdtempSync(join(root, 'ws-'));
  mkdirSync(join(workspace, '.harness'));
  writeFileSync(join(workspace, '.harness', 'config.toml'), toml);
  return loadConfig({ homeDir: workspace, workspace, env });
}

/** Selects with a createModel that records the settings it was given. */
function select(env: Env, toml = '', extra: Partial<SelectMemoryModelInput> = {}) {
  const built: OpenAICompatibleSettings[] = [];
  const selection = selectMemoryModel({
    config: configWith(env, toml),
    env,
    createModel: (settings) => {
      built.push(settings);
      return createOpenAICompatibleModel(settings);
    },
    ...extra,
  });
  return { ...selection, settings: built[0] };
}

const agent = () => createOpenAICompatibleModel({ baseURL: server.url, modelId: 'agent-model', provider: 'agent' });
const call = { messages: [{ role: 'user' as const, content: 'x' }] };
const errorOf = configErrorOf;

describe('memory model selection: priority', () => {
  it('uses llm_mode when set, over llm_provider and OPENAI_API_KEY', () => {
    const chosen = select(
      { HARNESS_MEMORY_LLM_MODE: 'inherit', HARNESS_MEMORY_LLM_PROVIDER: 'ollama', OPENAI_API_KEY: 'sk' },
      '',
      { inheritModel: agent() },
    );
    expect(chosen).toMatchObject({
      mode: 'inherit',
      modelId: 'agent-model',
      source: 'llm_mode from env:HARNESS_MEMORY_LLM_MODE',
    });
    expect(select({ OPENAI_API_KEY: 'sk' }, '[memory]\nllm_mode = "openai"\nllm_provider = "ollama"\n').mode).toBe(
      'openai',
    );
  });

  it('lets HARNESS_MEMORY_LLM_MODE override llm_mode in TOML', () => {
    expect(
      select(
        { HARNESS_MEMORY_LLM_MODE: 'provider', HARNESS_MEMORY_LLM_MODEL: 'x' },
        '[memory]\nllm_mode = "openai"\nllm_provider = "ollama"\n',
      ).mode,
    ).toBe('provider');
  });

  it('infers provider when llm_provider is set in TOML or env, even with OPENAI_API_KEY', () => {
    const fromToml = select({ OPENAI_API_KEY: 'sk' }, '[memory]\nllm_provider = "ollama"\nllm_model = "llama3.2"\n');
    expect(fromToml).toMatchObject({ mode: 'provider', modelId: 'llama3.2', baseUrl: 'http://127.0.0.1:11434/v1' });
    expect(fromToml.source).toMatch(/^inferred: llm_provider is set \(.*config\.toml\)$/);
    const fromEnv = select({
      HARNESS_MEMORY_LLM_PROVIDER: 'ollama',
      HARNESS_MEMORY_LLM_MODEL: 'phi',
      OPENAI_API_KEY: 'sk',
    });
    expect(fromEnv).toMatchObject({
      mode: 'provider',
      source: 'inferred: llm_provider is set (env:HARNESS_MEMORY_LLM_PROVIDER)',
    });
  });

  it('infers openai when OPENAI_API_KEY is set: gpt-5-nano, 90 s, api.openai.com', () => {
    const chosen = select({ OPENAI_API_KEY: 'sk-main' });
    expect(chosen).toMatchObject({
      mode: 'openai',
      modelId: 'gpt-5-nano',
      source: 'inferred: OPENAI_API_KEY is set (env:OPENAI_API_KEY)',
      followsRunModel: false,
    });
    expect(chosen.settings).toEqual({
      provider: 'openai',
      baseURL: 'https://api.openai.com/v1',
      modelId: 'gpt-5-nano',
      apiKey: 'sk-main',
      timeout: 90_000,
    });
  });

  it.each([
    ['[model]\nprovider = "ollama"\nname = "llama3.1"\n', 'http://127.0.0.1:11434/v1'],
    ['[model]\nbase_url = "http://127.0.0.1:8000/v1"\n', 'http://127.0.0.1:8000/v1'],
    ['[providers.openai]\nbase_url = "http://127.0.0.1:11434/v1"\n', 'http://127.0.0.1:11434/v1'],
  ])('keeps memory with an agent that is not on OpenAI when only OPENAI_API_KEY is set (%j)', (toml, agentAt) => {
    const reason = `the agent's model is at ${agentAt}, not https://api.openai.com/v1`;
    const chosen = select({ OPENAI_API_KEY: 'sk-stray' }, toml, { inheritModel: agent() });
    expect(chosen).toMatchObject({
      mode: 'inherit',
      modelId: 'agent-model',
      source: `inferred: OPENAI_API_KEY is set (env:OPENAI_API_KEY), but ${reason}, so memory stays with it`,
    });
    expect(chosen.settings).toBeUndefined();
    // Asked for by name, the openai mode is still there.
    expect(select({ OPENAI_API_KEY: 'sk-x', HARNESS_MEMORY_LLM_MODE: 'openai' }, toml).settings?.baseURL).toBe(
      'https://api.openai.com/v1',
    );
  });

  it('infers openai for an agent on OpenAI when memory is sent elsewhere (HARNESS_MEMORY_LLM_BASE_URL)', () => {
    const chosen = select({
      OPENAI_API_KEY: 'sk-main',
      HARNESS_MEMORY_LLM_BASE_URL: 'https://memproxy.example.com/v1',
    });
    expect(chosen).toMatchObject({ mode: 'openai', modelId: 'gpt-5-nano' });
    expect(chosen.settings).toMatchObject({ baseURL: 'https://memproxy.example.com/v1', apiKey: 'sk-main' });
  });

  it('keeps a stray OPENAI_API_KEY from a memory server the agent also uses when the agent is not on OpenAI', () => {
    const toml = '[model]\nprovider = "ollama"\nname = "llama3.1"\n';
    const chosen = select(
      { OPENAI_API_KEY: 'sk-stray', HARNESS_MEMORY_LLM_BASE_URL: 'http://127.0.0.1:11434/v1' },
      toml,
      { inheritModel: agent() },
    );
    expect(chosen).toMatchObject({
      mode: 'inherit',
      source:
        "inferred: OPENAI_API_KEY is set (env:OPENAI_API_KEY), but the agent's model is at " +
        'http://127.0.0.1:11434/v1, not https://api.openai.com/v1, so memory stays with it',
    });
    expect(JSON.stringify(chosen.settings ?? {})).not.toContain('sk-stray');
  });

  it('infers openai when OPENAI_BASE_URL points the agent and memory at the same server', () => {
    const chosen = select({ OPENAI_API_KEY: 'sk-x', OPENAI_BASE_URL: 'http://127.0.0.1:11434' });
    expect(chosen).toMatchObject({ mode: 'openai', source: 'inferred: OPENAI_API_KEY is set (env:OPENAI_API_KEY)' });
    expect(chosen.settings?.baseURL).toBe('http://127.0.0.1:11434');
  });

  it('infers inherit when neither is set, and uses the agent model behind retries and a breaker', async () => {
    const chosen = select({}, '', { inheritModel: agent() });
    expect(chosen).toMatchObject({
      mode: 'inherit',
      modelId: 'agent-model',
      source: 'inferred: neither llm_provider nor OPENAI_API_KEY is set',
      followsRunModel: true,
    });
    expect(chosen.model.state).toBe('closed');
    await chosen.model.doGenerate(call);
    expect(server.requests[0]?.body).toMatchObject({ model: 'agent-model' });
  });
});

describe('memory model selection: overrides', () => {
  it(
    'picks the openai base URL from llm_base_url, then OPENAI_BASE_URL, and the key from ' +
      'HARNESS_MEMORY_LLM_API_KEY first',
    () => {
      expect(select({ OPENAI_API_KEY: 'sk', OPENAI_BASE_URL: 'http://proxy:4000' }).settings?.baseURL).toBe(
        'http://proxy:4000',
      );
      const overridden = select({
        OPENAI_API_KEY: 'sk',
        OPENAI_BASE_URL: 'http://proxy:4000',
        HARNESS_MEMORY_LLM_BASE_URL: 'http://memory:5000',
        HARNESS_MEMORY_LLM_API_KEY: 'mem-key',
      });
      expect(overridden.settings).toMatchObject({ baseURL: 'http://memory:5000', apiKey: 'mem-key' });
      expect(
        select({ OPENAI_API_KEY: 'sk' }, '[memory]\nllm_base_url = "http://toml:1"\nllm_model = "gpt-x"\n').settings,
      ).toMatchObject({ baseURL: 'http://toml:1', modelId: 'gpt-x' });
    },
  );

  it('overrides the provider model, base URL and key', () => {
    const chosen = select(
      {
        HARNESS_MEMORY_LLM_MODEL: 'm2',
        HARNESS_MEMORY_LLM_BASE_URL: 'http://other:1',
        HARNESS_MEMORY_LLM_API_KEY: 'k2',
      },
      '[memory]\nllm_provider = "openrouter"\n',
    );
    expect(chosen.settings).toEqual({
      provider: 'openrouter',
      baseURL: 'http://other:1',
      modelId: 'm2',
      apiKey: 'k2',
      timeout: 90_000,
    });
  });

  it('falls back from llm_model to the provider model, then to the harness model', () => {
    const toml = '[providers.local]\nbase_url = "http://127.0.0.1:9"\nmodel = "provider-default"\n';
    expect(select({ HARNESS_MEMORY_LLM_PROVIDER: 'local', HARNESS_MODEL: 'harness-model' }, toml).modelId).toBe(
      'provider-default',
    );
    expect(select({ HARNESS_MEMORY_LLM_PROVIDER: 'ollama', HARNESS_MODEL: 'harness-model' }).modelId).toBe(
      'harness-model',
    );
    // The agent's model as the agent resolves it: its provider's model, else the default.
    const agentOnLocal =
      '[model]\nprovider = "loc"\n[providers.loc]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m1"\n';
    expect(select({ HARNESS_MEMORY_LLM_PROVIDER: 'ollama' }, agentOnLocal).modelId).toBe('m1');
    expect(select({ HARNESS_MEMORY_LLM_PROVIDER: 'ollama', OPENAI_API_KEY: 'sk-x' }).modelId).toBe('gpt-4.1-mini');
  });

  it("names the agent's model in provider mode whether or not the agent's key is set", () => {
    const provider = { HARNESS_MEMORY_LLM_PROVIDER: 'openrouter', OPENROUTER_API_KEY: 'or-x' };
    expect(select({ ...provider, OPENAI_API_KEY: 'sk-x' }).modelId).toBe(DEFAULT_AGENT_MODEL);
    // Without OPENAI_API_KEY the default openai agent cannot be built; its model name stands.
    expect(select(provider).settings).toMatchObject({ provider: 'openrouter', modelId: DEFAULT_AGENT_MODEL });
    // So does the model of an agent provider whose key is missing.
    const agentOnRemote =
      '[model]\nprovider = "remote"\n[providers.remote]\nbase_url = "https://remote.example/v1"\n' +
      'api_key_env = "REMOTE_KEY"\nmodel = "m1"\n';
    expect(select(provider, agentOnRemote).modelId).toBe('m1');
    expect(select({ ...provider, REMOTE_KEY: 'r-x' }, agentOnRemote).modelId).toBe('m1');
  });

  it('sends llm_model as the model id of an inherited model', async () => {
    const chosen = select({ HARNESS_MEMORY_LLM_MODEL: 'memory-model' }, '', { inheritModel: agent() });
    expect(chosen.modelId).toBe('memory-model');
    expect(chosen.followsRunModel).toBe(false);
    await chosen.model.doGenerate(call);
    expect(server.requests[0]?.body).toMatchObject({ model: 'memory-model' });
  });

  it('builds the agent settings anew when inherit mode overrides the base URL or key', () => {
    const chosen = select({ HARNESS_MEMORY_LLM_BASE_URL: 'http://127.0.0.1:7', HARNESS_MODEL: 'agent-x' });
    expect(chosen).toMatchObject({
      mode: 'inherit',
      modelId: 'agent-x',
      baseUrl: 'http://127.0.0.1:7',
      followsRunModel: false,
    });
  });

  it('reaches a configured provider through the real client', async () => {
    server.enqueue({ text: 'from provider' });
    const chosen = select(
      {},
      `[memory]\nllm_provider = "local"\n[providers.local]\nbase_url = "${server.origin}/"\nmodel = "tiny"\n`,
    );
    expect((await chosen.model.doGenerate(call)).text).toBe('from provider');
    expect(server.requests[0]).toMatchObject({ path: '/v1/chat/completions', body: { model: 'tiny' } });
  });
});

describe('memory model selection: errors', () => {
  it('asks for a provider in provider mode without one', () => {
    const error = errorOf(() => select({ HARNESS_MEMORY_LLM_MODE: 'provider' }));
    expect(error.message).toContain('set [memory] llm_provider or HARNESS_MEMORY_LLM_PROVIDER');
    expect(error.source).toBe('env:HARNESS_MEMORY_LLM_MODE');
  });

  it('lists the known providers for an unknown one', () => {
    expect(errorOf(() => select({ HARNESS_MEMORY_LLM_PROVIDER: 'nope' })).message).toContain(
      'known providers: ollama, openai, openrouter',
    );
  });

  it('asks for the provider key when a remote provider has none', () => {
    const error = errorOf(() => select({ HARNESS_MEMORY_LLM_PROVIDER: 'openrouter', HARNESS_MEMORY_LLM_MODEL: 'x' }));
    expect(error.message).toContain('set OPENROUTER_API_KEY or HARNESS_MEMORY_LLM_API_KEY');
  });

  it('asks for an API key in openai mode without one', () => {
    const error = errorOf(() => select({ HARNESS_MEMORY_LLM_MODE: 'openai' }));
    expect(error.message).toContain('set HARNESS_MEMORY_LLM_API_KEY or OPENAI_API_KEY');
  });

  it('asks to configure the agent model in inherit mode without one', () => {
    const error = errorOf(() => select({}));
    for (const name of ['HARNESS_MODEL', '[model]', 'OPENAI_BASE_URL', 'OPENAI_API_KEY'])
      expect(error.message).toContain(name);
  });

  it('rejects an unknown mode given only in env', () => {
    const error = errorOf(() => selectMemoryModel({ config: configWith(), env: { HARNESS_MEMORY_LLM_MODE: 'cloud' } }));
    expect(error.message).toContain('must be one of: inherit, openai, provider');
  });
});

describe('memory model selection: agent model', () => {
  it('uses HARNESS_MODEL on the openai provider at OPENAI_BASE_URL, behind one retry layer', async () => {
    const env = { OPENAI_API_KEY: 'sk-agent', OPENAI_BASE_URL: server.url, HARNESS_MODEL: 'agent-4' };
    const model = createAgentModel(configWith(env), env);
    expect(withoutRetries(model)).not.toBe(model);
    await model.doGenerate(call);
    expect(server.requests[0]).toMatchObject({
      body: { model: 'agent-4' },
      headers: { authorization: 'Bearer sk-agent' },
    });
  });

  it('defaults to gpt-4.1-mini and allows no key on a loopback base URL', async () => {
    const model = createAgentModel(configWith({}, `[model]\nbase_url = "${server.origin}"\n`), {});
    expect(model.modelId).toBe('gpt-4.1-mini');
    await model.doGenerate(call);
    expect(server.requests[0]?.headers['authorization']).toBe('Bearer not-needed');
  });

  it('asks for the provider key for a remote base URL', () => {
    expect(errorOf(() => createAgentModel(configWith(), {})).message).toContain('set OPENAI_API_KEY');
  });

  it('sends the built-in key variable of a provider a [providers.NAME] table re-points', () => {
    const env = { OPENROUTER_API_KEY: 'sk-or-v1-abcdefghijklmnopqrstuvwxyz' };
    const toml =
      '[model]\nprovider = "openrouter"\n\n[providers.openrouter]\nbase_url = "https://openrouter.ai/api/v1"\n' +
      'model = "anthropic/claude-sonnet-4"\n';
    const built: OpenAICompatibleSettings[] = [];
    createAgentModel(configWith(env, toml), env, {
      createModel: (settings) => {
        built.push(settings);
        return createOpenAICompatibleModel(settings);
      },
    });
    expect(built[0]).toMatchObject({
      provider: 'openrouter',
      modelId: 'anthropic/claude-sonnet-4',
      apiKey: 'sk-or-v1-abcdefghijklmnopqrstuvwxyz',
    });
  });

  it('reads a provider name in any case, in the config and in HARNESS_MEMORY_LLM_PROVIDER', () => {
    const env = { OPENROUTER_API_KEY: 'or-key', HARNESS_MEMORY_LLM_MODEL: 'x/small' };
    const agentBuilt: OpenAICompatibleSettings[] = [];
    const config = configWith(env, '[model]\nprovider = "OpenRouter"\n');
    createAgentModel(config, env, {
      createModel: (settings) => {
        agentBuilt.push(settings);
        return createOpenAICompatibleModel(settings);
      },
    });
    expect(agentBuilt[0]).toMatchObject({ provider: 'openrouter', apiKey: 'or-key' });
    const chosen = select({ ...env, HARNESS_MEMORY_LLM_PROVIDER: 'OpenRouter' });
    expect(chosen.settings).toMatchObject({ provider: 'openrouter', apiKey: 'or-key', modelId: 'x/small' });
  });
});
