import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useCliWorkspaces } from '../../test/support/cli-workspaces.js';
import { runCli } from './run-cli.js';

const workspaceWith = useCliWorkspaces('hm-cli-checks-');

/**
 * Runs the CLI in-process with no model server. `env` replaces the default environment
 * (`HARNESS_WORKSPACE` and a placeholder `OPENAI_API_KEY`) when `replaceEnv` is set.
 */
async function cli(
  argv: string[],
  options: { env?: Record<string, string>; workspace?: string; replaceEnv?: boolean } = {},
) {
  const workspace = options.workspace ?? workspaceWith();
  let stdout = '';
  let stderr = '';
  const base = options.replaceEnv ? {} : { HARNESS_WORKSPACE: workspace, OPENAI_API_KEY: 'test' };
  const code = await runCli(argv, {
    env: { ...base, ...options.env },
    stdout: { write: (chunk: string) => (stdout += chunk) },
    stderr: { write: (chunk: string) => (stderr += chunk) },
    cwd: workspace,
    homeDir: workspace,
  });
  return { code, stdout, stderr, workspace };
}

const WM_LIST = ['wm', 'list', '--conversation', 'c1'];

describe('harness: [providers.NAME] api_key_env', () => {
  it('refuses an API key pasted in place of the variable name (78), never quoting it', async () => {
    const workspace = workspaceWith(
      '[model]\nprovider = "x"\n[providers.x]\nbase_url = "https://x.example/v1"\n' +
        'api_key_env = "sk-proj-abcdefghijklmnop1234"\n',
    );
    for (const argv of [['config'], WM_LIST, ['serve', '--port', '0']]) {
      const result = await cli(argv, { workspace });
      expect(result.code).toBe(78);
      expect(result.stderr).toBe(
        `harness: configuration: ${join(workspace, '.harness', 'config.toml')}: providers.x.api_key_env: looks ` +
          'like an API key itself; put the key in an environment variable and name that variable here\n',
      );
      expect(result.stdout).toBe('');
    }
  });

  it('refuses a value that is not an environment variable name, without quoting it', async () => {
    for (const value of ['my key', '1ST_KEY', 'OPENAI-KEY']) {
      const workspace = workspaceWith(`[providers.x]\nbase_url = "https://x.example/v1"\napi_key_env = "${value}"\n`);
      const result = await cli(['config'], { workspace });
      expect(result.code).toBe(78);
      expect(result.stderr).toContain(
        'providers.x.api_key_env: must name an environment variable (letters, digits and underscores, not ' +
          'starting with a digit)',
      );
      expect(result.stderr).not.toContain(value);
    }
  });

  it('accepts a variable name and shows it', async () => {
    const workspace = workspaceWith('[providers.x]\nbase_url = "https://x.example/v1"\napi_key_env = "X_API_KEY_2"\n');
    const result = await cli(['config'], { workspace });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^providers\.x\.api_key_env\s+X_API_KEY_2\s/m);
  });
});

describe('harness: a DSN password holding a slash', () => {
  it('is masked whole by harness config', async () => {
    const result = await cli(['config'], { env: { HARNESS_MEMORY_DB_DSN: 'postgres://u:Sup3r/S3cretPw@h/db' } });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^memory\.db_dsn\s+postgres:\/\/u:\*\*\*\*etPw@h\/db\s/m);
    expect(result.stdout).not.toContain('Sup3r');
  });

  it('is not shown by --verbose for a TOML syntax error, which names the place but no line of the file', async () => {
    const workspace = workspaceWith('[memory]\ndb_dsn = "postgres://u:Sup3r/S3cretPw@h/db"\nobserve_min_tokens = \n');
    const result = await cli(['--verbose', 'config'], { workspace });
    expect(result.code).toBe(78);
    expect(result.stderr).toContain('is not valid TOML at line 3, column 22');
    expect(result.stderr).not.toContain('Caused by');
    expect(result.stderr).not.toContain('db_dsn = ');
    expect(result.stderr).not.toContain('Sup3r');
    expect(result.stderr).not.toContain('S3cret');
  });
});

describe('harness: memory.stale_operation_seconds', () => {
  it('refuses more than 2147483 seconds at load (78), naming the setting and the variable', async () => {
    const result = await cli(WM_LIST, { env: { HARNESS_MEMORY_STALE_OPERATION_SECONDS: '5000000' } });
    expect(result.code).toBe(78);
    expect(result.stderr).toBe(
      'harness: configuration: env:HARNESS_MEMORY_STALE_OPERATION_SECONDS: memory.stale_operation_seconds: must ' +
        'be a whole number of seconds from 1 to 2147483 (about 24 days) (got 5000000)\n',
    );
  });

  it('accepts 2147483 seconds', async () => {
    const result = await cli(WM_LIST, { env: { HARNESS_MEMORY_STALE_OPERATION_SECONDS: '2147483' } });
    expect(result.code).toBe(0);
  });
});

describe('harness: the workspace', () => {
  it('must exist: a mistyped HARNESS_WORKSPACE is 78 naming it, and nothing is created', async () => {
    const root = workspaceWith();
    const typo = join(root, 'typo', 'deeper');
    const result = await cli(WM_LIST, { workspace: root, env: { HARNESS_WORKSPACE: typo } });
    expect(result.code).toBe(78);
    expect(result.stderr).toBe(
      `harness: configuration: env:HARNESS_WORKSPACE: workspace: ${typo} does not exist; create the folder, or ` +
        'set HARNESS_WORKSPACE to an existing one\n',
    );
    expect(existsSync(join(root, 'typo'))).toBe(false);
  });

  it('must be a folder: a file is 78 naming it', async () => {
    const root = workspaceWith();
    const file = join(root, 'not-a-folder');
    writeFileSync(file, 'x');
    const result = await cli(['config'], { workspace: root, env: { HARNESS_WORKSPACE: file } });
    expect(result.code).toBe(78);
    expect(result.stderr).toBe(
      `harness: configuration: env:HARNESS_WORKSPACE: workspace: ${file} is a file, not a folder; set ` +
        'HARNESS_WORKSPACE to a folder\n',
    );
  });

  it('gets its .harness folder created when it exists', async () => {
    const result = await cli(WM_LIST);
    expect(result.code).toBe(0);
    expect(existsSync(join(result.workspace, '.harness', 'state.db'))).toBe(true);
  });

  it('refuses a sqlite_path starting with ~ (78): it is not expanded', async () => {
    const result = await cli(WM_LIST, { env: { HARNESS_MEMORY_SQLITE_PATH: '~/state.db' } });
    expect(result.code).toBe(78);
    expect(result.stderr).toBe(
      'harness: configuration: env:HARNESS_MEMORY_SQLITE_PATH: memory.sqlite_path: starts with ~, which is not ' +
        'expanded here: give an absolute path, or one relative to the workspace (got "~/state.db")\n',
    );
    expect(existsSync(join(result.workspace, '~'))).toBe(false);
  });

  it('names memory.sqlite_path when the folder of the SQLite file cannot be made', async () => {
    const workspace = workspaceWith();
    writeFileSync(join(workspace, '.harness'), 'a file where the folder goes');
    const result = await cli(WM_LIST, { workspace });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(
        `^harness: Cannot create the folder ${join(workspace, '.harness')} for the SQLite file ` +
          `${join(workspace, '.harness', 'state.db')} \\(EEXIST\\)\\. Set memory\\.sqlite_path ` +
          `\\(HARNESS_MEMORY_SQLITE_PATH; now default\\) to a path in a folder this process can write\\.\n$`,
      ),
    );
  });

  it.skipIf(process.getuid?.() === 0)('names memory.sqlite_path when the workspace is read-only', async () => {
    const workspace = workspaceWith();
    chmodSync(workspace, 0o555);
    try {
      const result = await cli(WM_LIST, { workspace });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('(EACCES). Set memory.sqlite_path (HARNESS_MEMORY_SQLITE_PATH; now default)');
    } finally {
      chmodSync(workspace, 0o755);
    }
  });
});

describe('harness: a Postgres DSN that is not a URL', () => {
  it.each([
    ['a port that is not a number', 'postgres://127.0.0.1:notaport/test', 'notaport'],
    ['a password holding a raw slash', 'postgres://u:Sup3r/S3cretPw@h/db', 'S3cret'],
    ['a password holding a stray percent-encoding', 'postgres://u:Xy%9Fq@h/db', 'Xy%9Fq'],
  ])('is refused at load (78) naming memory.db_dsn: %s', async (_, dsn, secret) => {
    const env = { HARNESS_MEMORY_DB_DRIVER: 'postgres', HARNESS_MEMORY_DB_DSN: dsn };
    for (const argv of [['config'], WM_LIST]) {
      const result = await cli(argv, { env });
      expect(result.code).toBe(78);
      expect(result.stderr).toMatch(
        /^harness: configuration: env:HARNESS_MEMORY_DB_DSN: memory\.db_dsn: is not a URL pg can read/,
      );
      expect(result.stderr).not.toContain(secret);
    }
  });

  it('accepts the Unix-socket form pg reads', async () => {
    const env = {
      HARNESS_MEMORY_DB_DRIVER: 'postgres',
      HARNESS_MEMORY_DB_DSN: 'postgres://user:pw@/db?host=/var/run/postgresql',
    };
    expect((await cli(['config'], { env })).code).toBe(0);
  });
});

describe('harness: small configuration messages', () => {
  it('quotes a token setting too large for a number as it was given', async () => {
    const result = await cli(['config'], { env: { HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '99999999999999999999' } });
    expect(result.code).toBe(78);
    expect(result.stderr).toContain('(got "99999999999999999999")');
  });

  it('writes the hint for a DSN that is not postgres:// so that masking leaves it readable', async () => {
    const env = { HARNESS_MEMORY_DB_DRIVER: 'postgres', HARNESS_MEMORY_DB_DSN: 'mysql://u:p@h/db' };
    const result = await cli(['config'], { env });
    expect(result.code).toBe(78);
    expect(result.stderr).toContain('write it as postgres://<user>:<password>@<host>:5432/<database>');
  });

  it('calls a top-level key a key, not a section, and names the section it belongs in', async () => {
    const steps = await cli(['config'], { workspace: workspaceWith('max_steps = 5\n') });
    expect(steps.code).toBe(78);
    expect(steps.stderr).toMatch(
      /: max_steps: unknown key at the top level; no section has it: remove it \(known sections: memory, /,
    );
    const tokens = await cli(['config'], { workspace: workspaceWith('observe_min_tokens = 5\n') });
    expect(tokens.code).toBe(78);
    expect(tokens.stderr).toMatch(/: observe_min_tokens: unknown key at the top level; it belongs in \[memory\]\n$/);
    const section = await cli(['config'], { workspace: workspaceWith('[cost]\nlimit = 1\n') });
    expect(section.stderr).toMatch(/: cost: unknown section \[cost\]; known sections: memory, /);
  });

  it('says the workspace is the current directory', async () => {
    const workspace = workspaceWith();
    const result = await cli(['config'], { workspace, replaceEnv: true });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^workspace\s+\S+\s+current directory$/m);
    const json = await cli(['config', '--json'], { workspace, replaceEnv: true });
    const rows = (JSON.parse(json.stdout) as { rows: Array<{ key: string; source: string }> }).rows;
    expect(rows.find((row) => row.key === 'workspace')?.source).toBe('current directory');
  });

  it('refuses HARNESS_API_KEYS that lists no key (78), naming it', async () => {
    const workspace = workspaceWith('[server]\napi_keys = ["file-key-1:acme"]\n');
    for (const value of [',', ' , ,']) {
      const result = await cli(['config'], { workspace, env: { HARNESS_API_KEYS: value } });
      expect(result.code).toBe(78);
      expect(result.stderr).toBe(
        'harness: configuration: env:HARNESS_API_KEYS: server.api_keys: lists no "key:tenant" entry; give at ' +
          'least one, or unset it to use the keys of the config file\n',
      );
    }
  });
});
