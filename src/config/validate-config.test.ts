import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, HarnessMemoryError } from '../core/errors.js';
import { validateSchemaName } from '../storage/postgres/postgres-connection.js';
import { configErrorOf, makeConfigDirs, writeConfigFile } from '../../test/support/config-files.js';
import { loadConfig, type HarnessConfig } from './load-config.js';

let root: string;
let home: string;
let workspace: string;

beforeEach(() => {
  ({ root, home, workspace } = makeConfigDirs('harness-validate-'));
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

const writeConfig = (toml: string): string => writeConfigFile(workspace, toml);

function load(env: Record<string, string> = {}): HarnessConfig {
  return loadConfig({ homeDir: home, workspace, env });
}

const BAD_URLS = [
  ['not a url', 'is not a URL'],
  ['ftp://user:hunter2@files.example/v1', 'uses ftp:, not http: or https:'],
  ['http://', 'is not a URL'],
  ['/v1/chat', 'is not a URL'],
  ['https://bot:hunter2@gateway.example/v1', 'holds a user name or password, which no request would carry'],
  ['https://gateway.example/v1?api-version=hunter2', 'holds a query string or fragment'],
] as const;

/** Where a base URL can be set: the key, the place, and how to set it there to `value`. */
const URL_SETTINGS: ReadonlyArray<
  readonly [string, string, (value: string) => { env?: Record<string, string>; toml?: string }]
> = [
  ['openai.base_url', 'OPENAI_BASE_URL', (value) => ({ env: { OPENAI_BASE_URL: value } })],
  ['memory.llm_base_url', 'HARNESS_MEMORY_LLM_BASE_URL', (value) => ({ env: { HARNESS_MEMORY_LLM_BASE_URL: value } })],
  ['memory.llm_base_url', 'a file', (value) => ({ toml: `[memory]\nllm_base_url = ${JSON.stringify(value)}\n` })],
  ['model.base_url', 'a file', (value) => ({ toml: `[model]\nbase_url = ${JSON.stringify(value)}\n` })],
  [
    'providers.local.base_url',
    'a file',
    (value) => ({ toml: `[providers.local]\nbase_url = ${JSON.stringify(value)}\n` }),
  ],
];

describe('config: base urls', () => {
  for (const [key, where, setting] of URL_SETTINGS) {
    it.each(BAD_URLS)(`rejects ${key} = %j from ${where} at load, naming the key and its source`, (value, reason) => {
      const { env = {}, toml } = setting(value);
      const file = toml === undefined ? undefined : writeConfig(toml);
      const error = configErrorOf(() => load(env));
      const source = file ?? `env:${Object.keys(env)[0]}`;
      expect(error).toMatchObject({ code: 'CONFIG_INVALID', key, source });
      expect(error.message).toContain(`${source}: ${key}: ${reason}`);
      expect(error.message).toContain('http:// or https://');
      expect(error.message).not.toContain('hunter2');
    });
  }

  it('accepts http and https URLs, trimmed, and takes a blank variable as unset', () => {
    writeConfig(
      '[model]\nbase_url = " http://127.0.0.1:11434/v1 "\n[providers.local]\nbase_url = "https://llm.local"\n',
    );
    const config = load({ OPENAI_BASE_URL: ' ', HARNESS_MEMORY_LLM_BASE_URL: 'https://proxy.example/v1' });
    expect(config.openai.baseUrl).toBe('');
    expect(config.model.baseUrl).toBe(' http://127.0.0.1:11434/v1 ');
    expect(config.memory.llmBaseUrl).toBe('https://proxy.example/v1');
    expect(config.providers['local']?.baseUrl).toBe('https://llm.local');
  });

  it('takes a blank base_url in [model] or [memory] as unset, but not in a provider table', () => {
    writeConfig('[model]\nbase_url = "  "\n[memory]\nllm_base_url = ""\n');
    expect(load().model.baseUrl).toBe('  ');
    const file = writeConfig('[providers.local]\nbase_url = "  "\n');
    const error = configErrorOf(() => load());
    expect(error).toMatchObject({ key: 'providers.local.base_url', source: file });
    expect(error.message).toContain('is blank');
  });
});

describe('config: postgres settings', () => {
  it.each(['Harness', 'my-schema', '1st', 'a'.repeat(64), ' harness'])(
    'rejects [memory] schema = %j, naming the key and the pattern',
    (schema) => {
      const file = writeConfig(`[memory]\nschema = ${JSON.stringify(schema)}\n`);
      const error = configErrorOf(() => load());
      expect(error).toMatchObject({ code: 'CONFIG_INVALID', key: 'memory.schema', source: file });
      expect(error.message).toContain('^[a-z_][a-z0-9_]{0,62}$');
    },
  );

  it.each([
    ['pg_harness', 'pg_'],
    ['pg_catalog', 'pg_'],
    ['information_schema', 'information_schema'],
  ])('refuses [memory] schema = %j, a name Postgres reserves, at load saying why', (schema, why) => {
    const file = writeConfig(`[memory]\nschema = ${JSON.stringify(schema)}\n`);
    const error = configErrorOf(() => load());
    expect(error).toMatchObject({ code: 'CONFIG_INVALID', key: 'memory.schema', source: file });
    expect(error.message).toContain(why);
    expect(error.message).toMatch(/Postgres/);
    rmSync(file);
    const fromEnv = configErrorOf(() =>
      load({
        HARNESS_MEMORY_DB_DRIVER: 'postgres',
        HARNESS_MEMORY_DB_DSN: 'postgres://u@127.0.0.1/db',
        HARNESS_MEMORY_SCHEMA: schema,
      }),
    );
    expect(fromEnv).toMatchObject({ key: 'memory.schema', source: 'env:HARNESS_MEMORY_SCHEMA' });
  });

  it.each(['pg_harness', 'information_schema'])(
    'the Postgres store refuses the schema option %j, saying why',
    (schema) => {
      expect(() => validateSchemaName(schema, 'postgres')).toThrow(/reserve|pg_dump/);
      expect(validateSchemaName('harness_pg_1', 'postgres')).toBe('harness_pg_1');
    },
  );

  it('rejects HARNESS_MEMORY_SCHEMA with a bad name, and accepts a good one or a blank one', () => {
    const error = configErrorOf(() => load({ HARNESS_MEMORY_SCHEMA: 'Bad.Name' }));
    expect(error).toMatchObject({ key: 'memory.schema', source: 'env:HARNESS_MEMORY_SCHEMA' });
    expect(load({ HARNESS_MEMORY_SCHEMA: 'harness_2' }).memory.schema).toBe('harness_2');
    expect(load({ HARNESS_MEMORY_SCHEMA: ' ' }).memory.schema).toBe('');
  });

  it.each([
    'public',
    'harness',
    '_x',
    'Harness',
    'my-schema',
    'a'.repeat(63),
    'a'.repeat(64),
    '',
    'pg_x',
    'pgx',
    'information_schema',
    'information_schema2',
  ])('agrees with the Postgres store on the schema name %j', (schema) => {
    const store = (() => {
      try {
        validateSchemaName(schema, 'postgres');
        return true;
      } catch (error) {
        if (HarnessMemoryError.isInstance(error) && error.code === 'OPTION_INVALID') return false;
        throw error;
      }
    })();
    const config = (() => {
      try {
        writeConfig(`[memory]\nschema = ${JSON.stringify(schema)}\n`);
        load();
        return true;
      } catch (error) {
        if (error instanceof ConfigError) return false;
        throw error;
      }
    })();
    // "" means "public" to the harness; the store itself is never given "".
    expect(config).toBe(schema === '' ? true : store);
  });

  it.each([
    ['not-a-url-secret', 'is not a postgres:// URL'],
    ['mysql://user:db-secret@db/x', 'is not a postgres:// URL'],
    ['host=db password=db-secret dbname=x', 'is not a postgres:// URL'],
  ])('rejects db_dsn = %j when db_driver is "postgres", without echoing it', (dsn, reason) => {
    const file = writeConfig(`[memory]\ndb_driver = "postgres"\ndb_dsn = ${JSON.stringify(dsn)}\n`);
    const error = configErrorOf(() => load());
    expect(error).toMatchObject({ code: 'CONFIG_INVALID', key: 'memory.db_dsn', source: file });
    expect(error.message).toContain(reason);
    expect(error.message).not.toContain('secret');
  });

  it('rejects db_driver = "postgres" without a DSN at load, naming both settings', () => {
    const error = configErrorOf(() => load({ HARNESS_MEMORY_DB_DRIVER: 'postgres' }));
    expect(error).toMatchObject({ key: 'memory.db_dsn', source: 'default' });
    expect(error.message).toContain('HARNESS_MEMORY_DB_DSN');
  });

  it('accepts postgres:// and postgresql:// DSNs, and any DSN with the SQLite driver', () => {
    expect(
      load({ HARNESS_MEMORY_DB_DRIVER: 'postgres', HARNESS_MEMORY_DB_DSN: 'postgres://u:p@db:5432/x' }).memory,
    ).toMatchObject({ dbDriver: 'postgres', dbDsn: 'postgres://u:p@db:5432/x' });
    const socket = 'postgresql:///harness?host=/var/run/postgresql';
    expect(load({ HARNESS_MEMORY_DB_DRIVER: 'postgres', HARNESS_MEMORY_DB_DSN: socket }).memory.dbDsn).toBe(socket);
    // A socket with credentials and no host: pg reads it, a WHATWG URL does not.
    const withCredentials = 'postgres://harness:pw@/harness?host=/var/run/postgresql';
    expect(load({ HARNESS_MEMORY_DB_DRIVER: 'postgres', HARNESS_MEMORY_DB_DSN: withCredentials }).memory.dbDsn).toBe(
      withCredentials,
    );
    expect(load({ HARNESS_MEMORY_DB_DSN: 'not a dsn' }).memory.dbDsn).toBe('not a dsn');
  });
});
