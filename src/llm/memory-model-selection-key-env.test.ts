import { describe, expect, it } from 'vitest';
import { ConfigError } from '../core/errors.js';
import { createAgentModel, selectMemoryModel } from './memory-model-selection.js';
import type { ModelSelectionConfig } from './model-selection-config.js';

const PASTED_KEY = 'sk-proj-abcdefghijklmnop1234';

/** A configuration built by hand (not by loadConfig, which refuses it) whose provider names a key, not a variable. */
function configWithKeyAsVariable(): ModelSelectionConfig {
  return {
    memory: { llmMode: undefined, llmProvider: 'x', llmModel: 'm', llmBaseUrl: '', llmApiKey: '' },
    model: { name: 'm', provider: 'x', baseUrl: '' },
    openai: { apiKey: '', baseUrl: '' },
    providers: { x: { baseUrl: 'https://x.example/v1', apiKeyEnv: PASTED_KEY } },
    sources: { 'model.provider': 'test', 'memory.llm_provider': 'test' },
  };
}

function messageOf(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('model selection: a provider whose api_key_env is not a variable name', () => {
  it("names the setting, never its value, when the agent model's key is missing", () => {
    const message = messageOf(() => createAgentModel(configWithKeyAsVariable(), {}));
    expect(message).toContain('needs an API key: set the variable that providers.x.api_key_env names');
    expect(message).not.toContain('abcdefghijklmnop');
  });

  it("names the setting, never its value, when the memory model's key is missing", () => {
    const message = messageOf(() => selectMemoryModel({ config: configWithKeyAsVariable(), env: {} }));
    expect(message).toContain(
      'needs an API key: set the variable that providers.x.api_key_env names or HARNESS_MEMORY_LLM_API_KEY',
    );
    expect(message).not.toContain('abcdefghijklmnop');
  });
});
