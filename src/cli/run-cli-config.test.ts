import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useCliWorkspaces } from '../../test/support/cli-workspaces.js';
import { runCli } from './run-cli.js';

const workspaceWith = useCliWorkspaces('hm-cli-config-');

/** Runs the CLI in-process, with no model server: these commands must not need one. */
async function cli(
  argv: string[],
  options: { env?: Record<string, string>; workspace?: string; signal?: AbortSignal } = {},
) {
  const workspace = options.workspace ?? workspaceWith();
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    env: { HARNESS_WORKSPACE: workspace, OPENAI_API_KEY: 'test', ...options.env },
    stdout: { write: (chunk: string) => (stdout += chunk) },
    stderr: { write: (chunk: string) => (stderr += chunk) },
    cwd: workspace,
    homeDir: workspace,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  return { code, stdout, stderr, workspace };
}

describe('harness: base urls', () => {
  it.each([['config'], ['wm list'], ['memory status']])(
    'harness %s exits 78 naming OPENAI_BASE_URL when it is not an http(s) URL, and hides its password',
    async (command) => {
      const argv = command === 'config' ? ['config'] : [...command.split(' '), '--conversation', 'c1'];
      const result = await cli(argv, { env: { OPENAI_BASE_URL: 'ftp://user:hunter2@files.example/v1' } });
      expect(result.code).toBe(78);
      expect(result.stderr).toBe(
        'harness: configuration: env:OPENAI_BASE_URL: openai.base_url: uses ftp:, not http: or https:; it must be ' +
          'an absolute http:// or https:// URL with a host, such as https://api.openai.com/v1\n',
      );
    },
  );

  it('harness config names the file and key of a bad [model] base_url', async () => {
    const workspace = workspaceWith('[model]\nbase_url = "not a url"\n');
    const result = await cli(['config'], { workspace });
    expect(result.code).toBe(78);
    expect(result.stderr).toContain(
      `harness: configuration: ${join(workspace, '.harness', 'config.toml')}: model.base_url: is not a URL`,
    );
  });
});

describe('harness: postgres settings', () => {
  it('exits 78 naming memory.schema for a bad schema name, before opening the store', async () => {
    const workspace = workspaceWith(
      '[memory]\ndb_driver = "postgres"\ndb_dsn = "postgres://harness@127.0.0.1:9/harness"\nschema = "Bad-Name"\n',
    );
    const result = await cli(['wm', 'list', '--conversation', 'c1'], { workspace });
    expect(result.code).toBe(78);
    expect(result.stderr).toMatch(/^harness: configuration: \S+config\.toml: memory\.schema: must match /);
  });

  it('exits 78 naming memory.db_dsn for a DSN that is not a postgres:// URL, without echoing it', async () => {
    const workspace = workspaceWith('[memory]\ndb_driver = "postgres"\ndb_dsn = "host=db password=db-secret"\n');
    for (const argv of [['config'], ['wm', 'list', '--conversation', 'c1']]) {
      const result = await cli(argv, { workspace });
      expect(result.code).toBe(78);
      expect(result.stderr).toMatch(/^harness: configuration: \S+config\.toml: memory\.db_dsn: is not a postgres:\/\//);
      expect(result.stderr).not.toContain('db-secret');
    }
  });
});

describe('harness: secrets in output', () => {
  it.each([
    [
      'db_dsn = "postgres://harness:pg-hunter2-secret@db/harness"',
      'postgres://harness:[REDACTED:url_password]@db',
      'hunter2',
    ],
    ['db_dsn = "host=db password=keyword-secret"', 'password=****', 'keyword-secret'],
    [
      'llm_base_url = "https://bot:secret-of-bot@llm.example/v1"',
      'https://bot:[REDACTED:url_password]@llm',
      'secret-of-bot',
    ],
    ['llm_model = "sk-proj-abcdefghijklmnopqrstuvwx"', '[REDACTED:openai_key]', 'abcdefghijkl'],
  ])('--verbose on a TOML error after %s shows no line of the file (no %s, no %s)', async (line, shown, secret) => {
    const workspace = workspaceWith(`[memory]\n${line}\nobserve_min_tokens = \n`);
    const result = await cli(['--verbose', 'config'], { workspace });
    expect(result.code).toBe(78);
    expect(result.stderr).toContain('is not valid TOML at line 3');
    expect(result.stderr).not.toContain('Caused by');
    expect(result.stderr).not.toContain(line.split(' = ')[0] + ' = ');
    expect(result.stderr).not.toContain(shown);
    expect(result.stderr).not.toContain(secret);
  });

  it.each([
    ['config', ['config']],
    ['config --json', ['config', '--json']],
    ['serve', ['serve', '--port', '0']],
  ])('harness %s refuses a base URL holding a password, naming the key, never the password', async (_, args) => {
    const result = await cli(args, {
      env: { OPENAI_BASE_URL: 'https://user:url-password-1234@remote.example/v1', OPENAI_API_KEY: '' },
      signal: AbortSignal.abort(),
    });
    expect(result.code).toBe(78);
    expect(result.stderr).toContain('env:OPENAI_BASE_URL: openai.base_url: holds a user name or password');
    expect(result.stderr + result.stdout).not.toContain('url-password');
  });
});

describe('harness serve: host', () => {
  it.each(['', '  '])('refuses --host %j as bad usage naming --host, even with API keys', async (host) => {
    const result = await cli(['serve', '--host', host, '--port', '0'], {
      env: { HARNESS_API_KEYS: 'server-key-1:tenant-a' },
      signal: AbortSignal.abort(),
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^harness: option '--host <host>' argument '\s*' is invalid\. .*must not be blank/);
    expect(result.stdout).toBe('');
  });
});

describe('harness: memory enabled = false', () => {
  it('turns memory off as mode = "off" does', async () => {
    const status = ['memory', 'status', '--conversation', 'c1', '--format', 'json'];
    const disabled = await cli(status, { workspace: workspaceWith('[memory]\nenabled = false\n') });
    const off = await cli(status, { env: { HARNESS_MEMORY_MODE: 'off' } });
    expect(disabled.code).toBe(0);
    expect(JSON.parse(disabled.stdout)).toMatchObject({ status: { mode: 'off', enabled: false } });
    expect(JSON.parse(disabled.stdout)).toEqual(JSON.parse(off.stdout));
    const enable = await cli(['memory', 'enable', '--conversation', 'c1'], {
      workspace: workspaceWith('[memory]\nenabled = false\n'),
    });
    const enableOff = await cli(['memory', 'enable', '--conversation', 'c1'], { env: { HARNESS_MEMORY_MODE: 'off' } });
    expect(enable).toMatchObject({ code: 1, stderr: enableOff.stderr });
    expect(enable.stderr).toContain('observational memory is disabled by mode');
  });

  it('harness config shows it plainly, and refuses it with mode = "local_coordinator" (78)', async () => {
    const workspace = workspaceWith('[memory]\nenabled = false\n');
    const shown = await cli(['config'], { workspace });
    expect(shown.stdout).toMatch(/^memory\.enabled\s+false\s+\S+config\.toml$/m);
    expect(shown.stdout).toMatch(/^memory\.mode\s+off \(memory\.enabled = false\)\s+\S+config\.toml$/m);
    const refused = await cli(['config'], { workspace, env: { HARNESS_MEMORY_MODE: 'local_coordinator' } });
    expect(refused.code).toBe(78);
    expect(refused.stderr).toMatch(
      /^harness: configuration: \S+config\.toml: memory\.enabled: is false, .*memory\.mode is "local_coordinator" \(env:HARNESS_MEMORY_MODE\)/,
    );
  });
});
