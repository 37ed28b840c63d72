import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startScriptedOpenAIServer } from '../support/scripted-openai-server.js';
import type { ScriptedServer } from '../support/scripted-openai-server.js';
import { observeUserLines, roleOf } from './e2e-harness.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
// Built where Node finds the project's node_modules from, as `npm run build` would; removed afterwards.
const build = join(root, 'node_modules', '.cache', `harness-memory-mcp-test-${process.pid}`);
const cli = join(build, 'cli', 'main.js');

let model: ScriptedServer;
let home: string;
let env: Record<string, string>;
/** How often the observer was asked about the message the cancel test holds. */
let heldAsked = 0;

beforeAll(async () => {
  await run(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json', '--outDir', build],
    {
      cwd: root,
    },
  );
  model = await startScriptedOpenAIServer();
  model.setDefaultReply((request) => {
    if (roleOf(request) !== 'observer') return { text: 'SUMMARY:\nok\n\nSUPERSESSIONS:\n\nCONTRADICTIONS:\n' };
    if (!JSON.stringify(request.body).includes('launch moved to May')) return observeUserLines(request);
    heldAsked++;
    // The first ask would be answered in ten minutes: only a cancel ends it sooner.
    return heldAsked === 1 ? { delayMs: 600_000, reply: observeUserLines(request) } : observeUserLines(request);
  });
  home = mkdtempSync(join(tmpdir(), 'hm-mcp-stdio-'));
  mkdirSync(join(home, 'workspace'));
  env = {
    PATH: process.env['PATH'] ?? '',
    HOME: join(home, 'home'),
    NO_COLOR: '1',
    HARNESS_WORKSPACE: join(home, 'workspace'),
    OPENAI_BASE_URL: model.url,
    OPENAI_API_KEY: 'test',
    HARNESS_MEMORY_DEFAULT_ENABLED: 'true',
    HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '1',
  };
}, 120_000);

afterAll(async () => {
  await model?.close();
  rmSync(build, { recursive: true, force: true });
  if (home) rmSync(home, { recursive: true, force: true });
});

/** The built CLI, run to completion with the test's environment. */
async function harness(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run(process.execPath, [cli, ...args], { cwd: home, env });
}

async function connect(...args: string[]): Promise<{ client: Client; stderr: string[] }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'mcp', ...args],
    env,
    cwd: home,
    stderr: 'pipe',
  });
  const stderr: string[] = [];
  transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
  const client = new Client({ name: 'harness-memory-stdio-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, stderr };
}

async function ok(client: Client, name: string, args: Record<string, unknown>): Promise<Record<string, any>> {
  const result = (await client.callTool({ name, arguments: args })) as {
    isError?: boolean;
    structuredContent?: Record<string, any>;
    content?: unknown;
  };
  expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false);
  return result.structuredContent ?? {};
}

describe('e2e: harness mcp on stdio (the built CLI)', () => {
  it('shares memory with the CLI both ways, serves every tool and resource', async () => {
    const { client, stderr } = await connect('--tenant', 'acme', '--conversation', 'c1', '--allow-forget');
    try {
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names).toContain('memory_forget');
      expect(names).toHaveLength(8);

      // MCP writes, the CLI reads.
      await ok(client, 'working_memory', { action: 'set', key: 'plan', value: { step: 1 } });
      const got = await harness('wm', 'get', 'plan', '--tenant', 'acme', '--conversation', 'c1');
      expect(got.stdout.trim()).toBe('{"step":1}');
      // The CLI writes, MCP reads.
      await harness('wm', 'set', 'owner', '"ana"', '--tenant', 'acme', '--conversation', 'c1');
      expect(await ok(client, 'working_memory', { action: 'get', key: 'owner' })).toMatchObject({
        found: true,
        value: '"ana"',
      });

      await ok(client, 'memory_remember', { content: 'The user deploys on Fridays.', importance: 0.8 });
      const observed = await ok(client, 'memory_observe', {
        messages: [{ id: 'm1', role: 'user', content: 'My cat is called Miso.' }],
      });
      expect(observed['result']).toBe('observed');
      const context = await ok(client, 'memory_context', {});
      expect(context['observational_memory']).toContain('Fridays');
      expect(context['observational_memory']).toContain('Miso');
      expect(context['working_memory']).toContain('owner');
      const found = await ok(client, 'memory_search', { query: 'miso' });
      expect(found['observations']).toHaveLength(1);
      await ok(client, 'memory_correct', { seq: 1, action: 'replace', content: 'The user deploys on Mondays.' });
      const exported = await ok(client, 'observational_memory', { action: 'export', format: 'json' });
      expect(exported['export']['content']).toContain('Mondays');
      expect((await ok(client, 'observational_memory', { action: 'status' }))['status']).toMatchObject({
        enabled: true,
        observation_count: 2,
      });

      const resources = await client.listResources();
      expect(resources.resources.map((resource) => resource.uri)).toContain('memory://acme/c1/default');
      const read = await client.readResource({ uri: 'memory://acme/c1/default' });
      expect(JSON.stringify(read.contents)).toContain('Mondays');
      expect((await client.listResourceTemplates()).resourceTemplates.map((template) => template.uriTemplate)).toEqual([
        'memory://{tenant}/{conversation}/{agent}',
      ]);

      const shown = await harness('memory', 'show', '--tenant', 'acme', '--conversation', 'c1', '--format', 'json');
      const shownJson = JSON.parse(shown.stdout) as { observations: Array<{ content: string }> };
      expect(shownJson.observations.map((observation) => observation.content)).toContain(
        'The user deploys on Mondays.',
      );

      expect(await ok(client, 'memory_forget', {})).toMatchObject({ forgotten: true });
      const gone = await harness('wm', 'list', '--tenant', 'acme', '--conversation', 'c1', '--json');
      expect(JSON.parse(gone.stdout)).toEqual({ entries: [] });
    } finally {
      await client.close();
    }
    // Nothing but protocol went to stdout (the client would have failed to parse it); stderr has no faults.
    expect(stderr.join('')).not.toContain('"level":"error"');
  });

  it("takes blank scope ids for the server's own, and reads the export's reference shape", async () => {
    const { client } = await connect('--tenant', 'acme', '--conversation', 'desk', '--agent', 'assistant');
    try {
      const set = await ok(client, 'working_memory', {
        action: 'set',
        key: 'plan',
        value: 'ship',
        agent_id: '',
        conversation_id: ' ',
      });
      expect(set).toMatchObject({ ok: true, key: 'plan' });
      const listed = await harness('wm', 'list', '--tenant', 'acme', '--conversation', 'desk', '--agent', 'assistant');
      expect(listed.stdout).toContain('plan');
      const nested = await ok(client, 'observational_memory', { action: 'export', export: { format: 'markdown' } });
      expect(nested['export'].format).toBe('markdown');
      const spaced = await ok(client, 'observational_memory', { action: 'export', format: ' Markdown ' });
      expect(spaced['export'].format).toBe('markdown');
      // Models fill optional numbers with 0: as with the agent tool, 0 keeps a threshold as it is.
      const before = (await ok(client, 'observational_memory', { action: 'status' }))['status'];
      const enabled = await ok(client, 'observational_memory', {
        action: 'enable',
        config: { observe_min_tokens: 0, snippet_max_tokens: 0, reflect_threshold_tokens: -1 },
      });
      expect(enabled['status']).toMatchObject({ enabled: true, config: before.config });
    } finally {
      await client.close();
    }
  });

  it('stops the observer call when the client cancels memory_observe; the next observe takes the messages', async () => {
    const { client } = await connect('--tenant', 'acme', '--conversation', 'cancel');
    try {
      const messages = [{ id: 'x1', role: 'user', content: 'The launch moved to May.' }];
      const controller = new AbortController();
      const settled = client
        .callTool({ name: 'memory_observe', arguments: { messages } }, { signal: controller.signal })
        .then(
          () => 'answered',
          () => 'cancelled',
        );
      await vi.waitFor(() => expect(heldAsked).toBe(1), { timeout: 10_000, interval: 20 });
      controller.abort();
      expect(await settled).toBe('cancelled');
      // The scope is free at once, and the operation the cancel gave back is observed now.
      const again = await ok(client, 'memory_observe', { messages });
      expect(again['result']).toBe('observed');
      expect(heldAsked).toBe(2);
      const context = await ok(client, 'memory_context', {});
      expect(context['observational_memory']).toContain('The launch moved to May.');
    } finally {
      await client.close();
    }
  });

  it('exits 0 when its client closes stdin', async () => {
    const child = execFile(process.execPath, [cli, 'mcp'], { cwd: home, env });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.stdin?.end();
    expect(await exited).toBe(0);
  });

  it('refuses a bad scope option with exit code 2 before serving', async () => {
    const failed = await harness('mcp', '--tenant', '../x').then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed.code).toBe(2);
    expect(failed.stderr).toContain('tenant');
    const blank = await harness('mcp', '--agent', ' ').then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(blank.code).toBe(2);
    expect(blank.stderr).toContain('--agent must not be blank');
  });
});
