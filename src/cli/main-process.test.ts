import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedOpenAIServer } from '../../test/support/scripted-openai-server.js';
import type { ScriptedRequest, ScriptedServer } from '../../test/support/scripted-openai-server.js';
import { runCli } from './run-cli.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
let model: ScriptedServer;
let workspace: string;

const isObserverRequest = (request: ScriptedRequest): boolean =>
  JSON.stringify(request.body ?? '').includes('observational memory processor');

beforeAll(async () => {
  model = await startScriptedOpenAIServer();
  model.setDefaultReply((request) =>
    isObserverRequest(request)
      ? { delayMs: 60_000, reply: { text: 'IMPORTANCE:0.9\nToo late.' } }
      : { text: 'the answer' },
  );
  workspace = mkdtempSync(join(tmpdir(), 'hm-cli-process-'));
});

afterAll(async () => {
  await model.close();
  rmSync(workspace, { recursive: true, force: true });
});

function environment(): Record<string, string> {
  return {
    PATH: process.env['PATH'] ?? '',
    HOME: workspace,
    NO_COLOR: '1',
    HARNESS_WORKSPACE: workspace,
    OPENAI_BASE_URL: model.url,
    OPENAI_API_KEY: 'test',
    HARNESS_MEMORY_DEFAULT_ENABLED: 'true',
    HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '1',
  };
}

interface Child {
  /** Resolves with the exit code and stderr once the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: string | null; stderr: string }>;
  kill(signal: NodeJS.Signals): void;
}

/** Starts `src/cli/main.ts`; with `closeStdout`, the reading end of its stdout is closed before it writes. */
function harness(args: string[], options: { closeStdout?: boolean } = {}): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: root,
    env: environment(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (options.closeStdout) child.stdout.destroy();
  else child.stdout.resume();
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: string | null; stderr: string }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stderr })),
  );
  return { exited, kill: (signal) => void child.kill(signal) };
}

describe('harness (process): a closed stdout', () => {
  it.each([
    ['--help', ['--help']],
    ['wm list', ['wm', 'list', '--conversation', 'c-pipe']],
    ['run --json', ['run', 'hello', '--conversation', 'c-pipe-run', '--json']],
  ])(
    '%s stops writing and exits 0, with no stack trace',
    async (_, args) => {
      const set = await runCli(['wm', 'set', '--conversation', 'c-pipe', 'k', '"v"'], {
        env: environment(),
        stdout: { write: () => true },
        stderr: { write: () => true },
        cwd: workspace,
        homeDir: workspace,
      });
      expect(set).toBe(0);
      const { code, stderr } = await harness(args, { closeStdout: true }).exited;
      expect(stderr).not.toContain('EPIPE');
      expect(stderr).not.toMatch(/^\s+at /m);
      expect(code).toBe(0);
    },
    30_000,
  );
});

describe('harness (process): Ctrl-C', () => {
  it('ends `harness run` promptly with exit 1 while memory works after the answer', async () => {
    const observing = model.requests.filter(isObserverRequest).length;
    const child = harness(['run', 'Remember that I like tea', '--conversation', 'c-sigint']);
    // Polled until the observer has been asked, after the answer; the test's timeout bounds the wait.
    while (model.requests.filter(isObserverRequest).length === observing)
      await new Promise((resolve) => setTimeout(resolve, 20));
    const interrupted = Date.now();
    child.kill('SIGINT');
    const { code, stderr } = await child.exited;
    expect(Date.now() - interrupted).toBeLessThan(10_000);
    expect(code).toBe(1);
    expect(stderr).toContain('run cancelled');
  }, 40_000);
});
