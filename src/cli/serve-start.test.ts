import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedOpenAIServer } from '../../test/support/scripted-openai-server.js';
import type { ScriptedServer } from '../../test/support/scripted-openai-server.js';
import { runCli } from './run-cli.js';

let model: ScriptedServer;
const directories: string[] = [];

beforeAll(async () => {
  model = await startScriptedOpenAIServer();
  model.setDefaultReply({ text: 'the agent answered' });
});

afterAll(async () => {
  await model.close();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

interface Serving {
  readonly url: string;
  readonly startLine: string;
  stdout(): string;
  stderr(): string;
  stop(): Promise<number>;
}

/** Starts `harness serve` in-process with the agent model at the scripted server; resolves once it listens. */
async function serve(args: string[], env: Record<string, string> = {}): Promise<Serving> {
  const workspace = mkdtempSync(join(tmpdir(), 'hm-cli-serve-'));
  directories.push(workspace);
  const controller = new AbortController();
  let stdout = '';
  let stderr = '';
  let listening: (line: string) => void = () => {};
  const started = new Promise<string>((resolve) => (listening = resolve));
  const exited = runCli(['serve', '--port', '0', ...args], {
    env: { HARNESS_WORKSPACE: workspace, OPENAI_BASE_URL: model.url, OPENAI_API_KEY: 'test', ...env },
    stdout: {
      write: (chunk: string) => {
        stdout += chunk;
        const line = stdout.split('\n').find((text) => text.startsWith('harness listening on '));
        if (line !== undefined) listening(line);
      },
    },
    stderr: { write: (chunk: string) => (stderr += chunk) },
    cwd: workspace,
    homeDir: workspace,
    signal: controller.signal,
  });
  const startLine = await Promise.race([started, exited.then((code) => `exited ${code}: ${stderr}`)]);
  const url = /^harness listening on (\S+) /.exec(startLine)?.[1] ?? '';
  return {
    url: url.replace('0.0.0.0', '127.0.0.1'),
    startLine,
    stdout: () => stdout,
    stderr: () => stderr,
    stop: () => {
      controller.abort();
      return exited;
    },
  };
}

async function runToEnd(url: string, prompt: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${url}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt, conversation_id: 'c-serve' }),
  });
  const { run_id: runId } = (await response.json()) as { run_id: string };
  // Polled until the run ends; the test's timeout bounds the wait.
  for (;;) {
    const run = (await (await fetch(`${url}/v1/runs/${runId}`)).json()) as Record<string, unknown>;
    if (run['status'] !== 'queued' && run['status'] !== 'running') return run;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('harness serve: a memory model that is not configured', () => {
  it.each([
    [{ HARNESS_MEMORY_LLM_PROVIDER: 'nope' }, 'env:HARNESS_MEMORY_LLM_PROVIDER: memory.llm_provider: unknown provider'],
    [{ HARNESS_MEMORY_LLM_MODE: 'provider' }, 'memory.llm_provider: memory llm provider is required'],
  ])('keeps the agent model for %j and says why memory has none', async (env, reason) => {
    const serving = await serve([], env);
    try {
      expect(serving.startLine).toMatch(/^harness listening on http:\/\/127\.0\.0\.1:\d+ \(memory: not configured \(/);
      expect(serving.startLine).toContain(reason);
      expect(serving.startLine).not.toContain('createHarness');
      expect(serving.stderr()).toContain(
        'harness: warning: the memory model is not configured, so memory cannot observe or reflect until it is: ',
      );
      expect(serving.stderr()).not.toContain('no model is configured, so runs will fail');
      const run = await runToEnd(serving.url, 'Say something');
      expect(run).toMatchObject({ status: 'completed', output: 'the agent answered' });
    } finally {
      expect(await serving.stop()).toBe(0);
    }
  });
});

describe('harness serve: the start-up line', () => {
  it.each([
    [{ HARNESS_MEMORY_ENABLED: 'false' }, 'memory: off (memory.enabled = false from env:HARNESS_MEMORY_ENABLED)'],
    [{ HARNESS_MEMORY_MODE: 'off' }, 'memory: off (memory.mode = "off" from env:HARNESS_MEMORY_MODE)'],
  ])('says memory is off, and why, for %j', async (env, shown) => {
    const serving = await serve([], env);
    try {
      expect(serving.startLine).toMatch(/^harness listening on http:\/\/127\.0\.0\.1:\d+ \(memory: off \(/);
      expect(serving.startLine).toContain(`(${shown}, store: `);
    } finally {
      expect(await serving.stop()).toBe(0);
    }
  });

  it('warns that the API is open to anyone who can reach it with --insecure and no API keys', async () => {
    const serving = await serve(['--host', '0.0.0.0', '--insecure']);
    try {
      expect(serving.startLine).toMatch(/^harness listening on http:\/\/0\.0\.0\.0:\d+ /);
      expect(serving.stderr()).toMatch(
        /^harness: warning: --insecure: listening on 0\.0\.0\.0 without API keys, so anyone who can reach port \d+ can start runs and read, change and erase the memory of every tenant; set \[server\] api_keys or HARNESS_API_KEYS\n/m,
      );
      // The inspector's address is one a browser can open, not the unspecified address.
      const inspector = /^memory inspector: (\S+)$/m.exec(serving.stdout())?.[1] ?? '';
      expect(inspector).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/inspector\/$/);
      expect((await fetch(inspector)).status).toBe(200);
    } finally {
      expect(await serving.stop()).toBe(0);
    }
  });

  it('gives no such warning on loopback, nor with API keys', async () => {
    for (const [args, env] of [
      [[], {}],
      [['--host', '0.0.0.0'], { HARNESS_API_KEYS: 'server-key-1:acme' }],
    ] as const) {
      const serving = await serve([...args], env);
      expect(await serving.stop()).toBe(0);
      expect(serving.stderr()).not.toContain('--insecure');
    }
  });
});

describe('harness serve: how the host is written', () => {
  it('listens on [::1], as the server writes its own URL', async () => {
    const serving = await serve(['--host', '[::1]']);
    try {
      expect(serving.startLine).toMatch(/^harness listening on http:\/\/\[::1\]:\d+ /);
      expect((await fetch(`${serving.url}/healthz`)).status).toBe(200);
    } finally {
      expect(await serving.stop()).toBe(0);
    }
  });

  it('takes HARNESS_HOST=LOCALHOST for loopback, without API keys or a warning', async () => {
    const serving = await serve([], { HARNESS_HOST: 'LOCALHOST' });
    try {
      expect(serving.startLine).toMatch(/^harness listening on http:\/\/127\.0\.0\.1:\d+ /);
    } finally {
      expect(await serving.stop()).toBe(0);
    }
    expect(serving.stderr()).not.toContain('warning: --insecure');
  });

  it.each<Record<string, string>>([{}, { HARNESS_API_KEYS: 'server-key-1:acme' }])(
    'refuses HARNESS_HOST=http://127.0.0.1 as a URL, not for missing API keys (%j)',
    async (env) => {
      const serving = await serve([], { HARNESS_HOST: 'http://127.0.0.1', ...env });
      expect(serving.startLine).toBe(
        'exited 78: harness: configuration: env:HARNESS_HOST: server.host: http://127.0.0.1 is not a host: give a host name or an ' +
          'address such as 127.0.0.1, not a URL\n',
      );
    },
  );

  it('names a host that does not resolve and where it was set', async () => {
    const serving = await serve(['--host', 'no-such-host.invalid'], { HARNESS_API_KEYS: 'server-key-1:acme' });
    expect(serving.startLine).toMatch(
      /^exited 1: harness: no-such-host\.invalid (is not a name this machine resolves|could not be resolved: the name service did not answer) \(host from --host\): /,
    );
  });
});
