/**
 * Storage figures of issue 3, in-memory and SQLite side by side: the per-turn read (both
 * snippets), working-memory set/get, observe operations end to end with an instant model,
 * and how these change with the observations per scope and the number of scopes.
 * Nothing here asserts; targets are printed next to the figures with ok/MISSED.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import BetterSqlite3 from 'better-sqlite3';
import { resolveScope } from '../src/core/scope.js';
import type { ScopeInput } from '../src/core/scope.js';
import type { Observer, Reflector } from '../src/memory/model-observer.js';
import { createObservationalMemory } from '../src/memory/observational-memory.js';
import type { ObservationalMemory } from '../src/memory/observational-memory.js';
import { createWorkingMemory } from '../src/memory/working-memory.js';
import type { WorkingMemory } from '../src/memory/working-memory.js';
import { createInMemoryStore } from '../src/storage/in-memory-store.js';
import { createSqliteStore } from '../src/storage/sqlite/sqlite-store.js';
import type { MemoryStore, NewObservation } from '../src/storage/store.js';
import { measure, report, reportRate, throughputInWindows, throughputWithin, verdict } from './measure.js';
import type { Measurement, Rate, WindowedRate } from './measure.js';
import { addObservations, entryKey, populateScope } from './populate-scope.js';

type BackendName = 'in-memory' | 'sqlite';

const BACKENDS: readonly BackendName[] = ['in-memory', 'sqlite'];
const READ_TARGET_P99_MS = 2;
const WM_SET_TARGET = 10_000;
const WM_GET_TARGET = 50_000;
const OBSERVE_TARGET = 2_000;
/**
 * Observes timed on a fresh scope (after 50 untimed), in windows: the scope holds 50 to 2,050 observations
 * meanwhile.
 */
const FRESH_WINDOWS = 5;
const FRESH_PER_WINDOW = 400;
const FRESH_OBSERVES = FRESH_WINDOWS * FRESH_PER_WINDOW;
/** Rounds of the observe figures, one after another. */
const OBSERVE_ROUNDS = 3;
/** The per-turn read "does not grow" when 10,000 scopes cost at most this times 10 scopes. */
const SCOPE_GROWTH_LIMIT = 1.5;

/** An observer model that answers at once with one observation. */
const INSTANT_OBSERVER: Observer = {
  async observe(input) {
    const last = input.messages.at(-1);
    return [{ content: `The user said turn ${last?.seq ?? 0} mattered.`, importance: 0.5 }];
  },
};

/** An instant reflector, for the variant where reflections bound the unreflected observations. */
const INSTANT_REFLECTOR: Reflector = {
  async reflect(input) {
    return `SUMMARY:\nThe user made ${input.observations.length} remarks about the deploy window.\n`;
  },
};

/** Garbage-collection pauses seen while a measurement ran. */
interface GcStats {
  readonly count: number;
  readonly maxMs: number;
  readonly totalMs: number;
}

/** Runs `work` and collects the GC pauses (perf_hooks `gc` entries) during it. */
async function withGc<T>(work: () => Promise<T>): Promise<{ result: T; gc: GcStats }> {
  const durations: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) durations.push(entry.duration);
  });
  observer.observe({ entryTypes: ['gc'] });
  try {
    const result = await work();
    await new Promise((resolve) => setTimeout(resolve, 0));
    for (const entry of observer.takeRecords()) durations.push(entry.duration);
    return {
      result,
      gc: {
        count: durations.length,
        maxMs: Math.max(0, ...durations),
        totalMs: durations.reduce((sum, value) => sum + value, 0),
      },
    };
  } finally {
    observer.disconnect();
  }
}

function describeGc(gc: GcStats): string {
  return `${gc.count} GC pauses, longest ${gc.maxMs.toFixed(2)} ms, ${gc.totalMs.toFixed(1)} ms in all`;
}

interface ScenarioSpec {
  readonly observations: number;
  readonly scopes: number;
  readonly entries: number;
  readonly steadySamples: number;
  readonly afterWriteSamples: number;
  /** Seconds each throughput figure may take at most (unless `minCount` takes longer). */
  readonly rateSeconds: number;
  readonly minCount: number;
}

interface ScenarioResult {
  readonly backend: BackendName;
  readonly spec: ScenarioSpec;
  readonly buildSeconds: number;
  readonly snippetChars: { readonly working: number; readonly observational: number };
  readonly steady: Measurement;
  readonly steadyGc: GcStats;
  readonly afterWrite: Measurement;
  readonly afterWriteGc: GcStats;
  readonly wmSet: Rate;
  readonly wmGet: Rate;
  readonly observe: Rate;
}

/** A store opened for the bench. */
interface BenchStore {
  readonly store: MemoryStore;
  /**
   * Runs `work` (store calls only, awaited one after another) as one batch: on SQLite, one
   * outer transaction, so each store transaction inside becomes a savepoint and the batch
   * commits once. Used only to build fixtures fast; never while timing.
   */
  readonly batch: (work: () => Promise<void>) => Promise<void>;
  readonly discard: () => Promise<void>;
}

/** Opens stores of one backend; SQLite files live in one temp directory, removed by `close`. */
class StoreFactory {
  private readonly directory = mkdtempSync(join(tmpdir(), 'harness-memory-bench-'));
  private counter = 0;

  open(backend: BackendName): BenchStore {
    if (backend === 'in-memory') {
      const store = createInMemoryStore();
      return { store, batch: (work) => work(), discard: () => store.dispose() };
    }
    const path = join(this.directory, `bench-${++this.counter}.db`);
    const database = new BetterSqlite3(path);
    const store = createSqliteStore({ path, database });
    return {
      store,
      batch: async (work) => {
        database.exec('BEGIN IMMEDIATE');
        try {
          await work();
          database.exec('COMMIT');
        } catch (error) {
          if (database.inTransaction) database.exec('ROLLBACK');
          throw error;
        }
      },
      discard: async () => {
        await store.dispose();
        for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
      },
    };
  }

  close(): void {
    rmSync(this.directory, { recursive: true, force: true });
  }
}

function scopeInput(index: number): ScopeInput {
  return { tenantId: 'bench', conversationId: `conversation-${index}` };
}

function services(
  store: MemoryStore,
  options: { reflector?: Reflector } = {},
): { memory: ObservationalMemory; workingMemory: WorkingMemory } {
  return {
    memory: createObservationalMemory({
      store,
      observer: INSTANT_OBSERVER,
      ...options,
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    }),
    workingMemory: createWorkingMemory({ store }),
  };
}

function perTurnRead(
  memory: ObservationalMemory,
  workingMemory: WorkingMemory,
  input: ScopeInput,
): () => Promise<{ working: string; observational: string }> {
  return async () => ({ working: await workingMemory.snippet(input), observational: await memory.snippet(input) });
}

async function runScenario(factory: StoreFactory, backend: BackendName, spec: ScenarioSpec): Promise<ScenarioResult> {
  const bench = factory.open(backend);
  const { store, discard } = bench;
  try {
    const buildStart = process.hrtime.bigint();
    // On SQLite, one commit per 500 scopes (the whole scope when there is one).
    for (let first = 0; first < spec.scopes; first += 500) {
      await bench.batch(async () => {
        for (let index = first; index < Math.min(spec.scopes, first + 500); index++) {
          await populateScope(store, resolveScope(scopeInput(index)), spec.observations, spec.entries);
        }
      });
    }
    const buildSeconds = Number(process.hrtime.bigint() - buildStart) / 1e9;

    const input = scopeInput(Math.floor(spec.scopes / 2));
    const scope = resolveScope(input);
    const { memory, workingMemory } = services(store);
    const read = perTurnRead(memory, workingMemory, input);
    const first = await read();
    collectGarbage();
    const label =
      `${backend}, ${spec.observations.toLocaleString('en')} obs × ` + `${spec.scopes.toLocaleString('en')} scopes`;
    const steady = await withGc(() =>
      measure(`${label}: read, steady`, read, { samples: spec.steadySamples, warmup: 20 }),
    );
    const written: NewObservation = {
      content: 'The user changed the deploy window to Thursday.',
      importance: 0.8,
      tokenCount: 12,
    };
    collectGarbage();
    const afterWrite = await withGc(() =>
      measure(`${label}: read, after a write`, read, {
        samples: spec.afterWriteSamples,
        // Enough untimed rounds that the rebuild path is compiled: a server turn runs warm code.
        warmup: Math.min(30, spec.afterWriteSamples),
        before: () => addObservations(store, scope, [written]),
      }),
    );

    const rateOptions = { maxSeconds: spec.rateSeconds, minCount: spec.minCount };
    collectGarbage();
    const wmGet = await throughputWithin(
      `${label}: working memory get`,
      (index) => workingMemory.get(input, entryKey(index % spec.entries)),
      {
        ...rateOptions,
        maxCount: 200_000,
      },
    );
    const wmSet = await throughputWithin(
      `${label}: working memory set`,
      (index) =>
        workingMemory.set(input, entryKey(index % spec.entries), {
          note: 'replaced value of about the same size',
          turn: index,
        }),
      { ...rateOptions, maxCount: 50_000 },
    );
    collectGarbage();
    const observe = await throughputWithin(
      `${label}: observe (instant model)`,
      (index) =>
        memory.observe({
          scope: input,
          messages: [{ id: `turn-${index}`, role: 'user', content: `Turn ${index}: keep the deploy window in mind.` }],
        }),
      { ...rateOptions, maxCount: 10_000 },
    );
    return {
      backend,
      spec,
      buildSeconds,
      snippetChars: { working: first.working.length, observational: first.observational.length },
      steady: steady.result,
      steadyGc: steady.gc,
      afterWrite: afterWrite.result,
      afterWriteGc: afterWrite.gc,
      wmSet,
      wmGet,
      observe,
    };
  } finally {
    await discard();
  }
}

/** Observe operations end to end on a fresh scope, the issue's headline figure. */
async function observeFreshScope(
  factory: StoreFactory,
  backend: BackendName,
  withReflector: boolean,
): Promise<WindowedRate> {
  const { store, discard } = factory.open(backend);
  try {
    const { memory } = services(store, withReflector ? { reflector: INSTANT_REFLECTOR } : {});
    collectGarbage();
    const input: ScopeInput = { tenantId: 'bench', conversationId: 'observe-fresh' };
    // Warm the code paths (JIT, prepared statements) before timing.
    for (let index = 0; index < 50; index++)
      await memory.observe({ scope: input, messages: [{ id: `warm-${index}`, role: 'user', content: 'warm up' }] });
    return await throughputInWindows(
      `${backend}: observe, instant observer${withReflector ? ' + instant reflector' : ''}`,
      (index) =>
        memory.observe({
          scope: input,
          messages: [{ id: `turn-${index}`, role: 'user', content: `Turn ${index}: keep the deploy window in mind.` }],
        }),
      { windows: FRESH_WINDOWS, perWindow: FRESH_PER_WINDOW },
    );
  } finally {
    await discard();
  }
}

const FIXED_WORK_OBJECT = Object.fromEntries(
  Array.from({ length: 40 }, (_, index) => [
    `key-${index}`,
    { text: 'remember the deploy window', index, flag: index % 2 === 0 },
  ]),
);

/** The same CPU work every call: a measure of how fast the host runs right now. */
function fixedWork(): number {
  let length = 0;
  for (let round = 0; round < 50; round++)
    length += JSON.stringify(JSON.parse(JSON.stringify(FIXED_WORK_OBJECT))).length;
  return length;
}

/** Alternating rounds of the scope-growth comparison. */
const GROWTH_ROUNDS = 5;

/**
 * The per-turn read on the middle scope of 10 and of 10,000 scopes (3 observations and 3
 * entries each), measured in alternating rounds: this machine's speed drifts by tens of
 * percent over a run, which scenarios timed minutes apart would report as growth. Returns
 * the ratios of the median round medians (reads steady and right after a write; observes
 * per second, 200 a round).
 */
async function scopeGrowth(
  factory: StoreFactory,
  backend: BackendName,
): Promise<{ steady: number; afterWrite: number; observe: number }> {
  const opened: BenchStore[] = [];
  try {
    const sides = [];
    for (const scopes of [10, 10_000]) {
      const bench = factory.open(backend);
      opened.push(bench);
      for (let first = 0; first < scopes; first += 500) {
        await bench.batch(async () => {
          for (let index = first; index < Math.min(scopes, first + 500); index++)
            await populateScope(bench.store, resolveScope(scopeInput(index)), 3, 3);
        });
      }
      const input = scopeInput(Math.floor(scopes / 2));
      const { memory, workingMemory } = services(bench.store);
      const read = perTurnRead(memory, workingMemory, input);
      await read();
      const write = () =>
        addObservations(bench.store, resolveScope(input), [
          { content: 'The user changed the deploy window to Thursday.', importance: 0.8, tokenCount: 12 },
        ]);
      let turn = 0;
      const observe = () =>
        memory.observe({
          scope: input,
          messages: [{ id: `growth-${turn++}`, role: 'user', content: 'Keep the deploy window in mind.' }],
        });
      sides.push({
        read,
        write,
        observe,
        steady: [] as number[],
        afterWrite: [] as number[],
        observeRate: [] as number[],
      });
    }
    for (let round = 0; round < GROWTH_ROUNDS; round++) {
      for (const side of sides) {
        side.steady.push((await measure('steady', side.read, { samples: 400, warmup: 20 })).medianMs);
        side.afterWrite.push(
          (await measure('after a write', side.read, { samples: 60, warmup: 3, before: side.write })).medianMs,
        );
        side.observeRate.push(
          (await throughputWithin('observe', side.observe, { maxCount: 200, maxSeconds: 5 })).opsPerSecond,
        );
      }
    }
    const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
    const [small, large] = sides;
    if (!small || !large) throw new Error('bench: scope growth needs both sides');
    return {
      steady: median(large.steady) / median(small.steady),
      afterWrite: median(large.afterWrite) / median(small.afterWrite),
      observe: median(large.observeRate) / median(small.observeRate),
    };
  } finally {
    for (const bench of opened) await bench.discard();
  }
}

/** Conversations observing at the same time in the concurrent observe figure. */
const CONCURRENT_CONVERSATIONS = 8;

/**
 * Observe throughput as a server sees it: several conversations observing at once, each
 * awaiting its own observes one after another. On SQLite their writes share commits.
 */
async function observeConcurrently(factory: StoreFactory, backend: BackendName, conversations: number): Promise<Rate> {
  const { store, discard } = factory.open(backend);
  try {
    const { memory } = services(store);
    collectGarbage();
    const conversation = async (index: number, count: number, prefix: string): Promise<void> => {
      const input: ScopeInput = { tenantId: 'bench', conversationId: `observe-concurrent-${index}` };
      for (let turn = 0; turn < count; turn++) {
        await memory.observe({
          scope: input,
          messages: [
            { id: `${prefix}-${turn}`, role: 'user', content: `Turn ${turn}: keep the deploy window in mind.` },
          ],
        });
      }
    };
    const all = (count: number, prefix: string) =>
      Promise.all(Array.from({ length: conversations }, (_, index) => conversation(index, count, prefix)));
    await all(20, 'warm');
    const perConversation = Math.ceil(FRESH_OBSERVES / conversations) * 2;
    const start = process.hrtime.bigint();
    await all(perConversation, 'turn');
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    const count = perConversation * conversations;
    return {
      name: `${backend}: observe, ${conversations} conversations at once`,
      count,
      seconds,
      opsPerSecond: count / seconds,
    };
  } finally {
    await discard();
  }
}

const OBSERVATION_SCALE: readonly ScenarioSpec[] = [
  {
    observations: 1_000,
    scopes: 1,
    entries: 100,
    steadySamples: 1_000,
    afterWriteSamples: 300,
    rateSeconds: 1,
    minCount: 20,
  },
  {
    observations: 10_000,
    scopes: 1,
    entries: 100,
    steadySamples: 2_000,
    afterWriteSamples: 200,
    rateSeconds: 1.5,
    minCount: 20,
  },
  // A read after a write, or an observe, takes about a second here on SQLite: few samples.
  {
    observations: 100_000,
    scopes: 1,
    entries: 100,
    steadySamples: 1_000,
    afterWriteSamples: 10,
    rateSeconds: 1,
    minCount: 3,
  },
];

const SCOPE_SCALE: readonly ScenarioSpec[] = [
  {
    observations: 3,
    scopes: 10,
    entries: 3,
    steadySamples: 1_000,
    afterWriteSamples: 300,
    rateSeconds: 1,
    minCount: 20,
  },
  {
    observations: 3,
    scopes: 1_000,
    entries: 3,
    steadySamples: 1_000,
    afterWriteSamples: 300,
    rateSeconds: 1,
    minCount: 20,
  },
  {
    observations: 3,
    scopes: 10_000,
    entries: 3,
    steadySamples: 1_000,
    afterWriteSamples: 300,
    rateSeconds: 1,
    minCount: 20,
  },
];

let gcFunction: (() => void) | undefined;

/**
 * A full garbage collection before each timed section, so that one section's garbage (a
 * fixture of 100,000 rows) is not collected inside the next one's samples. `npm run bench`
 * runs node without --expose-gc, so the flag is set at run time and `gc` taken from a fresh context.
 */
function collectGarbage(): void {
  if (!gcFunction) {
    setFlagsFromString('--expose-gc');
    gcFunction = runInNewContext('gc') as () => void;
  }
  gcFunction();
}

function ms(value: number): string {
  return value.toFixed(3);
}

function rate(value: Rate): string {
  return Math.round(value.opsPerSecond).toLocaleString('en');
}

function printTable(results: readonly ScenarioResult[]): void {
  const header = [
    'store',
    'obs/scope',
    'scopes',
    'build s',
    'steady med',
    'steady p99',
    'p99≤2ms',
    'write med',
    'write p99',
    'observe/s',
    'wm set/s',
    'wm get/s',
  ];
  const widths = [9, 9, 6, 7, 10, 10, 7, 9, 9, 9, 8, 9];
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, index) => (index < 1 ? cell.padEnd(widths[index] ?? 8) : cell.padStart(widths[index] ?? 8)))
      .join('  ');
  console.log(line(header));
  for (const result of results) {
    console.log(
      line([
        result.backend,
        result.spec.observations.toLocaleString('en'),
        result.spec.scopes.toLocaleString('en'),
        result.buildSeconds.toFixed(2),
        ms(result.steady.medianMs),
        ms(result.steady.p99Ms),
        verdict(result.steady.p99Ms <= READ_TARGET_P99_MS),
        ms(result.afterWrite.medianMs),
        ms(result.afterWrite.p99Ms),
        rate(result.observe),
        rate(result.wmSet),
        rate(result.wmGet),
      ]),
    );
  }
}

/** The storage figures of issue 3, in-memory and SQLite side by side. */
export async function benchStorage(): Promise<void> {
  const factory = new StoreFactory();
  const [load1] = loadavg();
  console.log(
    `\n# Storage (issue 3): ${cpus().length} CPUs, load average ${load1?.toFixed(2) ?? '?'} at start; full ` +
      `GC before each timed section`,
  );
  try {
    const byObservations: ScenarioResult[] = [];
    const byScopes: ScenarioResult[] = [];
    for (const backend of BACKENDS) {
      for (const spec of OBSERVATION_SCALE) byObservations.push(await runScenario(factory, backend, spec));
      for (const spec of SCOPE_SCALE) byScopes.push(await runScenario(factory, backend, spec));
    }
    // Rounds spread over time: the host's speed drifts, and one slow stretch should not
    // decide a figure. Each round times fixed CPU work first, to show how fast the host was.
    const observeRows = new Map<string, Rate[]>();
    const speeds: Measurement[] = [];
    for (let round = 0; round < OBSERVE_ROUNDS; round++) {
      speeds.push(
        await measure('reference: fixed CPU work (50 JSON round trips of a 2 KB object)', fixedWork, {
          samples: 300,
          warmup: 30,
        }),
      );
      for (const backend of BACKENDS) {
        for (const rate of [
          await observeFreshScope(factory, backend, false),
          await observeFreshScope(factory, backend, true),
          await observeConcurrently(factory, backend, CONCURRENT_CONVERSATIONS),
        ]) {
          observeRows.set(rate.name, [...(observeRows.get(rate.name) ?? []), rate]);
        }
      }
    }
    // What the machine itself adds to a short operation's tail (preemption, timer): a 50 µs busy loop.
    collectGarbage();
    const noise = await withGc(() =>
      measure(
        'reference: 50 µs busy loop (machine noise floor)',
        () => {
          const end = process.hrtime.bigint() + 50_000n;
          while (process.hrtime.bigint() < end);
        },
        { samples: 2_000, warmup: 20 },
      ),
    );

    console.log(
      '\n## Per-turn read: working-memory + observational-memory snippets, one scope, 10,000 observations, 100 entries',
    );
    console.log(
      '   "steady" = snippet cache warm (consecutive turns); "after a write" = one new observation stored ' +
        '(untimed) before each read, after 30 such rounds untimed',
    );
    for (const backend of BACKENDS) {
      const result = byObservations.find((item) => item.backend === backend && item.spec.observations === 10_000);
      if (!result) continue;
      report(result.steady, `p99 ≤ ${READ_TARGET_P99_MS} ms: ${verdict(result.steady.p99Ms <= READ_TARGET_P99_MS)}`);
      report(
        result.afterWrite,
        `p99 ≤ ${READ_TARGET_P99_MS} ms: ${verdict(result.afterWrite.p99Ms <= READ_TARGET_P99_MS)}`,
      );
      console.log(
        `    ${backend} snippets: working-memory ${result.snippetChars.working} chars, observational-memory ` +
          `${result.snippetChars.observational} chars; build ${result.buildSeconds.toFixed(2)} s`,
      );
      console.log(
        `    during steady: ${describeGc(result.steadyGc)}; during after-a-write: ${describeGc(result.afterWriteGc)}`,
      );
    }
    report(noise.result);
    console.log(`    during the reference: ${describeGc(noise.gc)}`);

    console.log('\n## Working memory, sequential awaits, one scope with 100 entries (set replaces an existing key)');
    for (const backend of BACKENDS) {
      const result = byObservations.find((item) => item.backend === backend && item.spec.observations === 10_000);
      if (!result) continue;
      reportRate(
        { ...result.wmSet, name: `${backend}: working memory set` },
        `≥ ${WM_SET_TARGET.toLocaleString('en')}/s: ${verdict(result.wmSet.opsPerSecond >= WM_SET_TARGET)}`,
      );
      reportRate(
        { ...result.wmGet, name: `${backend}: working memory get` },
        `≥ ${WM_GET_TARGET.toLocaleString('en')}/s: ${verdict(result.wmGet.opsPerSecond >= WM_GET_TARGET)}`,
      );
    }

    console.log(
      `\n## Observe operations enqueued and applied (memory.observe end to end, observeMinTokens 1, the ` +
        `first ${FRESH_OBSERVES.toLocaleString('en')} observes of a fresh scope)`,
    );
    console.log(
      `   ${OBSERVE_ROUNDS} rounds, one after another; each row is the median round, with every round's rate ` +
        `in brackets`,
    );
    console.log(
      `   (a round of one conversation runs in ${FRESH_WINDOWS} windows of ${FRESH_PER_WINDOW}; the slowest ` +
        `window of all its rounds is shown too)`,
    );
    console.log(
      `   the fixed CPU work before each round took ` +
        `${speeds.map((speed) => `${speed.medianMs.toFixed(2)} ms`).join(', ')} (median; higher = a slower host)`,
    );
    console.log(
      '   rows per store: one conversation awaiting each observe; the same with an instant reflector too ' +
        '(default reflect threshold, so the',
    );
    console.log(
      `   observations the observer is shown stay bounded); ${CONCURRENT_CONVERSATIONS} conversations ` +
        `observing at once, each awaiting its own (a server's load)`,
    );
    for (const rates of observeRows.values()) {
      const middle = [...rates].sort((a, b) => a.opsPerSecond - b.opsPerSecond)[Math.floor(rates.length / 2)] as Rate;
      const rounds = rates.map((rate) => Math.round(rate.opsPerSecond).toLocaleString('en')).join(', ');
      const windows = rates.flatMap((rate) => ('windowRates' in rate ? (rate as WindowedRate).windowRates : []));
      const slowest =
        windows.length > 0 ? `; slowest window ${Math.round(Math.min(...windows)).toLocaleString('en')}/s` : '';
      reportRate(
        middle,
        `≥ ${OBSERVE_TARGET.toLocaleString('en')}/s: ${verdict(middle.opsPerSecond >= OBSERVE_TARGET)}  ` +
          `[rounds ${rounds}/s${slowest}]`,
      );
    }

    console.log(
      '\n## Scaling: observations per scope (1 scope, 100 entries); read = both snippets, ms; observe/wm on ' +
        'the same scope',
    );
    printTable(byObservations);
    console.log(
      '\n## Scaling: number of scopes (each 3 observations, 3 entries); read, observe and wm on the middle scope',
    );
    printTable(byScopes);
    console.log(
      `   ratios below: ${GROWTH_ROUNDS} alternating rounds on both scope counts, ratio of the median round medians`,
    );
    for (const backend of BACKENDS) {
      const {
        steady: steadyRatio,
        afterWrite: writeRatio,
        observe: observeRatio,
      } = await scopeGrowth(factory, backend);
      console.log(
        `${backend.padEnd(9)}  10,000 vs 10 scopes: read median ×${steadyRatio.toFixed(2)} steady, ` +
          `×${writeRatio.toFixed(2)} after a write` +
          `  (target: does not grow, ≤ ×${SCOPE_GROWTH_LIMIT}: ` +
          `${verdict(steadyRatio <= SCOPE_GROWTH_LIMIT && writeRatio <= SCOPE_GROWTH_LIMIT)});` +
          `  observe/s ×${observeRatio.toFixed(2)}`,
      );
    }
  } finally {
    factory.close();
  }
}
