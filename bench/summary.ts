/**
 * The turn figures of issue 16, SQLite and Postgres side by side in one run, as one JSON
 * object (`npm run bench -- --json` prints it as its last line) and a table:
 *
 * - `pre_turn_read_*`: what the runner does before each LLM call (`prepareTurn`: history
 *   within its 8,000-token budget and both snippets) on one conversation of 10,000 stored
 *   messages and a scope of 10,000 observations and 100 working-memory entries; steady
 *   (caches warm, 2,000 reads) and right after a write (one observation and one
 *   working-memory entry stored, untimed, before each of 1,000 reads).
 * - `turn_read_*`: both snippets alone, the same two ways.
 * - `wm_set_per_s`, `wm_get_per_s`: working memory on that scope, sequential awaits.
 * - `observe_per_s`: `memory.observe` end to end on a fresh scope with an instant observer,
 *   one conversation awaiting each observe.
 * - `memory_turn_overhead_ms`: the median time of a one-step run (instant agent model, so
 *   all of it is outside the LLM) with memory on minus with memory off, below the observe
 *   threshold (nothing to observe) and above it (every turn observed by an instant observer,
 *   awaited before the run completes), interleaved.
 * - `memory_answer_overhead_ms`: the same runs timed to their final `assistant.message` instead:
 *   memory's share of the path to the answer. The rest of `memory_turn_overhead_ms` (the
 *   observation and its events) comes after the answer, before `run.completed`.
 *
 * - `floors`: the bare drivers on this machine (a one-row commit; a Postgres round trip), the
 *   limits the figures above are read against (`floors.ts`).
 *
 * Postgres is measured when `HARNESS_TEST_POSTGRES_URL` is set, on a schema of its own.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createAgentRunner } from '../src/agent/agent-runner.js';
import { createTurnPreparer } from '../src/agent/prepare-turn.js';
import { memoryIdOf, resolveScope } from '../src/core/scope.js';
import type { ScopeInput } from '../src/core/scope.js';
import { RUNE_TOKEN_ESTIMATOR } from '../src/core/token-estimator.js';
import type { LanguageModel } from '../src/llm/language-model.js';
import type { Observer } from '../src/memory/model-observer.js';
import { createObservationalMemory } from '../src/memory/observational-memory.js';
import { createWorkingMemory } from '../src/memory/working-memory.js';
import { openPostgresBackend } from '../src/server/postgres-backend.js';
import type { ConversationMessage, RunStore } from '../src/storage/run-store.js';
import { createSqliteRunStore } from '../src/storage/sqlite/sqlite-run-store.js';
import { createSqliteStore } from '../src/storage/sqlite/sqlite-store.js';
import type { MemoryStore, NewObservation } from '../src/storage/store.js';
import { measure, percentile, report, reportRate, throughputWithin, verdict } from './measure.js';
import { postgresFloors, sqliteFloors } from './floors.js';
import type { Floors } from './floors.js';
import { addObservations, entryKey, populateScope } from './populate-scope.js';

const OBSERVATIONS = 10_000;
const MESSAGES = 10_000;
const ENTRIES = 100;
const AFTER_WRITE_SAMPLES = 1_000;
const OVERHEAD_RUNS = 300;

/** One backend's figures, as the JSON line prints them. */
export interface BackendSummary {
  observe_per_s: number;
  turn_read_p99_ms: number;
  turn_read_after_write_p99_ms: number;
  pre_turn_read_p99_ms: number;
  pre_turn_read_after_write_p99_ms: number;
  wm_set_per_s: number;
  wm_get_per_s: number;
  /** Medians, memory on minus memory off, per one-step run. */
  memory_turn_overhead_ms: { below_threshold: number; above_threshold: number };
  /** As `memory_turn_overhead_ms`, to the run's final answer rather than to its end. */
  memory_answer_overhead_ms: { below_threshold: number; above_threshold: number };
}

/** The JSON object of `npm run bench -- --json`. */
export interface BenchSummary {
  sqlite: BackendSummary;
  postgres?: BackendSummary;
  /** The bare driver's figures on this machine, measured in the same run (see `floors.ts`). */
  floors: { sqlite: Floors; postgres?: Floors };
}

interface Backend {
  readonly name: 'sqlite' | 'postgres';
  /** A fresh memory store and run store on the backend's database, and what else to close after them. */
  open(): Promise<{ store: MemoryStore; runStore: RunStore; close?: () => Promise<void> }>;
}

const INSTANT_OBSERVER: Observer = {
  async observe(input) {
    return [{ content: `The user said turn ${input.messages.at(-1)?.seq ?? 0} mattered.`, importance: 0.5 }];
  },
};

const INSTANT_AGENT: LanguageModel = {
  specificationVersion: 'v1',
  provider: 'bench',
  modelId: 'instant',
  doGenerate: async () => ({
    text: 'Done.',
    toolCalls: [],
    finishReason: 'stop',
    usage: { inputTokens: 10, outputTokens: 2 },
  }),
};

/** Conversation messages of 20 to 80 tokens, users and assistants taking turns. */
function conversationMessages(memoryId: string, first: number, count: number): ConversationMessage[] {
  return Array.from({ length: count }, (_, offset) => {
    const index = first + offset;
    const content =
      `Message ${index}: ${'we talked about the deploy window and the reviewer again '.repeat(1 + (index % 5))}`.slice(
        0,
        80 + (index % 7) * 40,
      );
    return {
      messageId: `${memoryId}:m${index}`,
      runId: `run-${Math.floor(index / 2)}`,
      role: index % 2 === 0 ? 'user' : 'assistant',
      content,
      tokenCount: RUNE_TOKEN_ESTIMATOR.estimate(content),
    };
  });
}

async function summarize(backend: Backend): Promise<BackendSummary> {
  const { store, runStore, close } = await backend.open();
  try {
    const input: ScopeInput = { tenantId: 'bench', conversationId: 'pre-turn' };
    const scope = resolveScope(input);
    const memoryId = memoryIdOf(scope);
    await populateScope(store, scope, OBSERVATIONS, ENTRIES);
    for (let first = 0; first < MESSAGES; first += 500)
      await runStore.appendMessages(memoryId, conversationMessages(memoryId, first, 500));
    const memory = createObservationalMemory({
      store,
      observer: INSTANT_OBSERVER,
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    const workingMemory = createWorkingMemory({ store });
    const preparer = createTurnPreparer({ observationalMemory: memory, workingMemory, runStore });
    const label =
      `${backend.name}, ${OBSERVATIONS.toLocaleString('en')} obs, ` + `${MESSAGES.toLocaleString('en')} messages`;
    const written: NewObservation = {
      content: 'The user changed the deploy window to Thursday.',
      importance: 0.8,
      tokenCount: 12,
    };
    let writes = 0;
    const write = async (): Promise<void> => {
      await addObservations(store, scope, [written]);
      await workingMemory.set(input, entryKey(writes++ % ENTRIES), {
        note: 'changed after the last turn',
        turn: writes,
      });
    };
    const snippets = async (): Promise<string> => `${await workingMemory.snippet(input)}${await memory.snippet(input)}`;
    const prepare = () => preparer.prepareTurn(input);
    const history = (await prepare()).history.length;
    console.log(`   ${backend.name}: a turn replays ${history} messages of history`);

    const turnRead = await measure(`${label}: snippets, steady`, snippets, { samples: 2_000, warmup: 50 });
    // 1,000 reads after writes: the p99 is then the tenth slowest, not the second, so one
    // stall of the machine does not decide it.
    const turnReadAfterWrite = await measure(`${label}: snippets, after a write`, snippets, {
      samples: AFTER_WRITE_SAMPLES,
      warmup: 20,
      before: write,
    });
    const preTurn = await measure(`${label}: pre-turn read, steady`, prepare, { samples: 2_000, warmup: 50 });
    const preTurnAfterWrite = await measure(`${label}: pre-turn read, after a write`, prepare, {
      samples: AFTER_WRITE_SAMPLES,
      warmup: 20,
      before: write,
    });
    for (const item of [turnRead, turnReadAfterWrite]) report(item);
    report(preTurn, `p99 ≤ 1 ms: ${verdict(preTurn.p99Ms <= 1)}`);
    report(preTurnAfterWrite, `p99 ≤ 1.5 ms: ${verdict(preTurnAfterWrite.p99Ms <= 1.5)}`);

    const rate = { maxSeconds: 1.5, minCount: 200 };
    const wmGet = await throughputWithin(
      `${backend.name}: working memory get`,
      (index) => workingMemory.get(input, entryKey(index % ENTRIES)),
      { ...rate, maxCount: 500_000 },
    );
    const wmSet = await throughputWithin(
      `${backend.name}: working memory set`,
      (index) =>
        workingMemory.set(input, entryKey(index % ENTRIES), {
          note: 'replaced value of about the same size',
          turn: index,
        }),
      { ...rate, maxCount: 100_000 },
    );
    const fresh: ScopeInput = { tenantId: 'bench', conversationId: 'observe-fresh' };
    for (let index = 0; index < 50; index++)
      await memory.observe({ scope: fresh, messages: [{ id: `warm-${index}`, role: 'user', content: 'warm up' }] });
    const observe = await throughputWithin(
      `${backend.name}: observe, instant observer`,
      (index) =>
        memory.observe({
          scope: fresh,
          messages: [{ id: `turn-${index}`, role: 'user', content: `Turn ${index}: keep the deploy window in mind.` }],
        }),
      { ...rate, maxCount: 20_000 },
    );
    reportRate(wmSet, `≥ 50,000/s: ${verdict(wmSet.opsPerSecond >= 50_000)}`);
    reportRate(wmGet, `≥ 300,000/s: ${verdict(wmGet.opsPerSecond >= 300_000)}`);
    reportRate(observe);
    const { overhead, toAnswer } = await memoryTurnOverhead(store, runStore, backend.name);
    return {
      observe_per_s: round(observe.opsPerSecond, 0),
      turn_read_p99_ms: round(turnRead.p99Ms, 3),
      turn_read_after_write_p99_ms: round(turnReadAfterWrite.p99Ms, 3),
      pre_turn_read_p99_ms: round(preTurn.p99Ms, 3),
      pre_turn_read_after_write_p99_ms: round(preTurnAfterWrite.p99Ms, 3),
      wm_set_per_s: round(wmSet.opsPerSecond, 0),
      wm_get_per_s: round(wmGet.opsPerSecond, 0),
      memory_turn_overhead_ms: overhead,
      memory_answer_overhead_ms: toAnswer,
    };
  } finally {
    await store.dispose();
    await runStore.dispose();
    await close?.();
  }
}

/**
 * Medians of one-step runs, memory on minus memory off, below and above the observe threshold:
 * to the run's end (`overhead`) and to its final answer (`toAnswer`).
 */
async function memoryTurnOverhead(
  store: MemoryStore,
  runStore: RunStore,
  backend: string,
): Promise<{
  overhead: BackendSummary['memory_turn_overhead_ms'];
  toAnswer: BackendSummary['memory_answer_overhead_ms'];
}> {
  const workspace = mkdtempSync(join(tmpdir(), 'hm-bench-turn-'));
  try {
    const runnerWith = (memoryOptions: Parameters<typeof createObservationalMemory>[0]) => {
      const observationalMemory = createObservationalMemory(memoryOptions);
      return createAgentRunner({
        model: INSTANT_AGENT,
        observationalMemory,
        workingMemory: createWorkingMemory({ store }),
        runStore,
        memoryTools: [],
        workspace,
      });
    };
    const variants = {
      off: runnerWith({ store, mode: 'off' }),
      below: runnerWith({
        store,
        observer: INSTANT_OBSERVER,
        defaultEnabled: true,
        defaults: { observeMinTokens: 1_000_000 },
      }),
      above: runnerWith({ store, observer: INSTANT_OBSERVER, defaultEnabled: true, defaults: { observeMinTokens: 1 } }),
    };
    const times: Record<keyof typeof variants, number[]> = { off: [], below: [], above: [] };
    const answerTimes: Record<keyof typeof variants, number[]> = { off: [], below: [], above: [] };
    const names = Object.keys(variants) as Array<keyof typeof variants>;
    for (let index = -30; index < OVERHEAD_RUNS; index++) {
      // Rotated so no variant always runs first.
      for (let offset = 0; offset < names.length; offset++) {
        const name = names[(index + 30 + offset) % names.length] as keyof typeof variants;
        const runner = variants[name];
        const start = process.hrtime.bigint();
        let answered = Number.NaN;
        const run = await runner.start(
          {
            prompt: `Turn ${index}: keep the deploy window in mind.`,
            tenantId: 'bench',
            conversationId: `overhead-${name}`,
          },
          {
            onEvent: (event) => {
              if (event.type === 'assistant.message' && event.payload['final'] === true)
                answered = Number(process.hrtime.bigint() - start) / 1e6;
            },
          },
        );
        const done = await runner.wait(run.runId);
        if (done.status !== 'completed') throw new Error(`bench: a ${name} run ended ${done.status}`);
        if (index >= 0) {
          times[name].push(Number(process.hrtime.bigint() - start) / 1e6);
          answerTimes[name].push(answered);
        }
      }
    }
    const median = (values: number[]): number =>
      percentile(
        [...values].sort((a, b) => a - b),
        0.5,
      );
    const off = median(times.off);
    const result = {
      below_threshold: round(median(times.below) - off, 3),
      above_threshold: round(median(times.above) - off, 3),
    };
    const offAnswer = median(answerTimes.off);
    const toAnswer = {
      below_threshold: round(median(answerTimes.below) - offAnswer, 3),
      above_threshold: round(median(answerTimes.above) - offAnswer, 3),
    };
    console.log(
      `${`${backend}: one-step run, memory off`.padEnd(58)}  median ${off.toFixed(3).padStart(8)} ms; memory ` +
        `on adds ${result.below_threshold.toFixed(3)} ms below the observe threshold, ` +
        `${result.above_threshold.toFixed(3)} ms above it (target ≤ 0.5 ms: ` +
        `${verdict(result.below_threshold <= 0.5 && result.above_threshold <= 0.5)})`,
    );
    console.log(
      `${`${backend}: the same runs, to their final answer`.padEnd(58)}  median ${offAnswer.toFixed(3).padStart(8)} ` +
        `ms memory off; memory on adds ${toAnswer.below_threshold.toFixed(3)} ms below the threshold, ` +
        `${toAnswer.above_threshold.toFixed(3)} ms above it (the rest comes after the answer)`,
    );
    return { overhead: result, toAnswer };
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** Measures the issue-16 figures on SQLite (and Postgres when configured) and returns them. */
export async function benchSummary(): Promise<BenchSummary> {
  console.log(
    `\n# Turn figures (issue 16): ${MESSAGES.toLocaleString('en')} messages, ` +
      `${OBSERVATIONS.toLocaleString('en')} observations, ${ENTRIES} entries per scope`,
  );
  const directory = mkdtempSync(join(tmpdir(), 'hm-bench-summary-'));
  const url = process.env['HARNESS_TEST_POSTGRES_URL'];
  const schema = `hm_bench_${process.pid}_${randomBytes(4).toString('hex')}`;
  let files = 0;
  try {
    const sqlite = await summarize({
      name: 'sqlite',
      open: async () => {
        const path = join(directory, `summary-${++files}.db`);
        return { store: createSqliteStore({ path }), runStore: createSqliteRunStore({ path }) };
      },
    });
    if (!url) {
      console.log('   postgres skipped: HARNESS_TEST_POSTGRES_URL is unset');
      return { sqlite, floors: { sqlite: await sqliteFloors(directory) } };
    }
    const postgres = await summarize({
      name: 'postgres',
      // The stores as the harness server opens them: one pool, its read lane, the event hub.
      open: () => openPostgresBackend({ connectionString: url, schema }),
    });
    const floors = { sqlite: await sqliteFloors(directory), postgres: await postgresFloors(url, schema) };
    return { sqlite, postgres, floors };
  } finally {
    rmSync(directory, { recursive: true, force: true });
    if (url) {
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => admin.end());
    }
  }
}
