import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configErrorOf, makeConfigDirs, writeConfigFile } from '../../test/support/config-files.js';
import { describeConfig, loadConfig, tokenConfigFrom, type HarnessConfig } from './load-config.js';

let root: string;
let home: string;
let workspace: string;

beforeEach(() => {
  ({ root, home, workspace } = makeConfigDirs('harness-config-'));
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

const writeConfig = writeConfigFile;

function load(env: Record<string, string> = {}): HarnessConfig {
  return loadConfig({ homeDir: home, workspace, env });
}

describe('config: defaults', () => {
  it('returns the built-in defaults when no file exists and the environment is empty', () => {
    const config = load();
    expect(config.workspace).toBe(workspace);
    expect(config.memory).toEqual({
      enabled: true,
      mode: 'auto',
      dbDriver: 'sqlite',
      dbDsn: '',
      sqlitePath: join(workspace, '.harness', 'state.db'),
      schema: '',
      defaultEnabled: false,
      observeMinTokens: 1200,
      snippetMaxTokens: 900,
      reflectThresholdTokens: 4000,
      staleOperationSeconds: 300,
      maxOperationAttempts: 5,
      redactSecrets: true,
      toolImportanceCap: 0.6,
      llmMode: undefined,
      llmProvider: '',
      llmModel: '',
      llmBaseUrl: '',
      llmApiKey: '',
      workingMemoryMaxValueBytes: 8192,
      workingMemoryMaxEntries: 100,
      workingMemoryMaxTotalBytes: 32768,
      workingMemoryDefaultTtlSeconds: 0,
      operationRetentionDays: 0,
      sqliteWalAlertMb: 256,
    });
    expect(config.forensics).toEqual({ captureRequestEnvelope: false, snapshotMemorySnippet: false });
    expect(config.model).toEqual({ name: '', provider: 'openai', baseUrl: '' });
    expect(config.server).toEqual({
      host: '127.0.0.1',
      port: 8080,
      apiKeys: [],
      redactTranscripts: true,
      maxConcurrentRuns: 16,
      maxSseConnections: 32,
      maxWritesPerSecond: 50,
      maxReadsPerSecond: 200,
      runRetentionDays: 0,
      allowedModels: [],
    });
    expect(config.providers).toEqual({});
    expect(config.openai).toEqual({ apiKey: '', baseUrl: '' });
  });

  it('reports "default" as the source of every setting', () => {
    const { sources } = load();
    expect(sources['memory.observe_min_tokens']).toBe('default');
    expect(sources['memory.llm_mode']).toBe('default');
    expect(sources['server.api_keys']).toBe('default');
    expect(sources['openai.api_key']).toBe('default');
    expect(
      Object.entries(sources)
        .filter(([key]) => key !== 'workspace')
        .every(([, source]) => source === 'default'),
    ).toBe(true);
    expect(sources['workspace']).toBe('options.workspace');
  });

  it('takes the workspace from HARNESS_WORKSPACE, resolved against cwd, when no option names it', () => {
    const config = loadConfig({ homeDir: home, cwd: root, env: { HARNESS_WORKSPACE: 'workspace' } });
    expect(config.workspace).toBe(workspace);
    expect(config.sources['workspace']).toBe('env:HARNESS_WORKSPACE');
  });

  it('trims HARNESS_WORKSPACE, and takes a blank one as unset', () => {
    const config = loadConfig({ homeDir: home, cwd: root, env: { HARNESS_WORKSPACE: ` ${workspace}\n` } });
    expect(config.workspace).toBe(workspace);
    expect(config.sources['workspace']).toBe('env:HARNESS_WORKSPACE');
    const blank = loadConfig({ homeDir: home, cwd: workspace, env: { HARNESS_WORKSPACE: ' \t ' } });
    expect(blank.workspace).toBe(workspace);
    expect(blank.sources['workspace']).toBe('options.cwd');
  });

  it('falls back to cwd as the workspace', () => {
    const config = loadConfig({ homeDir: home, cwd: workspace, env: { HARNESS_WORKSPACE: '' } });
    expect(config.workspace).toBe(workspace);
    expect(config.sources['workspace']).toBe('options.cwd');
  });
});

describe('config: cascade', () => {
  it('lets the workspace file override the home file key by key', () => {
    const homeFile = writeConfig(home, '[memory]\nobserve_min_tokens = 2000\nsnippet_max_tokens = 500\n');
    const workspaceFile = writeConfig(workspace, '[memory]\nobserve_min_tokens = 3000\n');
    const config = load();
    expect(config.memory.observeMinTokens).toBe(3000);
    expect(config.memory.snippetMaxTokens).toBe(500);
    expect(config.memory.reflectThresholdTokens).toBe(4000);
    expect(config.sources['memory.observe_min_tokens']).toBe(workspaceFile);
    expect(config.sources['memory.snippet_max_tokens']).toBe(homeFile);
    expect(config.sources['memory.reflect_threshold_tokens']).toBe('default');
  });

  it('lets environment variables override both files', () => {
    writeConfig(home, '[memory]\nmode = "off"\n[model]\nname = "home-model"\n');
    writeConfig(workspace, '[memory]\nobserve_min_tokens = 3000\n[server]\nport = 9000\n');
    const config = load({
      HARNESS_MEMORY_MODE: 'local_coordinator',
      HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '42',
      HARNESS_MODEL: 'env-model',
      HARNESS_PORT: '9100',
      HARNESS_HOST: '0.0.0.0',
    });
    expect(config.memory.mode).toBe('local_coordinator');
    expect(config.memory.observeMinTokens).toBe(42);
    expect(config.model.name).toBe('env-model');
    expect(config.server).toMatchObject({ host: '0.0.0.0', port: 9100 });
    expect(config.sources['memory.observe_min_tokens']).toBe('env:HARNESS_MEMORY_OBSERVE_MIN_TOKENS');
    expect(config.sources['model.name']).toBe('env:HARNESS_MODEL');
  });

  it('reads the reference\'s top-level model = "…" as [model] name, and refuses a model that is neither', () => {
    const file = writeConfig(workspace, 'model = "gpt-4.1-mini"\n[memory]\nobserve_min_tokens = 3000\n');
    const config = load();
    expect(config.model.name).toBe('gpt-4.1-mini');
    expect(config.sources['model.name']).toBe(file);
    expect(config.memory.observeMinTokens).toBe(3000);
    writeConfig(workspace, 'model = 5\n');
    const error = configErrorOf(() => load());
    expect(error).toMatchObject({ key: 'model', source: file });
    expect(error.message).toContain('must be a model name or a table');
  });

  it('reads the hardening settings from [memory] and [server], and from their variables', () => {
    const file = writeConfig(
      workspace,
      '[memory]\nmax_operation_attempts = 7\n[server]\nredact_transcripts = false\nmax_concurrent_runs = ' +
        '3\nmax_sse_connections = 4\nmax_writes_per_second = 5\nrun_retention_days = 30\n',
    );
    const fromFile = load();
    expect(fromFile.memory.maxOperationAttempts).toBe(7);
    expect(fromFile.server).toMatchObject({
      redactTranscripts: false,
      maxConcurrentRuns: 3,
      maxSseConnections: 4,
      maxWritesPerSecond: 5,
      runRetentionDays: 30,
    });
    expect(fromFile.sources['server.max_writes_per_second']).toBe(file);
    const fromEnv = load({
      HARNESS_MEMORY_MAX_OPERATION_ATTEMPTS: '2',
      HARNESS_REDACT_TRANSCRIPTS: 'on',
      HARNESS_MAX_CONCURRENT_RUNS: '30',
      HARNESS_MAX_SSE_CONNECTIONS: '40',
      HARNESS_MAX_WRITES_PER_SECOND: '60',
      HARNESS_RUN_RETENTION_DAYS: '0',
    });
    expect(fromEnv.memory.maxOperationAttempts).toBe(2);
    expect(fromEnv.server).toMatchObject({
      redactTranscripts: true,
      maxConcurrentRuns: 30,
      maxSseConnections: 40,
      maxWritesPerSecond: 60,
      runRetentionDays: 0,
    });
    expect(fromEnv.sources['server.redact_transcripts']).toBe('env:HARNESS_REDACT_TRANSCRIPTS');
    expect(configErrorOf(() => load({ HARNESS_MEMORY_MAX_OPERATION_ATTEMPTS: '0' })).key).toBe(
      'memory.max_operation_attempts',
    );
    expect(configErrorOf(() => load({ HARNESS_MAX_WRITES_PER_SECOND: 'lots' })).key).toBe(
      'server.max_writes_per_second',
    );
    for (const days of ['-1', '1.5', '36501']) {
      const error = configErrorOf(() => load({ HARNESS_RUN_RETENTION_DAYS: days }));
      expect(error.key).toBe('server.run_retention_days');
      expect(error.message).toContain('or 0 to keep runs for ever');
    }
  });

  it('reads [memory] working_memory_default_ttl_seconds, and its variable over it; 0 is never', () => {
    const file = writeConfig(workspace, '[memory]\nworking_memory_default_ttl_seconds = 86400\n');
    const fromFile = load();
    expect(fromFile.memory.workingMemoryDefaultTtlSeconds).toBe(86_400);
    expect(fromFile.sources['memory.working_memory_default_ttl_seconds']).toBe(file);
    const fromEnv = load({ HARNESS_MEMORY_WORKING_MEMORY_DEFAULT_TTL_SECONDS: '0' });
    expect(fromEnv.memory.workingMemoryDefaultTtlSeconds).toBe(0);
    expect(fromEnv.sources['memory.working_memory_default_ttl_seconds']).toBe(
      'env:HARNESS_MEMORY_WORKING_MEMORY_DEFAULT_TTL_SECONDS',
    );
    for (const seconds of ['-1', '1.5', '315360001', 'soon']) {
      const error = configErrorOf(() => load({ HARNESS_MEMORY_WORKING_MEMORY_DEFAULT_TTL_SECONDS: seconds }));
      expect(error.key).toBe('memory.working_memory_default_ttl_seconds');
    }
  });

  it('reads [memory] operation_retention_days, and its variable over it; 0 keeps operations for ever', () => {
    const file = writeConfig(workspace, '[memory]\noperation_retention_days = 30\n');
    const fromFile = load();
    expect(fromFile.memory.operationRetentionDays).toBe(30);
    expect(fromFile.sources['memory.operation_retention_days']).toBe(file);
    const fromEnv = load({ HARNESS_MEMORY_OPERATION_RETENTION_DAYS: '0' });
    expect(fromEnv.memory.operationRetentionDays).toBe(0);
    expect(fromEnv.sources['memory.operation_retention_days']).toBe('env:HARNESS_MEMORY_OPERATION_RETENTION_DAYS');
    expect(describeConfig(fromEnv)).toContainEqual({
      key: 'memory.operation_retention_days',
      value: '0',
      source: 'env:HARNESS_MEMORY_OPERATION_RETENTION_DAYS',
    });
    for (const days of ['-1', '1.5', '36501', 'a week']) {
      const error = configErrorOf(() => load({ HARNESS_MEMORY_OPERATION_RETENTION_DAYS: days }));
      expect(error.key).toBe('memory.operation_retention_days');
      if (days !== 'a week') expect(error.message).toContain('or 0 to keep settled operations for ever');
    }
    writeConfig(workspace, '[memory]\noperation_retention_days = -3\n');
    expect(configErrorOf(() => load()).key).toBe('memory.operation_retention_days');
  });

  it('reads [memory] sqlite_wal_alert_mb (default 256, 0: no alert), and its variable over it', () => {
    expect(loadConfig({ env: {}, cwd: workspace, homeDir: home }).memory.sqliteWalAlertMb).toBe(256);
    const file = writeConfig(workspace, '[memory]\nsqlite_wal_alert_mb = 0\n');
    expect(loadConfig({ env: {}, cwd: workspace, homeDir: home }).sources['memory.sqlite_wal_alert_mb']).toBe(file);
    const fromEnv = loadConfig({ env: { HARNESS_MEMORY_SQLITE_WAL_ALERT_MB: '64' }, cwd: workspace, homeDir: home });
    expect(fromEnv.memory.sqliteWalAlertMb).toBe(64);
    for (const bad of ['-1', '1.5', '2000000'])
      expect(() =>
        loadConfig({ env: { HARNESS_MEMORY_SQLITE_WAL_ALERT_MB: bad }, cwd: workspace, homeDir: home }),
      ).toThrow(/sqlite_wal_alert_mb.*must be a whole number of MiB from 1 to 1048576, or 0 for no alert/);
  });

  it('reads [server] allowed_models, and HARNESS_ALLOWED_MODELS over it', () => {
    writeConfig(workspace, '[server]\nallowed_models = ["gpt-5-mini", " llama3.1 ", "gpt-5-mini"]\n');
    expect(load().server.allowedModels).toEqual(['gpt-5-mini', 'llama3.1']);
    expect(load({ HARNESS_ALLOWED_MODELS: 'a, b' }).server.allowedModels).toEqual(['a', 'b']);
    expect(configErrorOf(() => load({ HARNESS_ALLOWED_MODELS: ' , ' })).key).toBe('server.allowed_models');
    writeConfig(workspace, '[server]\nallowed_models = [""]\n');
    expect(configErrorOf(() => load()).message).toContain('must not hold an empty model id');
  });

  it('treats an empty environment variable as unset', () => {
    const file = writeConfig(workspace, '[memory]\nobserve_min_tokens = 3000\n');
    const config = load({ HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '', HARNESS_MEMORY_TYPO: '' });
    expect(config.memory.observeMinTokens).toBe(3000);
    expect(config.sources['memory.observe_min_tokens']).toBe(file);
  });

  it.each([
    ['yes', true],
    ['ON', true],
    ['1', true],
    ['False', false],
    ['no', false],
    ['0', false],
  ])('reads the boolean word %s from the environment as %s', (word, expected) => {
    expect(load({ HARNESS_MEMORY_DEFAULT_ENABLED: word }).memory.defaultEnabled).toBe(expected);
  });

  it('trims and lowercases the memory mode', () => {
    writeConfig(workspace, '[memory]\nmode = "  OFF "\n');
    expect(load().memory.mode).toBe('off');
    expect(load({ HARNESS_MEMORY_MODE: ' Local_Coordinator ' }).memory.mode).toBe('local_coordinator');
  });

  it('resolves a relative sqlite_path against the workspace and keeps an absolute one', () => {
    writeConfig(home, '[memory]\nsqlite_path = "data/memory.db"\n');
    expect(load().memory.sqlitePath).toBe(join(workspace, 'data', 'memory.db'));
    const absolute = join(root, 'elsewhere', 'state.db');
    expect(load({ HARNESS_MEMORY_SQLITE_PATH: absolute }).memory.sqlitePath).toBe(absolute);
  });

  it('reads providers and merges one provider across files', () => {
    writeConfig(
      home,
      '[providers.openrouter]\nbase_url = "https://openrouter.ai/api"\napi_key_env = "OPENROUTER_API_KEY"\n',
    );
    const workspaceFile = writeConfig(
      workspace,
      '[providers.openrouter]\nmodel = "x/small"\n[providers.local-llm]\nbase_url = "http://localhost:11434"\n',
    );
    const config = load();
    expect(config.providers).toEqual({
      openrouter: { baseUrl: 'https://openrouter.ai/api', apiKeyEnv: 'OPENROUTER_API_KEY', model: 'x/small' },
      'local-llm': { baseUrl: 'http://localhost:11434' },
    });
    expect(config.sources['providers.openrouter.model']).toBe(workspaceFile);
  });

  it('parses server api keys from the file and lets HARNESS_API_KEYS replace them', () => {
    writeConfig(workspace, '[server]\napi_keys = ["key-one:tenant-a", "key-two:tenant-b"]\n');
    expect(load().server.apiKeys).toEqual([
      { key: 'key-one', tenantId: 'tenant-a' },
      { key: 'key-two', tenantId: 'tenant-b' },
    ]);
    const config = load({ HARNESS_API_KEYS: 'key-three:tenant-c, key-four:tenant-d' });
    expect(config.server.apiKeys).toEqual([
      { key: 'key-three', tenantId: 'tenant-c' },
      { key: 'key-four', tenantId: 'tenant-d' },
    ]);
    expect(config.sources['server.api_keys']).toBe('env:HARNESS_API_KEYS');
  });

  it('reads the scopes after the tenant, and refuses unknown or repeated ones without echoing the key', () => {
    const config = load({ HARNESS_API_KEYS: 'key-one:org:acme runs:read  memory:read, key-two:acme' });
    expect(config.server.apiKeys).toEqual([
      { key: 'key-one', tenantId: 'org:acme', scopes: ['runs:read', 'memory:read'] },
      { key: 'key-two', tenantId: 'acme' },
    ]);
    expect(describeConfig(config).find((row) => row.key === 'server.api_keys')?.value).toBe(
      '****:org:acme runs:read memory:read, ****:acme',
    );
    for (const [entry, reason] of [
      ['key-secret-1:acme runs:admin', 'entry 1 has an unknown scope "runs:admin"; the scopes are runs:read, '],
      ['key-secret-1:bad tenant', 'entry 1 has an unknown scope "tenant"'],
      ['key-secret-1:acme runs:read runs:read', 'entry 1 names the scope runs:read twice'],
    ] as const) {
      const error = configErrorOf(() => load({ HARNESS_API_KEYS: entry }));
      expect(error).toMatchObject({ key: 'server.api_keys', source: 'env:HARNESS_API_KEYS' });
      expect(error.message).toContain(reason);
      expect(error.message).not.toContain('secret');
    }
  });

  it('reads the env-only secrets and the OpenAI settings', () => {
    const config = load({
      HARNESS_MEMORY_LLM_API_KEY: 'memory-secret',
      OPENAI_API_KEY: 'openai-secret',
      OPENAI_BASE_URL: 'https://proxy.example/v1',
    });
    expect(config.memory.llmApiKey).toBe('memory-secret');
    expect(config.openai).toEqual({ apiKey: 'openai-secret', baseUrl: 'https://proxy.example/v1' });
    expect(config.memory.llmBaseUrl).toBe('');
  });

  it(
    'reads tool_importance_cap from a file and HARNESS_MEMORY_TOOL_IMPORTANCE_CAP, the variable winning ' +
      '(issue 12)',
    () => {
      const file = writeConfig(workspace, '[memory]\ntool_importance_cap = 0.4\n');
      expect(load().memory.toolImportanceCap).toBe(0.4);
      expect(load().sources['memory.tool_importance_cap']).toBe(file);
      const fromEnv = load({ HARNESS_MEMORY_TOOL_IMPORTANCE_CAP: '.25' });
      expect(fromEnv.memory.toolImportanceCap).toBe(0.25);
      expect(fromEnv.sources['memory.tool_importance_cap']).toBe('env:HARNESS_MEMORY_TOOL_IMPORTANCE_CAP');
    },
  );

  it.each([
    ['1e-1', 0.1],
    ['2.5E-1', 0.25],
    ['+5e-1', 0.5],
  ])('reads HARNESS_MEMORY_TOOL_IMPORTANCE_CAP=%s in exponent form, as a TOML float may be written', (value, cap) => {
    expect(load({ HARNESS_MEMORY_TOOL_IMPORTANCE_CAP: value }).memory.toolImportanceCap).toBe(cap);
  });

  it.each(['1.5', '-0.1', 'high', '1e', 'e-1', '1e1'])('rejects HARNESS_MEMORY_TOOL_IMPORTANCE_CAP=%s', (value) => {
    const error = configErrorOf(() => load({ HARNESS_MEMORY_TOOL_IMPORTANCE_CAP: value }));
    expect(error).toMatchObject({
      key: 'memory.tool_importance_cap',
      source: 'env:HARNESS_MEMORY_TOOL_IMPORTANCE_CAP',
    });
    expect(error.message).toContain('must be a number from 0 to 1');
  });

  it('hands the token thresholds to the core with tokenConfigFrom', () => {
    writeConfig(workspace, '[memory]\nsnippet_max_tokens = 700\n');
    expect(tokenConfigFrom(load())).toEqual({
      observeMinTokens: 1200,
      snippetMaxTokens: 700,
      reflectThresholdTokens: 4000,
    });
  });

  it('returns a deeply frozen result', () => {
    writeConfig(
      workspace,
      '[server]\napi_keys = ["key-one:tenant-a"]\n[providers.openrouter]\nbase_url = "https://o"\n',
    );
    const config = load();
    for (const part of [
      config,
      config.memory,
      config.server,
      config.server.apiKeys,
      config.server.apiKeys[0],
      config.providers,
      config.providers['openrouter'],
      config.sources,
    ]) {
      expect(Object.isFrozen(part)).toBe(true);
    }
    expect(() => {
      (config.memory as { observeMinTokens: number }).observeMinTokens = 1;
    }).toThrow(TypeError);
  });
});

describe('config: errors', () => {
  it('names the file and the line of malformed TOML', () => {
    const file = writeConfig(workspace, '[memory]\nmode = "auto"\nobserve_min_tokens = \n');
    const error = configErrorOf(() => load());
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.source).toBe(file);
    expect(error.message).toContain(file);
    expect(error.message).toContain('line 3');
  });

  it('keeps only the line, column and reason of a TOML syntax error, never the lines around it', () => {
    writeConfig(workspace, '[server]\napi_keys = ["Xq7mZp2Lk9Rw4Tn8Vb3:acme",\n  "Hs6Jd1Kf5Gl0Qa:beta" "oops"]\n');
    const error = configErrorOf(() => load());
    expect(error.key).toBe('(syntax)');
    expect(error.cause).toEqual({ line: 3, column: expect.any(Number), reason: expect.any(String) });
    const shown = inspect(error, { depth: 10 });
    expect(shown).not.toContain('Hs6Jd1Kf5Gl0Qa');
    expect(shown).not.toContain('Xq7mZp2Lk9Rw4Tn8Vb3');
  });

  it('rejects an unknown section, naming the file and the section', () => {
    const file = writeConfig(home, '[memroy]\nmode = "off"\n');
    const error = configErrorOf(() => load());
    expect(error).toMatchObject({ key: 'memroy', source: file });
    expect(error.message).toContain('unknown section');
  });

  it('rejects an unknown key, naming the file, the dotted key and the known keys', () => {
    const file = writeConfig(workspace, '[memory]\nobserve_min_token = 10\n');
    const error = configErrorOf(() => load());
    expect(error).toMatchObject({ key: 'memory.observe_min_token', source: file });
    expect(error.message).toContain('observe_min_tokens');
  });

  it('rejects an unknown key inside a provider table', () => {
    writeConfig(workspace, '[providers.openrouter]\nbase_url = "https://o"\nbaseurl = "x"\n');
    expect(configErrorOf(() => load()).key).toBe('providers.openrouter.baseurl');
  });

  it('rejects a secret in a file and points to the environment', () => {
    writeConfig(workspace, '[memory]\nllm_api_key = "sk-123"\n');
    const error = configErrorOf(() => load());
    expect(error.key).toBe('memory.llm_api_key');
    expect(error.message).toContain('HARNESS_MEMORY_LLM_API_KEY');
  });

  it('takes a token setting of 0 for its default, as the reference does, in a file or the environment', () => {
    writeConfig(workspace, '[memory]\nobserve_min_tokens = 0\nsnippet_max_tokens = 300\n');
    const config = load({ HARNESS_MEMORY_SNIPPET_MAX_TOKENS: '0', HARNESS_MEMORY_REFLECT_THRESHOLD_TOKENS: '0' });
    expect(config.memory).toMatchObject({
      observeMinTokens: 1200,
      snippetMaxTokens: 900,
      reflectThresholdTokens: 4000,
    });
  });

  it('reads the boolean spellings of Go too (t, f), as the reference does', () => {
    expect(load({ HARNESS_MEMORY_DEFAULT_ENABLED: 'T' }).memory.defaultEnabled).toBe(true);
    expect(load({ HARNESS_MEMORY_REDACT_SECRETS: 'f' }).memory.redactSecrets).toBe(false);
  });

  it.each(['-5', '1.5', '"1200"'])('rejects observe_min_tokens = %s in a file instead of replacing it', (value) => {
    const file = writeConfig(workspace, `[memory]\nobserve_min_tokens = ${value}\n`);
    const error = configErrorOf(() => load());
    expect(error).toMatchObject({ key: 'memory.observe_min_tokens', source: file });
    expect(error.message).toContain('must be a positive integer');
  });

  it('rejects a snippet_max_tokens above 32000', () => {
    const error = configErrorOf(() => load({ HARNESS_MEMORY_SNIPPET_MAX_TOKENS: '32001' }));
    expect(error).toMatchObject({ key: 'memory.snippet_max_tokens' });
    expect(error.message).toContain('must be at most 32000');
    expect(load({ HARNESS_MEMORY_SNIPPET_MAX_TOKENS: '32000' }).memory.snippetMaxTokens).toBe(32_000);
  });

  it.each(['-5', '1.5', 'many'])('rejects HARNESS_MEMORY_REFLECT_THRESHOLD_TOKENS=%s', (value) => {
    const error = configErrorOf(() => load({ HARNESS_MEMORY_REFLECT_THRESHOLD_TOKENS: value }));
    expect(error).toMatchObject({
      key: 'memory.reflect_threshold_tokens',
      source: 'env:HARNESS_MEMORY_REFLECT_THRESHOLD_TOKENS',
    });
    expect(error.message).toContain('must be a positive integer');
  });

  it('rejects a boolean variable that is not a boolean word', () => {
    const error = configErrorOf(() => load({ HARNESS_MEMORY_REDACT_SECRETS: 'maybe' }));
    expect(error).toMatchObject({ key: 'memory.redact_secrets', source: 'env:HARNESS_MEMORY_REDACT_SECRETS' });
    expect(error.message).toContain('true, false, 1, 0, yes, no, on, off');
  });

  it('rejects a wrongly typed value in a file', () => {
    writeConfig(workspace, '[forensics]\ncapture_request_envelope = "yes"\n');
    expect(configErrorOf(() => load()).key).toBe('forensics.capture_request_envelope');
  });

  it('rejects an unknown enum value and lists the allowed ones', () => {
    const file = writeConfig(workspace, '[memory]\ndb_driver = "mysql"\n');
    const error = configErrorOf(() => load());
    expect(error).toMatchObject({ key: 'memory.db_driver', source: file });
    expect(error.message).toContain('sqlite, postgres');
    rmSync(file);
    const fromEnv = configErrorOf(() => load({ HARNESS_MEMORY_LLM_MODE: 'anthropic' }));
    expect(fromEnv).toMatchObject({ key: 'memory.llm_mode', source: 'env:HARNESS_MEMORY_LLM_MODE' });
    expect(fromEnv.message).toContain('inherit, openai, provider');
  });

  it('rejects a port outside 0 to 65535, and takes 0 for a free port as --port 0 does', () => {
    for (const port of ['70000', '-1', '80.5'])
      expect(configErrorOf(() => load({ HARNESS_PORT: port })).message, port).toContain(
        'must be an integer from 0 to 65535',
      );
    expect(load({ HARNESS_PORT: '0' }).server.port).toBe(0);
  });

  it('warns of an unknown HARNESS_ variable, naming the nearest known one, and loads the rest', () => {
    const warnings: string[] = [];
    const config = loadConfig({
      homeDir: home,
      workspace,
      env: {
        HARNESS_MEMORY_OBSERVE_MIN: '10',
        HARNESS_MEMORY_DIR: '/tmp/x',
        HARNESS_PROT: '9000',
        HARNESS_MEMORY_SNIPPET_MAX_TOKENS: '900',
        HARNESS_TEST_POSTGRES_URL: 'postgres://x',
      },
      onWarning: (message) => warnings.push(message),
    });
    expect(config.memory.snippetMaxTokens).toBe(900);
    expect(warnings).toEqual([
      expect.stringMatching(
        /^HARNESS_MEMORY_DIR is not a harness variable and is ignored; did you mean HARNESS_MEMORY_\w+\?$/,
      ),
      'HARNESS_MEMORY_OBSERVE_MIN is not a harness variable and is ignored; did you mean ' +
        'HARNESS_MEMORY_OBSERVE_MIN_TOKENS?',
      'HARNESS_PROT is not a harness variable and is ignored; did you mean HARNESS_PORT?',
    ]);
  });

  it("says nothing of a blank unknown variable, HARNESS_WORKSPACE or the test suite's HARNESS_TEST_ variables", () => {
    const warnings: string[] = [];
    loadConfig({
      homeDir: home,
      workspace,
      env: { HARNESS_UNUSED: ' ', HARNESS_WORKSPACE: workspace, HARNESS_TEST_X: '1' },
      onWarning: (message) => warnings.push(message),
    });
    expect(warnings).toEqual([]);
  });

  it.each(['no-colon-secret', ':tenant-a', 'key-secret:'])(
    'rejects the api key entry %j without echoing it',
    (entry) => {
      const file = writeConfig(workspace, `[server]\napi_keys = ["good-key:tenant", ${JSON.stringify(entry)}]\n`);
      const error = configErrorOf(() => load());
      expect(error).toMatchObject({ key: 'server.api_keys', source: file });
      expect(error.message).toContain('entry 2');
      expect(error.message).not.toContain('secret');
    },
  );

  it.each([
    ['key-secret-1:../etc', 'tenant_id may contain only letters, digits and . _ : @ -'],
    ['key-secret-1:bad/tenant', 'tenant_id may contain only letters, digits and . _ : @ -'],
    ['key-secret-1:..', 'tenant_id must not be "." or ".."'],
    [`key-secret-1:${'t'.repeat(129)}`, 'tenant_id is 129 characters long; at most 128 are allowed'],
  ])('rejects the api key entry %j, whose tenant is not a scope id, without echoing the key', (entry, reason) => {
    const file = writeConfig(workspace, `[server]\napi_keys = ["good-key:tenant", ${JSON.stringify(entry)}]\n`);
    const error = configErrorOf(() => load());
    expect(error).toMatchObject({ key: 'server.api_keys', source: file });
    expect(error.message).toContain(`entry 2 has an invalid tenant id: ${reason}`);
    expect(error.message).not.toContain('secret');
    rmSync(file);
    const fromEnv = configErrorOf(() => load({ HARNESS_API_KEYS: entry }));
    expect(fromEnv).toMatchObject({ key: 'server.api_keys', source: 'env:HARNESS_API_KEYS' });
    expect(fromEnv.message).toContain('entry 1 has an invalid tenant id');
  });

  it.each([['clé-secret:acme'], ['ключ-secret:acme'], ['two secret:acme']])(
    'rejects the api key entry %j, whose key no HTTP header carries, without echoing the key',
    (entry) => {
      const error = configErrorOf(() => load({ HARNESS_API_KEYS: `good-key:acme,${entry}` }));
      expect(error).toMatchObject({ key: 'server.api_keys', source: 'env:HARNESS_API_KEYS' });
      expect(error.message).toContain('entry 2: the key may hold only visible ASCII characters');
      expect(error.message).not.toContain('secret');
    },
  );

  it('ends the key at the first colon of an entry, since a key cannot hold one', () => {
    expect(load({ HARNESS_API_KEYS: 'abc:def:acme' }).server.apiKeys).toEqual([{ key: 'abc', tenantId: 'def:acme' }]);
  });

  it('accepts a tenant id with the scope-id punctuation', () => {
    expect(load({ HARNESS_API_KEYS: 'key-one:acme.eu_1:team@x-y' }).server.apiKeys).toEqual([
      { key: 'key-one', tenantId: 'acme.eu_1:team@x-y' },
    ]);
  });

  it('rejects a blank [server] host, which would listen on every interface', () => {
    const file = writeConfig(workspace, '[server]\nhost = "  "\n');
    const error = configErrorOf(() => load());
    expect(error).toMatchObject({ key: 'server.host', source: file });
    expect(error.message).toContain('must not be blank');
    rmSync(file);
    expect(load({ HARNESS_HOST: ' ' }).server.host).toBe('127.0.0.1');
  });

  it('rejects a bad api key entry in HARNESS_API_KEYS', () => {
    const error = configErrorOf(() => load({ HARNESS_API_KEYS: 'key-one:tenant-a,key-two' }));
    expect(error).toMatchObject({ key: 'server.api_keys', source: 'env:HARNESS_API_KEYS' });
  });

  it('rejects a provider without base_url and a badly named provider', () => {
    const file = writeConfig(workspace, '[providers.openrouter]\nmodel = "x"\n');
    expect(configErrorOf(() => load())).toMatchObject({ key: 'providers.openrouter.base_url', source: file });
    writeConfig(workspace, '[providers.Open_Router]\nbase_url = "https://o"\n');
    expect(configErrorOf(() => load()).key).toBe('providers.Open_Router');
  });
});

describe('config: memory enabled', () => {
  it('turns memory off with [memory] enabled = false, as mode = "off" does', () => {
    const file = writeConfig(workspace, '[memory]\nenabled = false\n');
    const config = load();
    expect(config.memory).toMatchObject({ enabled: false, mode: 'off' });
    expect(config.sources['memory.mode']).toBe(file);
    writeConfig(workspace, '[memory]\nenabled = false\nmode = "auto"\n');
    expect(load().memory.mode).toBe('off');
    writeConfig(workspace, '[memory]\nenabled = false\nmode = "off"\n');
    expect(load().memory).toMatchObject({ enabled: false, mode: 'off' });
  });

  it('reads HARNESS_MEMORY_ENABLED, which overrides the file', () => {
    writeConfig(workspace, '[memory]\nenabled = false\n');
    expect(load({ HARNESS_MEMORY_ENABLED: 'true' }).memory).toMatchObject({ enabled: true, mode: 'auto' });
    rmSync(join(workspace, '.harness', 'config.toml'));
    const off = load({ HARNESS_MEMORY_ENABLED: 'false' });
    expect(off.memory).toMatchObject({ enabled: false, mode: 'off' });
    expect(off.sources['memory.mode']).toBe('env:HARNESS_MEMORY_ENABLED');
  });

  it('keeps the mode when enabled is true', () => {
    writeConfig(workspace, '[memory]\nenabled = true\nmode = "local_coordinator"\n');
    expect(load().memory).toMatchObject({ enabled: true, mode: 'local_coordinator' });
  });

  it('refuses enabled = false with an explicit mode = "local_coordinator", naming both keys', () => {
    const homeFile = writeConfig(home, '[memory]\nenabled = false\n');
    writeConfig(workspace, '[memory]\nmode = "auto"\n');
    expect(load().memory.mode).toBe('off');
    const error = configErrorOf(() => load({ HARNESS_MEMORY_MODE: 'local_coordinator' }));
    expect(error).toMatchObject({ code: 'CONFIG_INVALID', key: 'memory.enabled', source: homeFile });
    expect(error.message).toContain('memory.enabled');
    expect(error.message).toContain('memory.mode');
    expect(error.message).toContain('env:HARNESS_MEMORY_MODE');
  });

  it('shows the mode as off because of enabled in describeConfig', () => {
    const file = writeConfig(workspace, '[memory]\nenabled = false\n');
    const rows = describeConfig(load());
    expect(rows).toContainEqual({ key: 'memory.enabled', value: 'false', source: file });
    expect(rows).toContainEqual({ key: 'memory.mode', value: 'off (memory.enabled = false)', source: file });
  });
});

describe('config: describeConfig', () => {
  it('lists every setting with its value and source', () => {
    const file = writeConfig(
      workspace,
      '[memory]\nobserve_min_tokens = 3000\n[providers.openrouter]\nbase_url = "https://o"\n',
    );
    const rows = describeConfig(load({ HARNESS_MEMORY_MODE: 'off' }));
    expect(rows).toContainEqual({ key: 'memory.observe_min_tokens', value: '3000', source: file });
    expect(rows).toContainEqual({ key: 'memory.mode', value: 'off', source: 'env:HARNESS_MEMORY_MODE' });
    expect(rows).toContainEqual({
      key: 'memory.sqlite_path',
      value: join(workspace, '.harness', 'state.db'),
      source: 'default',
    });
    expect(rows).toContainEqual({ key: 'providers.openrouter.base_url', value: 'https://o', source: file });
    expect(rows.map((row) => row.key)).toContain('forensics.snapshot_memory_snippet');
  });

  it('masks secrets and shows empty ones as unset', () => {
    writeConfig(workspace, '[memory]\ndb_dsn = "postgres://harness:db-password-9876@db.local/harness"\n');
    const config = load({
      OPENAI_API_KEY: 'sk-openai-0123456789abcd',
      HARNESS_API_KEYS: 'server-key-000011112222:tenant-a',
    });
    const rows = describeConfig(config);
    const value = (key: string): string | undefined => rows.find((row) => row.key === key)?.value;
    expect(value('openai.api_key')).toBe('****abcd');
    expect(value('memory.llm_api_key')).toBe('(unset)');
    expect(value('server.api_keys')).toBe('****2222:tenant-a');
    expect(value('memory.db_dsn')).toBe('postgres://harness:****9876@db.local/harness');
    const keyword = describeConfig(load({ HARNESS_MEMORY_DB_DSN: 'host=db password=another-secret-4321 dbname=x' }));
    expect(keyword.find((row) => row.key === 'memory.db_dsn')?.value).toBe('host=db password=****4321 dbname=x');
    expect(JSON.stringify(rows)).not.toContain('0123456789');
  });
});
