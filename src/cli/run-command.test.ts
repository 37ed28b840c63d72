import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedOpenAIServer } from '../../test/support/scripted-openai-server.js';
import type { ScriptedRequest, ScriptedServer } from '../../test/support/scripted-openai-server.js';
import { runCli } from './run-cli.js';

let model: ScriptedServer;
const directories: string[] = [];

const isObserverRequest = (request: ScriptedRequest): boolean =>
  JSON.stringify(request.body ?? '').includes('observational memory processor');

beforeAll(async () => {
  model = await startScriptedOpenAIServer();
  // The observer answers only after a minute: the run waits for it after its answer.
  model.setDefaultReply((request) =>
    isObserverRequest(request)
      ? { delayMs: 60_000, reply: { text: 'IMPORTANCE:0.9\nToo late.' } }
      : { text: 'the answer' },
  );
});

afterAll(async () => {
  await model.close();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

async function cli(
  argv: string[],
  options: { signal?: AbortSignal; env?: Record<string, string>; toml?: string; workspace?: string } = {},
) {
  const { signal } = options;
  const workspace = options.workspace ?? mkdtempSync(join(tmpdir(), 'hm-cli-run-'));
  if (options.workspace === undefined) directories.push(workspace);
  if (options.toml !== undefined) {
    mkdirSync(join(workspace, '.harness'));
    writeFileSync(join(workspace, '.harness', 'config.toml'), options.toml);
  }
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    env: {
      HARNESS_WORKSPACE: workspace,
      OPENAI_BASE_URL: model.url,
      OPENAI_API_KEY: 'test',
      HARNESS_MEMORY_DEFAULT_ENABLED: 'true',
      HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '1',
      ...options.env,
    },
    stdout: { write: (chunk: string) => (stdout += chunk) },
    stderr: { write: (chunk: string) => (stderr += chunk) },
    cwd: workspace,
    homeDir: workspace,
    ...(signal === undefined ? {} : { signal }),
  });
  return { code, stdout, stderr };
}

describe('harness run: Ctrl-C', () => {
  it('cancels the run at once while it waits for memory after its answer (exit 1)', async () => {
    const controller = new AbortController();
    const observing = model.requests.filter(isObserverRequest).length;
    const running = cli(['run', 'Remember that I like tea', '--conversation', 'c-int', '--json'], {
      signal: controller.signal,
    });
    // Polled until the observer has been asked, after the answer; the test's timeout bounds the wait.
    while (model.requests.filter(isObserverRequest).length === observing)
      await new Promise((resolve) => setTimeout(resolve, 10));
    const interrupted = Date.now();
    controller.abort();
    const result = await running;
    expect(Date.now() - interrupted).toBeLessThan(5_000);
    expect(result.code).toBe(1);
    const types = result.stdout
      .trimEnd()
      .split('\n')
      .map((line) => (JSON.parse(line) as { type: string }).type);
    expect(types).toContain('assistant.message');
    expect(types.at(-1)).toBe('run.cancelled');
  }, 15_000);
});

describe('harness run: its conversation forgotten by another process meanwhile', () => {
  it('ends with run.failed SCOPE_FORGOTTEN (exit 1) instead of waiting for events that are never stored', async () => {
    const server = await startScriptedOpenAIServer();
    const workspace = mkdtempSync(join(tmpdir(), 'hm-cli-run-'));
    directories.push(workspace);
    try {
      let agentCalls = 0;
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let asked!: () => void;
      const secondCall = new Promise<void>((resolve) => (asked = resolve));
      server.setDefaultReply(async (request) => {
        if (isObserverRequest(request)) return { text: 'NONE' };
        agentCalls += 1;
        if (agentCalls === 1)
          return { toolCalls: [{ name: 'working_memory', arguments: { action: 'set', key: 'k', value: 'v' } }] };
        asked();
        await released;
        return { text: 'too late' };
      });
      const env = { OPENAI_BASE_URL: server.url };
      const running = cli(['run', 'Note k, then answer', '--conversation', 'c-forgotten', '--json'], {
        workspace,
        env,
      });
      await secondCall;
      const forgot = await cli(['memory', 'forget', '--conversation', 'c-forgotten'], { workspace, env });
      expect(forgot.code).toBe(0);
      release();
      const result = await running;
      expect(result.code).toBe(1);
      const events = result.stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as { type: string; payload: { error?: { code: string } } });
      expect(events.at(-1)).toMatchObject({ type: 'run.failed', payload: { error: { code: 'SCOPE_FORGOTTEN' } } });
    } finally {
      await server.close();
    }
  });
});

describe('harness run: bad arguments', () => {
  it('refuses an empty prompt as bad usage naming the argument, before any model is needed', async () => {
    for (const prompt of ['', '   ']) {
      const result = await cli(['run', prompt]);
      expect(result.code).toBe(2);
      expect(result.stderr).toBe('harness: <prompt> must not be empty: say what to ask the agent\n');
    }
  });

  it('names --model when the model id is refused', async () => {
    const secret = await cli(['run', 'hello', '--model', 'sk-proj-abcdefghijklmnopqrstuvwx12']);
    expect(secret.code).toBe(2);
    expect(secret.stderr).toMatch(/^harness: --model: model looks like a secret \(openai_key\); /);
    expect(secret.stderr).not.toContain('abcdefghijkl');
    const long = await cli(['run', 'hello', '--model', 'm'.repeat(300)]);
    expect(long.code).toBe(2);
    expect(long.stderr).toMatch(/^harness: --model: model is 300 characters long/);
  });
});

describe('harness run: a memory model that is not configured', () => {
  it.each([
    [{ HARNESS_MEMORY_LLM_PROVIDER: 'nope' }, 'env:HARNESS_MEMORY_LLM_PROVIDER: memory.llm_provider: unknown provider'],
    [{ HARNESS_MEMORY_LLM_MODE: 'provider' }, 'memory.llm_provider: memory llm provider is required'],
  ])(
    'answers with the agent model for %j and warns, as serve does, that memory cannot observe',
    async (env, reason) => {
      const result = await cli(['run', 'Say something', '--conversation', 'c-memory-broken'], { env });
      expect(result.code).toBe(0);
      expect(result.stdout).toBe('the answer\n');
      expect(result.stderr).toContain(
        'harness: warning: the memory model is not configured, so memory cannot observe or reflect until it is: ',
      );
      expect(result.stderr).toContain(reason);
      // Not silently: the scope's observe fails where the run's events are shown.
      expect(result.stderr).toContain(
        '· memory: step 1 failed: this needs the memory model, which is not configured: ',
      );
    },
  );

  it('neither stops nor warns when memory is off: its model is never asked', async () => {
    const offSettings: Array<Record<string, string>> = [
      { HARNESS_MEMORY_ENABLED: 'false' },
      { HARNESS_MEMORY_MODE: 'off' },
    ];
    for (const off of offSettings) {
      const result = await cli(['run', 'Say something'], { env: { HARNESS_MEMORY_LLM_PROVIDER: 'nope', ...off } });
      expect(result.code, JSON.stringify(off)).toBe(0);
      expect(result.stdout).toBe('the answer\n');
      expect(result.stderr).not.toContain('warning');
    }
  });

  it('still stops with exit 78 naming the setting when the agent model is not configured', async () => {
    const result = await cli(['run', 'Say something'], { toml: '[model]\nprovider = "nope"\n' });
    expect(result.code).toBe(78);
    expect(result.stderr).toMatch(/^harness: configuration: .*model\.provider: unknown provider/);
  });
});
