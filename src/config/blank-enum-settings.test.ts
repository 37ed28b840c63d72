import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configErrorOf, makeConfigDirs, writeConfigFile } from '../../test/support/config-files.js';
import { describeConfig, loadConfig, type HarnessConfig } from './load-config.js';

let root: string;
let home: string;
let workspace: string;

beforeEach(() => {
  ({ root, home, workspace } = makeConfigDirs('harness-config-blank-'));
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

function load(env: Record<string, string> = {}): HarnessConfig {
  return loadConfig({ homeDir: home, workspace, env });
}

const sourceOf = (config: HarnessConfig, key: string) => describeConfig(config).find((row) => row.key === key)?.source;

// The reference reads an empty mode as auto and an empty llm_mode as "inferred", so a config
// that spells the defaults out holds these blanks.
describe('config: a blank mode, llm_mode or db_driver in a file', () => {
  it('counts as unset, as a blank environment variable does: the default applies, from "default"', () => {
    writeConfigFile(workspace, '[memory]\nmode = ""\nllm_mode = ""\ndb_driver = "  "\n');
    const config = load();
    expect(config.memory).toMatchObject({ mode: 'auto', llmMode: undefined, dbDriver: 'sqlite' });
    for (const key of ['memory.mode', 'memory.llm_mode', 'memory.db_driver'])
      expect(sourceOf(config, key), key).toBe('default');
  });

  it('leaves a value from an earlier layer in place, as a blank environment variable does', () => {
    writeConfigFile(home, '[memory]\nmode = "off"\nllm_mode = "inherit"\n');
    writeConfigFile(workspace, '[memory]\nmode = ""\nllm_mode = ""\n');
    const config = load({ HARNESS_MEMORY_MODE: ' ' });
    expect(config.memory).toMatchObject({ mode: 'off', llmMode: 'inherit' });
  });

  it('still refuses a value that is not blank and not allowed', () => {
    writeConfigFile(workspace, '[memory]\nllm_mode = "anthropic"\n');
    expect(configErrorOf(() => load()).message).toContain('must be one of: inherit, openai, provider');
  });
});
