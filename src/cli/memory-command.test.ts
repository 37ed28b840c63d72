import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import { runCli } from './run-cli.js';
import { storeDeadOperation } from '../../test/support/dead-operation.js';

const directories: string[] = [];

afterAll(() => {
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

function newWorkspace(): string {
  const workspace = mkdtempSync(join(tmpdir(), 'hm-cli-memory-'));
  directories.push(workspace);
  return workspace;
}

async function cli(argv: string[], workspace = newWorkspace()) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    env: { HARNESS_WORKSPACE: workspace, OPENAI_API_KEY: 'test' },
    stdout: { write: (chunk: string) => (stdout += chunk) },
    stderr: { write: (chunk: string) => (stderr += chunk) },
    cwd: workspace,
    homeDir: workspace,
  });
  return { code, stdout, stderr };
}

/** A workspace whose scope `acme/c-dead/default` holds the dead operation `op-dead`. */
async function workspaceWithDeadOperation(): Promise<string> {
  const workspace = newWorkspace();
  const scope = { tenantId: 'acme', conversationId: 'c-dead', agentId: 'default' };
  const store = createSqliteStore({ path: join(workspace, '.harness', 'state.db') });
  await storeDeadOperation(store, scope, 'boom');
  await store.dispose();
  return workspace;
}

describe('harness memory: scope options', () => {
  // `--tenant "$T"` with `$T` unset once named the default tenant: a forget erased its conversation.
  it.each(['--tenant', '--agent'])('refuses a blank %s as bad usage (exit 2), for forget too', async (option) => {
    for (const blank of ['', '  ']) {
      const result = await cli(['memory', 'forget', '--conversation', 'c1', option, blank]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`${option} must not be blank`);
    }
  });
});

describe('harness memory enable: the snippet budget', () => {
  it('refuses --snippet-max-tokens over 32000 as bad usage naming the option (exit 2)', async () => {
    const result = await cli(['memory', 'enable', '--conversation', 'e1', '--snippet-max-tokens', '40000']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "harness: option '--snippet-max-tokens <n>' argument '40000' is invalid. --snippet-max-tokens must be an " +
        'integer from 1 to 32000 (got "40000")\n',
    );
  });

  it('refuses --config snippet_max_tokens over 32000 the same way', async () => {
    const result = await cli(['memory', 'enable', '--conversation', 'e1', '--config', 'snippet_max_tokens=40000']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'harness: --config snippet_max_tokens must be an integer from 1 to 32000 (got "40000")\n',
    );
  });

  it('takes 32000', async () => {
    const result = await cli(['memory', 'enable', '--conversation', 'e1', '--config', 'snippet_max_tokens=32000']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('snippet_max_tokens 32000');
  });
});

describe('harness memory enable: the observe and reflect thresholds', () => {
  it.each([
    ['--observe-min-tokens', '2000000', 1_000_000],
    ['--reflect-threshold-tokens', '200000', 100_000],
  ])('refuses %s %s as bad usage naming the option and its bound (exit 2)', async (option, value, max) => {
    const result = await cli(['memory', 'enable', '--conversation', 'e1', option, value]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `harness: option '${option} <n>' argument '${value}' is invalid. ${option} must be an integer from 1 to ` +
        `${max} (got "${value}")\n`,
    );
  });

  it.each([
    ['observe_min_tokens', '2000000', 1_000_000],
    ['reflect_threshold_tokens', '200000', 100_000],
  ])('refuses --config %s=%s the same way', async (key, value, max) => {
    const result = await cli(['memory', 'enable', '--conversation', 'e1', '--config', `${key}=${value}`]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`harness: --config ${key} must be an integer from 1 to ${max} (got "${value}")\n`);
  });

  it('takes each at its bound', async () => {
    const result = await cli([
      'memory',
      'enable',
      '--conversation',
      'e1',
      '--observe-min-tokens',
      '1000000',
      '--config',
      'reflect_threshold_tokens=100000',
    ]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('observe_min_tokens 1000000');
    expect(result.stdout).toContain('reflect_threshold_tokens 100000');
  });
});

describe('harness memory: dead operations', () => {
  it('show gives the whole retry command, scope options included', async () => {
    const workspace = await workspaceWithDeadOperation();
    const show = await cli(['memory', 'show', '--conversation', 'c-dead', '--tenant', 'acme'], workspace);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain(
      '## Dead operations (retry with `harness memory retry --tenant acme --conversation c-dead <operation-id>`)',
    );
  });

  it('retry --format json answers {operation, status}, as the HTTP API does', async () => {
    const workspace = await workspaceWithDeadOperation();
    const retried = await cli(
      ['memory', 'retry', '--conversation', 'c-dead', '--tenant', 'acme', '--format', 'json', 'op-dead'],
      workspace,
    );
    expect(retried.code).toBe(0);
    const body = JSON.parse(retried.stdout) as Record<string, Record<string, unknown>>;
    expect(Object.keys(body)).toEqual(['operation', 'status']);
    expect(body['operation']).toMatchObject({ operation_id: 'op-dead', status: 'queued' });
    expect(body['status']).toMatchObject({ dead_operations: 0, pending_operations: 1 });
  });
});
