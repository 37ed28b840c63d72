import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedOpenAIServer } from '../../test/support/scripted-openai-server.js';
import type { ScriptedRequest, ScriptedServer } from '../../test/support/scripted-openai-server.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import { runCli } from './run-cli.js';
import { storeDeadOperation } from '../../test/support/dead-operation.js';

let server: ScriptedServer;
const directories: string[] = [];

function messagesOf(request: ScriptedRequest): Array<{ role: string; content: string }> {
  const messages = (request.body as { messages?: Array<{ role: string; content: unknown }> }).messages ?? [];
  return messages.map((message) => ({
    role: message.role,
    content: typeof message.content === 'string' ? message.content : JSON.stringify(message.content),
  }));
}

const isMemoryRequest = (request: ScriptedRequest): boolean =>
  messagesOf(request).some(
    (message) =>
      message.content.includes('observational memory processor') || message.content.includes('structured reflection'),
  );

beforeAll(async () => {
  server = await startScriptedOpenAIServer();
  // Memory requests get an observation; agent requests a plain answer.
  server.setDefaultReply((request) =>
    isMemoryRequest(request)
      ? { text: 'IMPORTANCE:0.9\nUser likes short answers.' }
      : { text: 'Hello from the scripted model.' },
  );
});

afterAll(async () => {
  await server.close();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

/** Runs the CLI in-process with a fresh workspace (unless given one) and collects its output. */
async function cli(argv: string[], options: { env?: Record<string, string>; workspace?: string } = {}) {
  const workspace = options.workspace ?? mkdtempSync(join(tmpdir(), 'hm-cli-'));
  if (!directories.includes(workspace)) directories.push(workspace);
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    env: { HARNESS_WORKSPACE: workspace, OPENAI_BASE_URL: server.url, OPENAI_API_KEY: 'test', ...options.env },
    stdout: { write: (chunk: string) => (stdout += chunk) },
    stderr: { write: (chunk: string) => (stderr += chunk) },
    cwd: workspace,
    homeDir: workspace,
  });
  return { code, stdout, stderr, workspace };
}

describe('harness run', () => {
  it('prints the answer and exits 0', async () => {
    const result = await cli(['run', 'Say hello', '--conversation', 'c-run']);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('Hello from the scripted model.\n');
    expect(result.stderr).toContain('run completed');
  });

  it('--json prints one parseable event per line, run.completed last, and nothing else', async () => {
    const result = await cli(['run', 'Say hello', '--json', '--conversation', 'c-json'], {
      env: { HARNESS_MEMORY_DEFAULT_ENABLED: 'true', HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '1' },
    });
    expect(result.code).toBe(0);
    const events = result.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const event of events) expect(Object.keys(event)).toEqual(['id', 'run_id', 'type', 'timestamp', 'payload']);
    const types = events.map((event) => event.type);
    expect(types[0]).toBe('run.started');
    expect(types.at(-1)).toBe('run.completed');
    expect(types).toContain('memory.observe.completed');
    expect(events.find((event) => event.type === 'assistant.message')?.payload).toMatchObject({
      content: 'Hello from the scripted model.',
      final: true,
    });
  });

  it('exits 1 with one line when the model fails', async () => {
    const result = await cli(['run', 'Say hello', '--max-steps', '1'], {
      env: { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' },
    });
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(/^harness: run failed: MODEL_CALL_FAILED: /);
  });
});

describe('harness wm and memory', () => {
  it('wm set then wm get round-trips a JSON value; a non-JSON value is stored as a string', async () => {
    const scope = ['--tenant', 'acme', '--conversation', 'c-wm'];
    const set = await cli(['wm', 'set', ...scope, 'plan', '{"step":1,"target":"auth.go"}']);
    expect(set.code).toBe(0);
    const get = await cli(['wm', 'get', ...scope, 'plan'], { workspace: set.workspace });
    expect(get).toMatchObject({ code: 0, stdout: '{"step":1,"target":"auth.go"}\n' });
    await cli(['wm', 'set', ...scope, 'note', 'use tabs'], { workspace: set.workspace });
    const list = await cli(['wm', 'list', ...scope, '--json'], { workspace: set.workspace });
    expect(
      JSON.parse(list.stdout).entries.map((entry: { key: string; value: unknown }) => [entry.key, entry.value]),
    ).toEqual([
      ['note', 'use tabs'],
      ['plan', { step: 1, target: 'auth.go' }],
    ]);
    expect((await cli(['wm', 'delete', ...scope, 'plan'], { workspace: set.workspace })).stdout).toBe('deleted plan\n');
    const missing = await cli(['wm', 'get', ...scope, 'plan'], { workspace: set.workspace });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('harness: working-memory entry "plan" is not set in acme/c-wm/default\n');
  });

  it('wm set --ttl stores an entry that expires, shown by wm list and memory show; a bad --ttl is refused', async () => {
    const scope = ['--tenant', 'acme', '--conversation', 'c-ttl'];
    const before = Date.now();
    const set = await cli(['wm', 'set', ...scope, 'draft', 'soon', '--ttl', '3600']);
    expect(set.code).toBe(0);
    expect(set.stdout).toMatch(/^set draft = "soon" \(expires \d{4}-\d\d-\d\dT[\d:.]+Z\)\n$/);
    const { workspace } = set;
    await cli(['wm', 'set', ...scope, 'plan', '1'], { workspace });
    const listed = JSON.parse((await cli(['wm', 'list', ...scope, '--json'], { workspace })).stdout).entries as Array<{
      key: string;
      expires_at: string | null;
    }>;
    expect(listed.map((entry) => [entry.key, entry.expires_at === null])).toEqual([
      ['draft', false],
      ['plan', true],
    ]);
    const expiresAt = Date.parse(listed[0]!.expires_at!);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 3_600_000 - 1000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3_600_000 + 1000);
    expect((await cli(['memory', 'show', ...scope], { workspace })).stdout).toContain(
      `- draft = "soon" (expires ${listed[0]!.expires_at})`,
    );
    // The option is named as the user typed it, and the usage error is exit 2.
    for (const ttl of ['soon', '0', '1.5', '-5']) {
      const refused = await cli(['wm', 'set', ...scope, 'draft', 'x', '--ttl', ttl], { workspace });
      expect(refused.code, ttl).toBe(2);
      expect(refused.stderr, ttl).toContain(`--ttl must be an integer from 1 to 315360000 (got "${ttl}")`);
    }
    // The configured default applies to a set without --ttl.
    const defaulted = await cli(['wm', 'set', ...scope, 'note', '2'], {
      workspace,
      env: { HARNESS_MEMORY_WORKING_MEMORY_DEFAULT_TTL_SECONDS: '60' },
    });
    expect(defaulted.stdout).toMatch(/^set note = 2 \(expires .+Z\)\n$/);
  });

  it('memory enable then memory status shows enabled, with the thresholds given', async () => {
    const enable = await cli([
      'memory',
      'enable',
      '--conversation',
      'c-mem',
      '--observe-min-tokens',
      '50',
      '--config',
      'snippet_max_tokens=300',
    ]);
    expect(enable.code).toBe(0);
    const status = await cli(['memory', 'status', '--conversation', 'c-mem', '--format', 'json'], {
      workspace: enable.workspace,
    });
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout).status).toMatchObject({
      enabled: true,
      config: { observe_min_tokens: 50, snippet_max_tokens: 300 },
    });
    const text = await cli(['memory', 'status', '--conversation', 'c-mem'], { workspace: enable.workspace });
    expect(text.stdout).toContain('- enabled: yes');
  });

  it('memory commands work without any model configured', async () => {
    const result = await cli(['memory', 'status', '--conversation', 'c1'], {
      env: { OPENAI_API_KEY: '', OPENAI_BASE_URL: '' },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('- enabled: no');
  });

  it('memory forget erases both memories and the conversation; export prints the content', async () => {
    const run = await cli(['run', 'Remember this', '--conversation', 'c-forget'], {
      env: { HARNESS_MEMORY_DEFAULT_ENABLED: 'true', HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '1' },
    });
    expect(run.code).toBe(0);
    const { workspace } = run;
    await cli(['wm', 'set', '--conversation', 'c-forget', 'plan', '1'], { workspace });
    const exported = await cli(['memory', 'export', '--conversation', 'c-forget', '--format', 'markdown'], {
      workspace,
    });
    expect(exported.stdout).toContain('User likes short answers.');
    const show = await cli(['memory', 'show', '--conversation', 'c-forget'], {
      workspace,
      env: { HARNESS_MEMORY_DEFAULT_ENABLED: 'true' },
    });
    expect(show.stdout).toContain('User likes short answers.');
    expect(show.stdout).toMatch(
      /- \[1\] \(importance 0\.90; (user|mixed), messages? [\d–, ]+\) User likes short answers\./,
    );
    expect(show.stdout).toContain('## Supersessions\n\n- (none)');
    expect(show.stdout).toContain(
      '- supersession set: 0 supersession(s), 0 unresolved contradiction(s); 0 reference(s) rejected',
    );
    expect(show.stdout).toContain('- plan = 1');
    const shown = JSON.parse(
      (await cli(['memory', 'show', '--conversation', 'c-forget', '--format', 'json'], { workspace })).stdout,
    );
    expect(shown.observations[0]).toHaveProperty('source');
    expect(shown.reflection_links).toEqual({ supersessions: [], contradictions: [] });
    expect((await cli(['memory', 'forget', '--conversation', 'c-forget'], { workspace })).code).toBe(0);
    const after = await cli(['memory', 'show', '--conversation', 'c-forget', '--format', 'json'], { workspace });
    expect(JSON.parse(after.stdout)).toMatchObject({ observations: [], working_memory: [], reflection: '' });
  });
});

describe('harness memory retry', () => {
  it('shows a dead operation, retries it (exit 0), and refuses one that is not dead or unknown (exit 2)', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'hm-cli-'));
    directories.push(workspace);
    const scope = { tenantId: 'acme', conversationId: 'c-dead', agentId: 'default' };
    const store = createSqliteStore({ path: join(workspace, '.harness', 'state.db') });
    await storeDeadOperation(store, scope, 'gave up after 5 attempts: boom');
    await store.dispose();

    const scopeArgs = ['--conversation', 'c-dead', '--tenant', 'acme'];
    const show = await cli(['memory', 'show', ...scopeArgs], { workspace });
    expect(show.stdout).toContain('- dead operations: 1');
    expect(show.stdout).toContain('- op-dead (observe, 1 attempts): gave up after 5 attempts: boom');
    const retried = await cli(['memory', 'retry', ...scopeArgs, 'op-dead'], { workspace });
    expect(retried).toMatchObject({ code: 0, stderr: '' });
    expect(retried.stdout).toBe('operation op-dead (observe) of acme/c-dead/default is queued again\n');
    const status = JSON.parse(
      (await cli(['memory', 'status', ...scopeArgs, '--format', 'json'], { workspace })).stdout,
    ) as { status: Record<string, number> };
    expect(status.status).toMatchObject({ dead_operations: 0, pending_operations: 1 });
    const again = await cli(['memory', 'retry', ...scopeArgs, 'op-dead'], { workspace });
    expect(again.code).toBe(2);
    expect(again.stderr).toBe(
      'harness: operation op-dead is queued, not dead; only a dead operation can be retried by hand.\n',
    );
    const unknown = await cli(['memory', 'retry', ...scopeArgs, 'op-unknown'], { workspace });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('the scope has no operation op-unknown');
  });
});

describe('harness config', () => {
  it('shows each key, value and source, with the API key masked, and the memory model', async () => {
    const result = await cli(['config'], { env: { OPENAI_API_KEY: 'sk-test-secret-123456' } });
    expect(result.code).toBe(0);
    expect(result.stdout).not.toContain('sk-test-secret');
    expect(result.stdout).toMatch(/^openai\.api_key\s+\*\*\*\*3456\s+env:OPENAI_API_KEY$/m);
    expect(result.stdout).toMatch(/^memory model: openai gpt-5-nano from inferred: OPENAI_API_KEY is set/m);
    const json = await cli(['config', '--json'], { env: { OPENAI_API_KEY: 'sk-test-secret-123456' } });
    const parsed = JSON.parse(json.stdout) as {
      rows: Array<{ key: string; value: string; source: string }>;
      memory_model: Record<string, string>;
    };
    expect(parsed.rows.find((row) => row.key === 'openai.api_key')).toEqual({
      key: 'openai.api_key',
      value: '****3456',
      source: 'env:OPENAI_API_KEY',
    });
    expect(parsed.memory_model).toMatchObject({ mode: 'openai', model_id: 'gpt-5-nano' });
  });

  it('--json carries plain values (numbers, booleans, null, lists), secrets still masked; the table shows text', async () => {
    const env = {
      OPENAI_API_KEY: 'sk-test-secret-123456',
      HARNESS_API_KEYS: 'server-key-000011112222:tenant-a runs:read, key-two:acme',
      HARNESS_MEMORY_ENABLED: 'false',
      HARNESS_ALLOWED_MODELS: 'gpt-4.1-mini,gpt-5-nano',
    };
    const json = await cli(['config', '--json'], { env });
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as { rows: Array<{ key: string; value: unknown; source: string }> };
    const value = (key: string): unknown => parsed.rows.find((row) => row.key === key)?.value;
    expect(value('memory.enabled')).toBe(false);
    expect(value('server.redact_transcripts')).toBe(true);
    expect(value('memory.observe_min_tokens')).toBe(1200);
    expect(value('memory.tool_importance_cap')).toBe(0.6);
    expect(value('server.port')).toBe(8080);
    // The effective mode, without the table's note: memory.enabled (its own row) turned it off.
    expect(value('memory.mode')).toBe('off');
    expect(value('memory.schema')).toBe('');
    expect(value('memory.llm_mode')).toBeNull();
    expect(value('memory.llm_api_key')).toBeNull();
    expect(value('openai.api_key')).toBe('****3456');
    expect(value('server.api_keys')).toEqual(['****2222:tenant-a runs:read', '****:acme']);
    expect(value('server.allowed_models')).toEqual(['gpt-4.1-mini', 'gpt-5-nano']);
    expect(parsed.rows.find((row) => row.key === 'memory.enabled')).toEqual({
      key: 'memory.enabled',
      value: false,
      source: 'env:HARNESS_MEMORY_ENABLED',
    });
    expect(json.stdout).not.toContain('server-key-0000');
    // The table is unchanged: text for people.
    const table = await cli(['config'], { env });
    expect(table.stdout).toMatch(/^memory\.enabled\s+false\s+env:HARNESS_MEMORY_ENABLED$/m);
    expect(table.stdout).toMatch(/^memory\.mode\s+off \(memory\.enabled = false\)\s+env:HARNESS_MEMORY_ENABLED$/m);
    expect(table.stdout).toMatch(/^memory\.schema\s+""\s+default$/m);
    expect(table.stdout).toMatch(/^memory\.llm_mode\s+\(unset\)\s+default$/m);
    expect(table.stdout).toMatch(
      /^server\.api_keys\s+\*\*\*\*2222:tenant-a runs:read, \*\*\*\*:acme\s+env:HARNESS_API_KEYS$/m,
    );
    expect(table.stdout).toMatch(/^server\.allowed_models\s+gpt-4\.1-mini,gpt-5-nano\s+env:HARNESS_ALLOWED_MODELS$/m);
  });

  it("names the server memory's calls go to, when it has a base URL of its own", async () => {
    const env = {
      OPENAI_API_KEY: 'sk-test-secret-123456',
      HARNESS_MEMORY_LLM_BASE_URL: 'http://127.0.0.1:9/v1',
      HARNESS_MEMORY_LLM_API_KEY: 'memory-key-1',
    };
    const result = await cli(['config'], { env });
    expect(result.stdout).toMatch(/^memory model: .* at http:\/\/127\.0\.0\.1:9\/v1$/m);
    const parsed = JSON.parse((await cli(['config', '--json'], { env })).stdout) as {
      memory_model: Record<string, string>;
    };
    expect(parsed.memory_model['base_url']).toBe('http://127.0.0.1:9/v1');
  });

  it("names the agent model's server, and memory's when it inherits the agent model (the local default)", async () => {
    const env = { OPENAI_API_KEY: '', OPENAI_BASE_URL: 'http://127.0.0.1:11434', HARNESS_MODEL: 'llama3.1' };
    const result = await cli(['config'], { env });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^agent model: openai llama3\.1 at http:\/\/127\.0\.0\.1:11434\/v1$/m);
    expect(result.stdout).toMatch(
      /^memory model: inherit llama3\.1 from inferred: neither .* at http:\/\/127\.0\.0\.1:11434\/v1$/m,
    );
    const parsed = JSON.parse((await cli(['config', '--json'], { env })).stdout) as {
      agent_model: Record<string, string>;
      memory_model: Record<string, string>;
    };
    expect(parsed.agent_model).toEqual({
      provider: 'openai',
      model_id: 'llama3.1',
      base_url: 'http://127.0.0.1:11434/v1',
    });
    expect(parsed.memory_model).toMatchObject({ mode: 'inherit', base_url: 'http://127.0.0.1:11434/v1' });
  });

  it("names the agent model's server apart from memory's own, and never the API key", async () => {
    const env = {
      OPENAI_API_KEY: 'sk-test-secret-123456',
      OPENAI_BASE_URL: 'http://127.0.0.1:8/',
      HARNESS_MEMORY_LLM_BASE_URL: 'http://127.0.0.1:9/v1',
    };
    const result = await cli(['config'], { env });
    expect(result.stdout).toMatch(/^agent model: openai \S+ at http:\/\/127\.0\.0\.1:8\/v1$/m);
    expect(result.stdout).toMatch(/^memory model: openai gpt-5-nano .* at http:\/\/127\.0\.0\.1:9\/v1$/m);
    expect(result.stdout).not.toContain('sk-test-secret');
    const json = await cli(['config', '--json'], { env });
    expect(json.stdout).not.toContain('sk-test-secret');
    const parsed = JSON.parse(json.stdout) as { agent_model: Record<string, string> };
    expect(parsed.agent_model['base_url']).toBe('http://127.0.0.1:8/v1');
  });

  it.each(['http://127.0.0.1:9', 'http://127.0.0.1:9/', 'http://127.0.0.1:9/v1/chat/completions'])(
    'names the base URL memory calls go to as the client sends them when given as %s',
    async (baseUrl) => {
      const env = {
        OPENAI_API_KEY: 'sk-test-secret-123456',
        HARNESS_MEMORY_LLM_BASE_URL: baseUrl,
        HARNESS_MEMORY_LLM_API_KEY: 'memory-key-1',
      };
      const result = await cli(['config'], { env });
      expect(result.stdout).toMatch(/^memory model: .* at http:\/\/127\.0\.0\.1:9\/v1$/m);
    },
  );
});

describe('harness errors and exit codes', () => {
  it('a bad flag exits 2 with one line', async () => {
    const result = await cli(['run', 'hi', '--bogus']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe("harness: unknown option '--bogus'\n");
    expect(result.stdout).toBe('');
  });

  it('a bad option value and a missing --conversation exit 2', async () => {
    expect((await cli(['run', 'hi', '--max-steps', 'many'])).code).toBe(2);
    // Out of range: refused with the option named, before any configuration is read.
    const tooMany = await cli(['run', 'hi', '--max-steps', '101'], {
      env: { HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '-1' },
    });
    expect(tooMany.code).toBe(2);
    expect(tooMany.stderr).toContain('--max-steps must be an integer from 1 to 100 (got "101")');
    const missing = await cli(['memory', 'status']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe("harness: required option '--conversation <id>' not specified\n");
  });

  it('a bad configuration value exits 78 with one line naming the variable', async () => {
    const result = await cli(['memory', 'status', '--conversation', 'c1'], {
      env: { HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '-1' },
    });
    expect(result.code).toBe(78);
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(
      /^harness: configuration: env:HARNESS_MEMORY_OBSERVE_MIN_TOKENS: memory\.observe_min_tokens: /,
    );
  });

  it('an invalid scope id exits 2 with one line naming the option and the field', async () => {
    const result = await cli(['wm', 'list', '--tenant', '../etc', '--conversation', 'c1']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('harness: --tenant: tenant_id may contain only letters, digits and . _ : @ -.\n');
  });

  it('shows no stack trace unless --verbose', async () => {
    const quiet = await cli(['memory', 'status', '--conversation', 'a/b']);
    expect(quiet.stderr).not.toContain('    at ');
    const verbose = await cli(['--verbose', 'memory', 'status', '--conversation', 'a/b']);
    expect(verbose.code).toBe(2);
    expect(verbose.stderr).toContain('    at ');
  });

  it('--help exits 0 and prints the commands', async () => {
    const result = await cli(['--help']);
    expect(result.code).toBe(0);
    for (const command of ['serve', 'run', 'memory', 'wm', 'config']) expect(result.stdout).toContain(command);
  });
});

describe('harness serve', () => {
  it('listens, serves /healthz, and stops cleanly when asked', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'hm-cli-'));
    directories.push(workspace);
    const controller = new AbortController();
    let stdout = '';
    let stderr = '';
    const handlersBefore = process.listeners('unhandledRejection');
    const listening = new Promise<string>((resolve) => {
      const exited = runCli(['serve', '--port', '0'], {
        env: { HARNESS_WORKSPACE: workspace, OPENAI_BASE_URL: server.url, OPENAI_API_KEY: 'test' },
        stdout: {
          write: (chunk: string) => {
            stdout += chunk;
            const url = /listening on (\S+)/.exec(stdout)?.[1];
            if (url) resolve(url);
          },
        },
        stderr: { write: (chunk: string) => (stderr += chunk) },
        cwd: workspace,
        homeDir: workspace,
        signal: controller.signal,
      });
      void exited.then((code) => {
        exitCode = code;
        done();
      });
    });
    let exitCode: number | undefined;
    let done: () => void = () => {};
    const finished = new Promise<void>((resolve) => (done = resolve));
    const url = await listening;
    expect(stdout).toMatch(
      /^harness listening on http:\/\/127\.0\.0\.1:\d+ \(memory: openai gpt-5-nano from inferred: OPENAI_API_KEY is set \(env:OPENAI_API_KEY\), store: .*state\.db\)\nmemory inspector: http:\/\/127\.0\.0\.1:\d+\/inspector\/\n$/,
    );
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok', faults: 0 });
    // serve installed a process-level handler: a stray rejection is logged loudly and counted, not fatal.
    const added = process.listeners('unhandledRejection').filter((listener) => !handlersBefore.includes(listener));
    expect(added).toHaveLength(1);
    added[0]!(new Error('a stray rejection'), Promise.resolve());
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok', faults: 1 });
    const logged = JSON.parse(stderr.split('\n').find((line) => line.startsWith('{')) ?? '{}') as Record<string, any>;
    expect(logged).toMatchObject({
      level: 'error',
      event: 'fault',
      component: 'process',
      message: expect.stringContaining('UNHANDLED PROMISE REJECTION'),
      error: { message: 'a stray rejection' },
    });
    controller.abort();
    await finished;
    expect(exitCode).toBe(0);
    expect(stderr).toContain('stopping');
    expect(process.listeners('unhandledRejection')).toEqual(handlersBefore);
  });

  it('refuses a non-loopback host without API keys (78)', async () => {
    const result = await cli(['serve', '--host', '0.0.0.0', '--port', '0']);
    expect(result.code).toBe(78);
    expect(result.stderr).toMatch(
      /^harness: configuration: --host: server\.host: refusing to listen on 0\.0\.0\.0 without API keys/,
    );
  });
});
