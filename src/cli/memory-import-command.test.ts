import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { scriptedObserver, scriptedReflector } from '../../test/support/scripted-models.js';
import { MAX_IMPORTED_EXPORT_BYTES } from '../memory/export-reader.js';
import { createObservationalMemory } from '../memory/observational-memory.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import { runCli } from './run-cli.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const directories: string[] = [];

afterAll(() => {
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

function newWorkspace(): string {
  const workspace = mkdtempSync(join(tmpdir(), 'hm-cli-import-'));
  directories.push(workspace);
  return workspace;
}

async function cli(argv: string[], workspace: string) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    env: { HARNESS_WORKSPACE: workspace, OPENAI_API_KEY: 'test', HARNESS_MEMORY_DEFAULT_ENABLED: 'true' },
    stdout: { write: (chunk: string) => (stdout += chunk) },
    stderr: { write: (chunk: string) => (stderr += chunk) },
    cwd: workspace,
    homeDir: workspace,
  });
  return { code, stdout, stderr };
}

/**
 * A workspace whose scope `default/moving/default` holds two observations, the second
 * superseding the first, and a reflection; and that scope's export, in `export.json`.
 */
async function workspaceWithExport(): Promise<string> {
  const workspace = newWorkspace();
  const store = createSqliteStore({ path: join(workspace, '.harness', 'state.db') });
  const memory = createObservationalMemory({
    store,
    observer: scriptedObserver(
      'IMPORTANCE: 1.0\nThe user lives in Paris.',
      'IMPORTANCE: 0.3\nThe user moved to Berlin.',
    ),
    reflector: scriptedReflector('SUMMARY:\nThe user relocated.\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]: moved\n'),
    defaultEnabled: true,
    defaults: { observeMinTokens: 1 },
  });
  const scope = { tenantId: 'default', conversationId: 'moving', agentId: 'default' };
  for (const id of ['a', 'b']) await memory.observe({ scope, messages: [{ id, role: 'user', content: `say ${id}` }] });
  await memory.reflectNow(scope);
  await store.dispose();
  const exported = await cli(['memory', 'export', '--conversation', 'moving'], workspace);
  expect(exported.code).toBe(0);
  writeFileSync(join(workspace, 'export.json'), exported.stdout);
  return workspace;
}

describe('harness memory import', () => {
  it('restores an export into an empty scope: observations, reflection and supersessions', async () => {
    const workspace = await workspaceWithExport();
    const result = await cli(['memory', 'import', '--conversation', 'restored', '--file', 'export.json'], workspace);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('imported 2 observation(s) into');
    expect(result.stdout).toContain('- reflection: yes');
    expect(result.stdout).toContain('- supersession set: 1 supersession(s)');

    const shown = await cli(['memory', 'show', '--conversation', 'restored', '--format', 'json'], workspace);
    const body = JSON.parse(shown.stdout) as { reflection: string; reflection_links: { supersessions: unknown[] } };
    expect(body.reflection).toContain('The user relocated.');
    expect(body.reflection_links.supersessions).toMatchObject([{ newer_seq: 2, older_seq: 1, reason: 'moved' }]);

    const again = await cli(
      ['memory', 'import', '--conversation', 'restored', '--file', 'export.json', '--format', 'json'],
      workspace,
    );
    expect(again.code).toBe(2);
    expect(again.stderr).toBe(
      'harness: scope default/restored/default already holds 2 observation(s), a reflection and 1 link(s); an ' +
        'export is imported only into a scope with none. Forget the scope first, or import into another one.\n',
    );
  });

  it('prints the json form: the count, the links left out and the status', async () => {
    const workspace = await workspaceWithExport();
    const result = await cli(
      ['memory', 'import', '--conversation', 'restored', '--file', 'export.json', '--format', 'json'],
      workspace,
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      imported: 2,
      dropped_links: 0,
      status: { observation_count: 2, reflection_present: true, active_supersessions: 1 },
    });
  });

  it('refuses a malformed export, a missing file and one over 64 MiB as bad usage (exit 2)', async () => {
    const workspace = newWorkspace();
    writeFileSync(
      join(workspace, 'bad.json'),
      JSON.stringify({ observations: [{ seq: 1, content: 'x' }], reflection_links: { supersessions: [{}] } }),
    );
    const bad = await cli(['memory', 'import', '--conversation', 'c', '--file', 'bad.json'], workspace);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      'harness: reflection_links.supersessions[0].newer_seq: must be an integer from 1, got undefined.\n',
    );

    const missing = await cli(['memory', 'import', '--conversation', 'c', '--file', 'nowhere.json'], workspace);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--file: cannot read nowhere.json');

    // Sparse: 64 MiB and one byte of nothing, cheap to make.
    writeFileSync(join(workspace, 'huge.json'), '');
    truncateSync(join(workspace, 'huge.json'), MAX_IMPORTED_EXPORT_BYTES + 1);
    const huge = await cli(['memory', 'import', '--conversation', 'c', '--file', 'huge.json'], workspace);
    expect(huge.code).toBe(2);
    expect(huge.stderr).toContain('--file: huge.json is larger than 67108864 bytes');
    expect((await cli(['memory', 'status', '--conversation', 'c', '--format', 'json'], workspace)).stdout).toContain(
      '"observation_count": 0',
    );
  });

  it('reads the export from standard input with --file -', async () => {
    const workspace = await workspaceWithExport();
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'memory', 'import', '--conversation', 'piped', '--file', '-'],
      {
        cwd: root,
        env: { PATH: process.env['PATH'] ?? '', HOME: workspace, NO_COLOR: '1', HARNESS_WORKSPACE: workspace },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    child.stdin.end(readFileSync(join(workspace, 'export.json')));
    expect(await exited).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toContain('imported 2 observation(s) into');
  });
});
