import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_OBSERVE_MIN_TOKENS, MAX_REFLECT_THRESHOLD_TOKENS, MAX_SNIPPET_MAX_TOKENS } from '../core/observation.js';
import { configErrorOf, makeConfigDirs, writeConfigFile } from '../../test/support/config-files.js';
import { loadConfig } from './load-config.js';
import type { HarnessConfig } from './schema.js';

let root: string;
let home: string;
let workspace: string;

beforeEach(() => {
  ({ root, home, workspace } = makeConfigDirs('harness-schema-'));
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

function load(env: Record<string, string> = {}): HarnessConfig {
  return loadConfig({ homeDir: home, workspace, env });
}

// The memory service's own bounds, which a scope's overrides meet too: the configuration takes
// exactly as much, no more.
describe.each([
  ['observe_min_tokens', 'HARNESS_MEMORY_OBSERVE_MIN_TOKENS', MAX_OBSERVE_MIN_TOKENS, 'observeMinTokens'],
  ['snippet_max_tokens', 'HARNESS_MEMORY_SNIPPET_MAX_TOKENS', MAX_SNIPPET_MAX_TOKENS, 'snippetMaxTokens'],
  [
    'reflect_threshold_tokens',
    'HARNESS_MEMORY_REFLECT_THRESHOLD_TOKENS',
    MAX_REFLECT_THRESHOLD_TOKENS,
    'reflectThresholdTokens',
  ],
] as const)('config schema: [memory] %s is bounded', (key, variable, max, field) => {
  it(`takes ${max}, the memory service's bound`, () => {
    expect(load({ [variable]: String(max) }).memory[field]).toBe(max);
  });

  it('refuses one more from the environment, naming the setting and the maximum', () => {
    const error = configErrorOf(() => load({ [variable]: String(max + 1) }));
    expect(error).toMatchObject({ key: `memory.${key}`, source: `env:${variable}` });
    expect(error.message).toContain(`must be at most ${max} (or 0 for the default)`);
  });

  it('refuses 1e15 in a file the same way', () => {
    const file = writeConfigFile(workspace, `[memory]\n${key} = 1_000_000_000_000_000\n`);
    const error = configErrorOf(() => load());
    expect(error).toMatchObject({ key: `memory.${key}`, source: file });
    expect(error.message).toContain(`must be at most ${max}`);
  });
});

describe('config schema: blank and reserved names', () => {
  it.each(['', '  ', '\t'])('refuses [memory] sqlite_path = %j, naming the key', (path) => {
    const file = writeConfigFile(workspace, `[memory]\nsqlite_path = ${JSON.stringify(path)}\n`);
    const error = configErrorOf(() => load());
    expect(error).toMatchObject({ key: 'memory.sqlite_path', source: file });
    expect(error.message).toMatch(/must not be (empty|blank)/);
  });

  it('refuses a [providers.__proto__] table by name rather than dropping it', () => {
    const file = writeConfigFile(workspace, '[providers.__proto__]\nbase_url = "http://127.0.0.1:1/v1"\n');
    const error = configErrorOf(() => load());
    expect(error).toMatchObject({ key: 'providers.__proto__', source: file });
    expect(error.message).toContain('__proto__');
  });
});

describe('config schema: provider names are read case-insensitively', () => {
  it('lower-cases [model] provider and [memory] llm_provider, as [memory] mode', () => {
    writeConfigFile(workspace, '[model]\nprovider = " OpenAI "\n[memory]\nllm_provider = "OpenRouter"\n');
    const config = load();
    expect(config.model.provider).toBe('openai');
    expect(config.memory.llmProvider).toBe('openrouter');
  });

  it('lower-cases HARNESS_MEMORY_LLM_PROVIDER too', () => {
    expect(load({ HARNESS_MEMORY_LLM_PROVIDER: 'Ollama' }).memory.llmProvider).toBe('ollama');
  });
});
