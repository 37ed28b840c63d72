import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeConfigDirs } from '../../test/support/config-files.js';
import { describeConfig, describeConfigValues } from './describe-config.js';
import { loadConfig } from './load-config.js';

let root: string;
let home: string;
let workspace: string;

beforeEach(() => {
  ({ root, home, workspace } = makeConfigDirs('harness-describe-config-'));
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('config: describeConfigValues', () => {
  it('gives the rows of describeConfig, each value as data, with the same masking', () => {
    const config = loadConfig({
      homeDir: home,
      workspace,
      env: {
        HARNESS_MEMORY_DB_DSN: 'postgres://harness:db-password-9876@db.local/harness',
        OPENAI_API_KEY: 'sk-openai-0123456789abcd',
        HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '3000',
      },
    });
    const rows = describeConfigValues(config);
    expect(rows.map(({ key, source }) => ({ key, source }))).toEqual(
      describeConfig(config).map(({ key, source }) => ({ key, source })),
    );
    const value = (key: string): unknown => rows.find((row) => row.key === key)?.value;
    expect(value('memory.observe_min_tokens')).toBe(3000);
    expect(value('memory.redact_secrets')).toBe(true);
    expect(value('memory.db_dsn')).toBe('postgres://harness:****9876@db.local/harness');
    expect(value('openai.api_key')).toBe('****abcd');
    expect(value('memory.llm_api_key')).toBeNull();
    expect(value('server.api_keys')).toEqual([]);
    expect(value('model.name')).toBe('');
    expect(JSON.stringify(rows)).not.toContain('db-password');
    expect(JSON.stringify(rows)).not.toContain('0123456789');
  });
});

describe('config: a DSN password holding spaces', () => {
  // pg reads it (it encodes the spaces), so it loads; it must not be shown.
  const dsn = 'postgres://harness:correct horse battery@db.internal:5432/harness';

  it('is masked whole in describeConfig and describeConfigValues', () => {
    const config = loadConfig({
      homeDir: home,
      workspace,
      env: { HARNESS_MEMORY_DB_DRIVER: 'postgres', HARNESS_MEMORY_DB_DSN: dsn },
    });
    const row = describeConfig(config).find((entry) => entry.key === 'memory.db_dsn');
    expect(row?.value).toBe('postgres://harness:****tery@db.internal:5432/harness');
    const value = describeConfigValues(config).find((entry) => entry.key === 'memory.db_dsn')?.value;
    expect(value).toBe(row?.value);
  });

  it('is masked whole with the SQLite driver too, where the DSN is not checked', () => {
    const config = loadConfig({ homeDir: home, workspace, env: { HARNESS_MEMORY_DB_DSN: 'postgres://u:a b c@h/db' } });
    expect(describeConfig(config).find((entry) => entry.key === 'memory.db_dsn')?.value).toBe('postgres://u:****@h/db');
  });
});
