/**
 * One harness replica of the replica tests. Run with `node --import tsx`.
 *
 * Builds the real harness with `createHarness` on Postgres (`HARNESS_MEMORY_DB_DRIVER=postgres`,
 * `HARNESS_MEMORY_DB_DSN`, `HARNESS_MEMORY_SCHEMA`, read through `loadConfig` like `harness
 * serve`), serves it with `startServer` on port 0, and prints one JSON line
 * `{"ready": true, "name", "url", "pid", "root"}` (`root`: its temp folder, which the parent removes
 * if the replica is killed). Models are in-process and instant:
 *
 * - memory model: the observer answers one observation naming the message seqs it was shown,
 *   `obs for messages <first>-<last>`; the reflector a fixed summary. With `REPLICA_SLOW_FILE`
 *   set, the first observer call (across all replicas sharing that file) whose transcript
 *   contains `SLOW` prints `{"slowObserver": true, "name", "pid"}` and then waits
 *   `REPLICA_SLOW_MS` (honouring the abort signal), so a test can kill it mid-operation.
 * - agent model: a prompt `steps=N delay=D` takes N steps (N − 1 `working_memory` set calls,
 *   then a final answer), each answered after D ms; any other prompt is answered at once.
 *
 * A test-only route (not in `src/`): `POST /test/observe` with
 * `{tenant_id, conversation_id, agent_id?, run_id?, messages: [{id, role, content}]}` calls
 * `observationalMemory.observe` and answers its result.
 *
 * The background worker is started here with short intervals (`REPLICA_POLL_MS`, default
 * 100; `REPLICA_STALE_CHECK_MS`, default 250) instead of `createHarness`'s 1 s / 30 s, so a
 * stale lease is noticed soon after it expires. Stops cleanly on SIGTERM or when stdin closes.
 *
 * Environment: `REPLICA_NAME`, `HARNESS_MEMORY_*` and `HARNESS_MAX_*` (passed to `loadConfig`), `REPLICA_SLOW_FILE`,
 * `REPLICA_SLOW_MS` (default 30000), `REPLICA_POLL_MS`, `REPLICA_STALE_CHECK_MS`,
 * `REPLICA_HEARTBEAT_MS` (SSE heartbeat, default 15000 as in production).
 * @module
 */
import { openSync, closeSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load-config.js';
import type { LanguageModel, LanguageModelCallOptions, LanguageModelResult } from '../../src/llm/language-model.js';
import { createHarness } from '../../src/server/create-harness.js';
import { startServer } from '../../src/server/serve.js';
import { OBSERVER_MARK, REFLECTOR_MARK } from '../e2e/e2e-harness.js';

const name = process.env['REPLICA_NAME'] ?? `replica-${process.pid}`;
const slowFile = process.env['REPLICA_SLOW_FILE'] ?? '';
const slowMs = Number(process.env['REPLICA_SLOW_MS'] ?? '30000');
const pollMs = Number(process.env['REPLICA_POLL_MS'] ?? '100');
const staleCheckMs = Number(process.env['REPLICA_STALE_CHECK_MS'] ?? '250');
// The production default: an SSE stream re-reads the store on its own only this often, so
// live events on another replica's stream can only come from LISTEN/NOTIFY.
const heartbeatMs = Number(process.env['REPLICA_HEARTBEAT_MS'] ?? '15000');

const print = (line: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(line)}\n`);
};

const result = (text: string, toolCalls: LanguageModelResult['toolCalls'] = []): LanguageModelResult => ({
  text,
  toolCalls,
  finishReason: toolCalls.length > 0 ? 'tool-calls' : 'stop',
  usage: { inputTokens: 10, outputTokens: 5 },
});

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });

/** Whether this call is the first slow one: the file is created by exactly one caller. */
function claimSlowTurn(): boolean {
  if (slowFile === '') return false;
  try {
    closeSync(openSync(slowFile, 'wx'));
    return true;
  } catch {
    return false;
  }
}

const memoryModel: LanguageModel = {
  specificationVersion: 'v1',
  provider: 'replica-test',
  modelId: 'instant-memory',
  async doGenerate(options: LanguageModelCallOptions) {
    const [system, user] = options.messages;
    const head = `${system?.content ?? ''}\n${user?.content ?? ''}`;
    if (system?.role === 'system' && head.includes(REFLECTOR_MARK))
      return result('SUMMARY:\nThe user is working on a project.\n\nSUPERSESSIONS:\n\nCONTRADICTIONS:\n');
    if (!head.includes(OBSERVER_MARK)) return result('unexpected memory prompt');
    const text = user?.content ?? '';
    const transcript = text.slice(text.indexOf('<transcript>'));
    const seqs = [...transcript.matchAll(/^\[(\d+)\] /gm)].map((match) => Number(match[1]));
    if (transcript.includes('SLOW') && claimSlowTurn()) {
      print({ slowObserver: true, name, pid: process.pid });
      await sleep(slowMs, options.abortSignal);
    }
    return result(`IMPORTANCE:0.5\nobs for messages ${seqs[0] ?? 0}-${seqs.at(-1) ?? 0}`);
  },
};

const agentModel: LanguageModel = {
  specificationVersion: 'v1',
  provider: 'replica-test',
  modelId: 'scripted-agent',
  async doGenerate(options: LanguageModelCallOptions) {
    const messages = options.messages;
    let lastUser = -1;
    messages.forEach((message, index) => {
      if (message.role === 'user') lastUser = index;
    });
    const prompt = messages[lastUser]?.content ?? '';
    const step = messages.slice(lastUser + 1).filter((message) => message.role === 'assistant').length;
    const steps = Number(/steps=(\d+)/.exec(prompt)?.[1] ?? '1');
    const delay = Number(/delay=(\d+)/.exec(prompt)?.[1] ?? '0');
    if (delay > 0) await sleep(delay, options.abortSignal);
    if (step + 1 < steps) {
      return result(`step ${step}`, [
        {
          id: `call_${step}`,
          name: 'working_memory',
          arguments: JSON.stringify({ action: 'set', key: `step-${step}`, value: { step } }),
        },
      ]);
    }
    return result(`final answer after ${step + 1} steps`);
  },
};

const root = mkdtempSync(join(tmpdir(), 'hm-replica-'));
const env: Record<string, string> = { HARNESS_WORKSPACE: join(root, 'workspace') };
for (const [key, value] of Object.entries(process.env)) {
  if ((key.startsWith('HARNESS_MEMORY_') || key.startsWith('HARNESS_MAX_')) && value !== undefined) env[key] = value;
}

try {
  const config = loadConfig({ env, cwd: root, homeDir: join(root, 'home') });
  const harness = await createHarness({ config, env, agentModel, memoryModel, startWorker: false, heartbeatMs });
  harness.observationalMemory.subscribe((event) => {
    if (event.type === 'memory.operation.failed')
      process.stderr.write(`[${name}] operation failed: ${event.operationType} ${event.operationId}: ${event.error}\n`);
  });
  harness.app.post('/test/observe', async (context) => {
    const body = (await context.req.json()) as {
      tenant_id: string;
      conversation_id: string;
      agent_id?: string;
      run_id?: string;
      messages: Array<{ id: string; role: string; content: string }>;
    };
    const observed = await harness.observationalMemory.observe({
      scope: {
        tenantId: body.tenant_id,
        conversationId: body.conversation_id,
        ...(body.agent_id === undefined ? {} : { agentId: body.agent_id }),
      },
      ...(body.run_id === undefined ? {} : { runId: body.run_id }),
      messages: body.messages,
    });
    return context.json({ replica: name, ...observed });
  });
  const worker = harness.observationalMemory.startWorker({ pollMs, staleCheckMs });
  const server = await startServer(harness, { port: 0 });
  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    await worker.stop();
    await server.close();
    rmSync(root, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.stdin.on('end', () => void stop());
  process.stdin.resume();
  print({ ready: true, name, url: server.url, pid: process.pid, root });
} catch (error) {
  process.stderr.write(`[${name}] failed to start: ${(error as Error).stack ?? String(error)}\n`);
  rmSync(root, { recursive: true, force: true });
  process.exit(1);
}
