/**
 * Harness figures of issue 5: the cost of memory on the time to a run's final answer, and
 * requests per second and p99 of the HTTP API under a small bounded load over loopback.
 *
 * - Memory overhead: two harnesses side by side (memory on; `mode = off`), each behind
 *   `startServer`, both talking to one scripted OpenAI-compatible server over real HTTP
 *   (the real client; the delays are scripted in that server). Timed over the real API:
 *   `POST /v1/runs`, then the run's SSE stream until the final `assistant.message`.
 * - Load: the harness runs in a child process (so the load generator does not share its
 *   event loop) with instant in-process models (`createHarness({ agentModel, memoryModel })`),
 *   and this process sends a fixed number of requests with `fetch` (keep-alive) at a fixed
 *   concurrency.
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { loadConfig } from '../src/config/load-config.js';
import type { LanguageModel, LanguageModelCallOptions, LanguageModelResult } from '../src/llm/language-model.js';
import { createHarness } from '../src/server/create-harness.js';
import { startServer } from '../src/server/serve.js';
import type { RunningServer } from '../src/server/serve.js';
import { eventData, openSse } from '../test/e2e/sse-client.js';
import { startScriptedOpenAIServer } from '../test/support/scripted-openai-server.js';
import type { ScriptedReply, ScriptedRequest } from '../test/support/scripted-openai-server.js';
import { forkBenchChild } from './child-process.js';
import { percentile, verdict } from './measure.js';

const SERVER_FLAG = '--bench-harness-server';
const STEPS = 10;
const AGENT_DELAY_MS = 50;
const OBSERVER_DELAY_MS = 500;
const REPETITIONS = 5;
const LOAD_REQUESTS = 2_000;
const LOAD_CONCURRENCY = 16;
const LOAD_SCOPE = '/v1/memory/bench/load-conv/agent';

/** Prints every harness figure: memory overhead on a 10-step run, then HTTP load. */
export async function benchHarness(): Promise<void> {
  const [load1] = loadavg();
  console.log(
    `\n(harness figures: ${availableParallelism()} CPUs, load average ${load1?.toFixed(2) ?? '?'} at start; ` +
      `timings are wall-clock)`,
  );
  await benchMemoryOverhead();
  await benchHttpLoad();
}

// ---------------------------------------------------------------------------------------------
// Memory overhead on the time to the final answer

interface Variant {
  readonly name: 'memory on' | 'memory off';
  readonly server: RunningServer;
  readonly root: string;
}

interface RunTiming {
  readonly finalMs: number;
  readonly completedMs: number;
}

function chatMessages(request: ScriptedRequest): Array<{ role: string; content?: string | null }> {
  return (request.body as { messages?: Array<{ role: string; content?: string | null }> } | undefined)?.messages ?? [];
}

/** Agent turns: a tool call on steps 0-8, the final answer on step 9; memory calls: slow. */
function benchReply(request: ScriptedRequest): ScriptedReply {
  const messages = chatMessages(request);
  const head = `${messages[0]?.content ?? ''}\n${messages[1]?.content ?? ''}`;
  if (head.includes('structured reflection'))
    return { delayMs: OBSERVER_DELAY_MS, reply: { text: 'SUMMARY:\nThe user runs a benchmark.\n' } };
  if (head.includes('observational memory processor'))
    return { delayMs: OBSERVER_DELAY_MS, reply: { text: 'IMPORTANCE:0.6\nThe user runs a ten-step benchmark task.' } };
  let lastUser = -1;
  messages.forEach((message, index) => {
    if (message.role === 'user') lastUser = index;
  });
  const step = messages.slice(lastUser + 1).filter((message) => message.role === 'assistant').length;
  const answer =
    step < STEPS - 1
      ? {
          text: `step ${step}`,
          toolCalls: [
            {
              id: `call_${step}`,
              name: 'working_memory',
              arguments: { action: 'set', key: `step_${step}`, value: { done: true } },
            },
          ],
        }
      : { text: 'All ten steps are done.' };
  return { delayMs: AGENT_DELAY_MS, reply: answer };
}

async function startVariant(
  name: Variant['name'],
  modelUrl: string,
  memoryEnv: Record<string, string>,
): Promise<Variant> {
  const root = mkdtempSync(join(tmpdir(), 'hm-bench-harness-'));
  const env = {
    HARNESS_WORKSPACE: join(root, 'workspace'),
    OPENAI_BASE_URL: modelUrl,
    OPENAI_API_KEY: 'bench',
    ...memoryEnv,
  };
  const harness = await createHarness({ config: loadConfig({ env, cwd: root, homeDir: join(root, 'home') }), env });
  return { name, server: await startServer(harness, { port: 0 }), root };
}

/** One run over the API: from `POST /v1/runs` to the final `assistant.message`, and to `run.completed`. */
async function timeRun(variant: Variant, conversationId: string): Promise<RunTiming> {
  const start = performance.now();
  const created = await fetch(`${variant.server.url}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'Do the ten-step task.', conversation_id: conversationId, max_steps: STEPS }),
  });
  const { run_id: runId } = (await created.json()) as { run_id: string };
  if (created.status !== 202) throw new Error(`POST /v1/runs answered ${created.status}`);
  const stream = await openSse(`${variant.server.url}/v1/runs/${runId}/events`);
  let finalMs = Number.NaN;
  for await (const frame of stream) {
    const event = eventData(frame);
    if (event.type === 'assistant.message' && event.payload['final'] === true) finalMs = performance.now() - start;
    if (event.type === 'run.failed' || event.type === 'run.cancelled')
      throw new Error(`bench run ended with ${event.type}: ${frame.data}`);
    if (event.type === 'run.completed') return { finalMs, completedMs: performance.now() - start };
  }
  throw new Error('the event stream closed before run.completed');
}

async function benchMemoryOverhead(): Promise<void> {
  console.log(
    `\n## Harness: time to the final answer of a ${STEPS}-step run (${STEPS - 1} tool calls, then the answer)`,
  );
  console.log(
    `   agent model ${AGENT_DELAY_MS} ms a turn, observer ${OBSERVER_DELAY_MS} ms; real OpenAI-compatible ` +
      `client over HTTP to a scripted`,
  );
  console.log(
    '   server; runs started with POST /v1/runs and timed on their SSE stream; memory on vs [memory] mode = ' +
      'off, interleaved',
  );
  const model = await startScriptedOpenAIServer();
  model.setDefaultReply(benchReply);
  const on = await startVariant('memory on', model.url, {
    HARNESS_MEMORY_DEFAULT_ENABLED: 'true',
    HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '1',
  });
  const off = await startVariant('memory off', model.url, { HARNESS_MEMORY_MODE: 'off' });
  try {
    const timings = new Map<Variant['name'], RunTiming[]>([
      ['memory on', []],
      ['memory off', []],
    ]);
    let observerCalls = 0;
    // One untimed warmup each, then the repetitions, alternating which variant goes first.
    for (let repetition = -1; repetition < REPETITIONS; repetition++) {
      const order = repetition % 2 === 0 ? [on, off] : [off, on];
      for (const variant of order) {
        const before = model.requests.length;
        const timing = await timeRun(variant, `bench-${variant.name.replace(' ', '-')}-${repetition + 1}`);
        if (variant === on)
          observerCalls += model.requests
            .slice(before)
            .filter((request) => chatMessages(request)[1]?.content?.includes('observational memory processor')).length;
        if (repetition >= 0) timings.get(variant.name)?.push(timing);
      }
    }
    const onTimes = timings.get('memory on') ?? [];
    const offTimes = timings.get('memory off') ?? [];
    const onFinal = median(onTimes.map((timing) => timing.finalMs));
    const offFinal = median(offTimes.map((timing) => timing.finalMs));
    const list = (values: readonly RunTiming[]) => values.map((timing) => timing.finalMs.toFixed(0)).join(', ');
    console.log(
      `${'memory off: time to final answer'.padEnd(58)}  median ${offFinal.toFixed(1).padStart(8)} ms  ` +
        `(runs: ${list(offTimes)} ms)`,
    );
    console.log(
      `${'memory on:  time to final answer'.padEnd(58)}  median ${onFinal.toFixed(1).padStart(8)} ms  (runs: ` +
        `${list(onTimes)} ms)`,
    );
    const ratio = onFinal / offFinal;
    console.log(
      `${'final answer, memory on / memory off'.padEnd(58)}  ratio ${ratio.toFixed(3).padStart(9)}     ` +
        `target ≤ 1.1  ${verdict(ratio <= 1.1)}`,
    );
    const onDone = median(onTimes.map((timing) => timing.completedMs));
    const offDone = median(offTimes.map((timing) => timing.completedMs));
    console.log(
      `${'run.completed (waits for the run’s memory work)'.padEnd(58)}  on ${onDone.toFixed(0)} ms, off ` +
        `${offDone.toFixed(0)} ms; observer calls per run (memory on): ` +
        `${(observerCalls / (REPETITIONS + 1)).toFixed(1)}`,
    );
  } finally {
    await on.server.close();
    await off.server.close();
    await model.close();
    rmSync(on.root, { recursive: true, force: true });
    rmSync(off.root, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP load

interface LoadResult {
  readonly name: string;
  readonly count: number;
  readonly errors: number;
  readonly seconds: number;
  readonly medianMs: number;
  readonly p99Ms: number;
}

/** Sends `total` requests, `concurrency` at a time, each body read to the end. */
async function load(
  name: string,
  total: number,
  concurrency: number,
  send: (index: number) => Promise<Response>,
  okStatus: number,
): Promise<LoadResult> {
  const latencies: number[] = [];
  let next = 0;
  let errors = 0;
  let firstError = '';
  const start = performance.now();
  const worker = async (): Promise<void> => {
    while (next < total) {
      const index = next++;
      const sent = performance.now();
      try {
        const response = await send(index);
        const body = await response.arrayBuffer();
        if (response.status !== okStatus) {
          errors++;
          firstError ||= `${response.status} ${Buffer.from(body).toString('utf8').slice(0, 200)}`;
        }
      } catch (error) {
        errors++;
        firstError ||= String(error);
      }
      latencies.push(performance.now() - sent);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - start) / 1000;
  if (firstError !== '') console.log(`   ${name}: ${errors} errors; first: ${firstError}`);
  latencies.sort((a, b) => a - b);
  return {
    name,
    count: total,
    errors,
    seconds,
    medianMs: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
  };
}

function reportLoad(result: LoadResult, target: string): void {
  const rps = result.count / result.seconds;
  console.log(
    [
      result.name.padEnd(58),
      `${Math.round(rps).toLocaleString('en').padStart(7)} req/s`,
      `median ${result.medianMs.toFixed(2).padStart(7)} ms`,
      `p99 ${result.p99Ms.toFixed(2).padStart(7)} ms`,
      `(${result.count.toLocaleString('en')} in ${result.seconds.toFixed(2)} s, ${result.errors} errors)`,
      `target ${target}`,
    ].join('  '),
  );
}

type ChildMessage = { type: 'ready'; url: string } | { type: 'settled'; runs: number; ms: number };

async function benchHttpLoad(): Promise<void> {
  console.log(
    `\n## Harness HTTP API under load: ${LOAD_REQUESTS.toLocaleString('en')} requests, ${LOAD_CONCURRENCY} ` +
      `concurrent, fetch keep-alive, loopback`,
  );
  console.log(
    '   the harness runs in a child process (SQLite, memory on, observe_min_tokens 1) with instant in-process models',
  );
  const child = forkBenchChild<ChildMessage>(fileURLToPath(import.meta.url), SERVER_FLAG);
  try {
    const { url } = await child.receive('ready');
    const getMemory = () => fetch(`${url}${LOAD_SCOPE}`);
    await load('warmup', 300, LOAD_CONCURRENCY, getMemory, 200);
    reportLoad(
      await load(`GET ${LOAD_SCOPE}`, LOAD_REQUESTS, LOAD_CONCURRENCY, getMemory, 200),
      'none in issue 5 (figure only)',
    );

    const postRun = (index: number) =>
      fetch(`${url}/v1/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: `load run ${index}`, conversation_id: `load-${index % 64}` }),
      });
    await load('warmup', 100, LOAD_CONCURRENCY, (index) => postRun(LOAD_REQUESTS + index), 202);
    child.send('settle');
    await child.receive('settled');
    reportLoad(
      await load(
        'POST /v1/runs (instant model; runs execute meanwhile)',
        LOAD_REQUESTS,
        LOAD_CONCURRENCY,
        postRun,
        202,
      ),
      'none in issue 5 (figure only)',
    );
    child.send('settle');
    const settled = await child.receive('settled');
    console.log(
      `${'   then all runs finished (agent turn + observation each)'.padEnd(58)}  ${settled.ms.toFixed(0)} ` +
        `ms after the last POST; ${settled.runs.toLocaleString('en')} runs in total`,
    );
  } finally {
    await child.close();
  }
}

// ---------------------------------------------------------------------------------------------
// The child process: the harness with instant models

function instantModel(answer: (options: LanguageModelCallOptions) => string): LanguageModel {
  return {
    specificationVersion: 'v1',
    provider: 'bench',
    modelId: 'instant',
    doGenerate: async (options): Promise<LanguageModelResult> => ({
      text: answer(options),
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 10, outputTokens: 5 },
    }),
  };
}

async function serveForLoad(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'hm-bench-load-'));
  // The load is one client: the per-tenant limits would refuse most of it, so they are lifted here.
  const env = {
    HARNESS_WORKSPACE: join(root, 'workspace'),
    HARNESS_MEMORY_DEFAULT_ENABLED: 'true',
    HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '1',
    HARNESS_MAX_WRITES_PER_SECOND: '1000000',
    HARNESS_MAX_CONCURRENT_RUNS: '1000000',
  };
  const harness = await createHarness({
    config: loadConfig({ env, cwd: root, homeDir: join(root, 'home') }),
    env,
    agentModel: instantModel(() => 'Done.'),
    memoryModel: instantModel((options) =>
      options.messages[0]?.content.includes('structured reflection')
        ? 'SUMMARY:\nThe user runs load tests.\n'
        : 'IMPORTANCE:0.6\nThe user asked for a load-test answer.',
    ),
  });
  const server = await startServer(harness, { port: 0 });
  // The scope read under load: observations from a few runs, and working-memory entries.
  for (let index = 0; index < 5; index++) {
    const run = await harness.runner.start({
      prompt: `Seed fact ${index}: the user prefers option ${index}.`,
      tenantId: 'bench',
      conversationId: 'load-conv',
      agentId: 'agent',
    });
    await harness.runner.wait(run.runId);
  }
  for (let index = 0; index < 5; index++)
    await harness.workingMemory.set(
      { tenantId: 'bench', conversationId: 'load-conv', agentId: 'agent' },
      `key_${index}`,
      { index, note: 'seeded' },
    );
  process.on('message', (message) => {
    void (async () => {
      if (message === 'settle') {
        const start = performance.now();
        await harness.runner.settle();
        const ms = performance.now() - start;
        process.send?.({ type: 'settled', runs: countRuns(harness.config.memory.sqlitePath), ms });
      } else if (message === 'close') {
        await server.close();
        rmSync(root, { recursive: true, force: true });
        process.disconnect();
      }
    })();
  });
  process.send?.({ type: 'ready', url: server.url });
}

function countRuns(sqlitePath: string): number {
  const db = new Database(sqlitePath, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM harness_runs').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    0.5,
  );
}

if (process.argv.includes(SERVER_FLAG) && process.send) {
  serveForLoad().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
