import { mkdtempSync, rmSync } from 'node:fs';
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

async function cli(argv: string[], signal?: AbortSignal) {
  const workspace = mkdtempSync(join(tmpdir(), 'hm-cli-run-'));
  directories.push(workspace);
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    env: {
      HARNESS_WORKSPACE: workspace,
      OPENAI_BASE_URL: model.url,
      OPENAI_API_KEY: 'test',
      HARNESS_MEMORY_DEFAULT_ENABLED: 'true',
      HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '1',
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
    const running = cli(['run', 'Remember that I like tea', '--conversation', 'c-int', '--json'], controller.signal);
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
