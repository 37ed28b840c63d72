/**
 * Postgres figures of issue 6, side by side with SQLite in one run:
 *
 * - Per-turn read: both snippets (working memory + observational memory) of one scope with
 *   10,000 observations and 100 working-memory entries, median and p99; "steady" (snippet
 *   cache warm, as on consecutive turns) and "after a write" (one observation stored, untimed,
 *   before each read). Stores opened in this process, as in `bench/storage.ts`.
 * - Observe operations applied per second: each replica is a `createHarness` instance (Postgres:
 *   its own pool of 10 and LISTEN connection, all on one schema; SQLite: one file) with an
 *   instant in-process memory model and its background worker, hosted in child processes:
 *   three replicas are measured both as three processes and as three instances in one
 *   process. Concurrent clients inside each child call `observationalMemory.observe` (one new
 *   message in one of 50 fresh scopes per call, so one observe operation per call, no HTTP)
 *   for a fixed time. Applied/s = operations applied (checked in the operation log) ÷ the time
 *   from the start until every replica has drained.
 *
 * Needs `HARNESS_TEST_POSTGRES_URL`; without it the section prints one line and is skipped.
 * Uses a fresh schema (`hm_bench_<pid>_<random>`), dropped afterwards.
 * @module
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { loadConfig } from '../src/config/load-config.js';
import { generateId } from '../src/core/ids.js';
import { resolveScope } from '../src/core/scope.js';
import type { LanguageModel, LanguageModelResult } from '../src/llm/language-model.js';
import type { Observer } from '../src/memory/model-observer.js';
import { createObservationalMemory } from '../src/memory/observational-memory.js';
import { createWorkingMemory } from '../src/memory/working-memory.js';
import { createHarness } from '../src/server/create-harness.js';
import type { Harness } from '../src/server/create-harness.js';
import { createPostgresStore } from '../src/storage/postgres/index.js';
import { createSqliteStore } from '../src/storage/sqlite/sqlite-store.js';
import type { MemoryStore, NewObservation } from '../src/storage/store.js';
import { measure, report } from './measure.js';
import type { Measurement } from './measure.js';
import { addObservations, populateScope } from './populate-scope.js';
import { benchReadLane } from './read-lane.js';

const REPLICA_FLAG = '--bench-postgres-replica';
const OBSERVATIONS = 10_000;
const ENTRIES = 100;
const SCOPES = 50;
const CLIENTS_PER_REPLICA = 8;
const RATE_SECONDS = 4;

const INSTANT_OBSERVER: Observer = {
  async observe(input) {
    return [{ content: `The user said turn ${input.messages.at(-1)?.seq ?? 0} mattered.`, importance: 0.5 }];
  },
};

/** Prints the Postgres figures (and the SQLite ones beside them), or one line saying why not. */
export async function benchPostgres(): Promise<void> {
  const url = process.env['HARNESS_TEST_POSTGRES_URL'];
  const [load1] = loadavg();
  console.log(
    `\n# Postgres (issue 6): ${availableParallelism()} CPUs, load average ${load1?.toFixed(2) ?? '?'} at start`,
  );
  if (!url) {
    console.log('skipped: HARNESS_TEST_POSTGRES_URL is unset (for example postgres://postgres@127.0.0.1:5432/test)');
    return;
  }
  const schema = `hm_bench_${process.pid}_${randomBytes(4).toString('hex')}`;
  const directory = mkdtempSync(join(tmpdir(), 'harness-memory-bench-pg-'));
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  try {
    const server = await admin.query<{ version: string; synchronous_commit: string }>(
      `SELECT split_part(version(), ' on ', 1) AS version, current_setting('synchronous_commit') AS synchronous_commit`,
    );
    console.log(
      `   ${server.rows[0]?.version ?? 'PostgreSQL'} at ${redact(url)}, ` +
        `synchronous_commit=${server.rows[0]?.synchronous_commit ?? '?'}; schema ${schema} (dropped afterwards)`,
    );
    await benchPerTurnRead(url, schema, directory);
    await benchReadLane(url, schema);
    await benchObserveRate(url, schema, directory, admin);
  } finally {
    await admin
      .query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      .catch((error: unknown) => console.error(`could not drop schema ${schema}: ${String(error)}`));
    await admin.end();
    rmSync(directory, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Per-turn read

async function readFigures(
  backend: string,
  store: MemoryStore,
): Promise<{ steady: Measurement; afterWrite: Measurement; buildSeconds: number; chars: number }> {
  const scope = resolveScope({ tenantId: 'bench', conversationId: 'per-turn-read' });
  const buildStart = process.hrtime.bigint();
  await populateScope(store, scope, OBSERVATIONS, ENTRIES);
  const buildSeconds = Number(process.hrtime.bigint() - buildStart) / 1e9;
  const memory = createObservationalMemory({
    store,
    observer: INSTANT_OBSERVER,
    defaultEnabled: true,
    defaults: { observeMinTokens: 1 },
  });
  const workingMemory = createWorkingMemory({ store });
  const read = async () => `${await workingMemory.snippet(scope)}${await memory.snippet(scope)}`;
  const chars = (await read()).length;
  const label = `${backend}, ${OBSERVATIONS.toLocaleString('en')} obs, ${ENTRIES} entries`;
  const steady = await measure(`${label}: read, steady`, read, { samples: 2_000, warmup: 50 });
  const written: NewObservation = {
    content: 'The user changed the deploy window to Thursday.',
    importance: 0.8,
    tokenCount: 12,
  };
  const afterWrite = await measure(`${label}: read, after a write`, read, {
    samples: 100,
    warmup: 5,
    before: () => addObservations(store, scope, [written]),
  });
  return { steady, afterWrite, buildSeconds, chars };
}

async function benchPerTurnRead(url: string, schema: string, directory: string): Promise<void> {
  console.log(
    `\n## Per-turn read: working-memory + observational-memory snippets, one scope, ` +
      `${OBSERVATIONS.toLocaleString('en')} observations, ${ENTRIES} entries`,
  );
  console.log(
    '   "steady" = snippet cache warm (consecutive turns); "after a write" = one new observation stored ' +
      '(untimed) before each read',
  );
  const sqlite = createSqliteStore({ path: join(directory, 'read.db') });
  const postgres = await createPostgresStore({ connectionString: url, schema, max: 4 });
  try {
    for (const [backend, store] of [
      ['sqlite', sqlite],
      ['postgres', postgres],
    ] as const) {
      const figures = await readFigures(backend, store);
      report(figures.steady);
      report(figures.afterWrite);
      console.log(
        `    ${backend}: snippets ${figures.chars} chars; fixture built in ${figures.buildSeconds.toFixed(2)} s`,
      );
    }
  } finally {
    await sqlite.dispose();
    await postgres.dispose();
  }
}

// ---------------------------------------------------------------------------------------------
// Observe operations applied per second, one and three replicas

/** What the parent asks a replica child to do. */
interface RunRequest {
  readonly type: 'run';
  readonly startAt: number;
  readonly durationMs: number;
  /** Clients per harness instance of the child. */
  readonly clients: number;
  readonly prefix: string;
}

type ChildMessage =
  | { type: 'ready' }
  | { type: 'done'; count: number; errors: string[]; drainedAt: number }
  | { type: 'failed'; error: string };

interface Child {
  send(message: RunRequest | { type: 'close' }): void;
  receive<T extends ChildMessage['type']>(type: T): Promise<Extract<ChildMessage, { type: T }>>;
  close(): Promise<void>;
}

/** A child process with `instances` harnesses (each its own pool). */
function startChild(env: Record<string, string>, instances: number): Child {
  // Only our HARNESS_MEMORY_* variables: the config loader refuses unknown ones.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith('HARNESS_MEMORY_')),
  );
  const child = fork(fileURLToPath(import.meta.url), [REPLICA_FLAG], {
    execArgv: ['--import', 'tsx'],
    env: { ...inherited, ...env, BENCH_INSTANCES: String(instances) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const messages: ChildMessage[] = [];
  const waiters: Array<() => void> = [];
  child.on('message', (message) => {
    messages.push(message as ChildMessage);
    waiters.splice(0).forEach((wake) => wake());
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    send: (message) => void child.send(message),
    async receive(type) {
      for (;;) {
        const failed = messages.find((message) => message.type === 'failed');
        if (failed && failed.type === 'failed') throw new Error(`a bench replica failed: ${failed.error}`);
        const index = messages.findIndex((message) => message.type === type);
        if (index !== -1) return messages.splice(index, 1)[0] as Extract<ChildMessage, { type: typeof type }>;
        if (child.exitCode !== null) throw new Error(`a bench replica exited with ${child.exitCode}`);
        await Promise.race([new Promise<void>((resolve) => waiters.push(resolve)), exited]);
      }
    },
    async close() {
      if (child.connected) child.send({ type: 'close' });
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

interface RateResult {
  readonly name: string;
  readonly clients: number;
  readonly applied: number;
  readonly seconds: number;
}

/** `processes` child processes, each with `instances` harnesses, each with `clients` clients. */
async function observeRate(
  name: string,
  env: Record<string, string>,
  shape: { processes: number; instances: number; clients: number },
  countApplied: (prefix: string) => Promise<number>,
): Promise<RateResult> {
  const children = Array.from({ length: shape.processes }, () => startChild(env, shape.instances));
  try {
    await Promise.all(children.map((child) => child.receive('ready')));
    // Warm-up (JIT, pools, prepared plans), untimed, on scopes of its own.
    const warmPrefix = `warm-${generateId('p')}`;
    children.forEach((child) =>
      child.send({ type: 'run', startAt: Date.now(), durationMs: 500, clients: shape.clients, prefix: warmPrefix }),
    );
    await Promise.all(children.map((child) => child.receive('done')));

    const prefix = `rate-${generateId('p')}`;
    const startAt = Date.now() + 200;
    children.forEach((child) =>
      child.send({ type: 'run', startAt, durationMs: RATE_SECONDS * 1000, clients: shape.clients, prefix }),
    );
    const done = await Promise.all(children.map((child) => child.receive('done')));
    const errors = done.flatMap((item) => item.errors);
    if (errors.length > 0) throw new Error(`observe failed in a replica: ${errors.slice(0, 3).join('; ')}`);
    const issued = done.reduce((sum, item) => sum + item.count, 0);
    const applied = await countApplied(prefix);
    if (applied !== issued)
      throw new Error(`${name}: ${issued} observes issued but ${applied} observe operations applied`);
    const seconds = (Math.max(...done.map((item) => item.drainedAt)) - startAt) / 1000;
    return { name, clients: shape.processes * shape.instances * shape.clients, applied, seconds };
  } finally {
    await Promise.all(children.map((child) => child.close()));
  }
}

async function benchObserveRate(url: string, schema: string, directory: string, admin: pg.Pool): Promise<void> {
  console.log(
    `\n## Observe operations applied per second: ${SCOPES} fresh scopes, ${CLIENTS_PER_REPLICA} concurrent ` +
      `clients per replica for ${RATE_SECONDS} s, instant memory model`,
  );
  console.log(
    '   each replica is a createHarness instance (on Postgres its own pool of 10 + LISTEN connection) with ' +
      'its background worker, hosted in child processes;',
  );
  console.log(
    '   the clients run inside it and call observationalMemory.observe (no HTTP). Applied/s counts ' +
      'operations applied in the log, until every replica drained.',
  );
  const common = {
    HARNESS_MEMORY_DEFAULT_ENABLED: 'true',
    HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '1',
    HARNESS_MEMORY_REFLECT_THRESHOLD_TOKENS: '100000',
  };
  const sqlitePath = join(directory, 'rate.db');
  const sqliteEnv = {
    ...common,
    HARNESS_MEMORY_DB_DRIVER: 'sqlite',
    HARNESS_MEMORY_SQLITE_PATH: sqlitePath,
    BENCH_ROOT: directory,
  };
  const postgresEnv = {
    ...common,
    HARNESS_MEMORY_DB_DRIVER: 'postgres',
    HARNESS_MEMORY_DB_DSN: url,
    HARNESS_MEMORY_SCHEMA: schema,
    BENCH_ROOT: directory,
  };
  const countSqlite = async (prefix: string): Promise<number> => {
    const db = new Database(sqlitePath, { readonly: true, fileMustExist: true });
    try {
      return (
        db
          .prepare(
            `SELECT COUNT(*) AS n FROM om_operation_log WHERE operation_type = 'observe' AND status = ` +
              `'applied' AND run_id LIKE ?`,
          )
          .get(`${prefix}%`) as { n: number }
      ).n;
    } finally {
      db.close();
    }
  };
  const countPostgres = async (prefix: string): Promise<number> =>
    (
      await admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${schema}".om_operation_log WHERE operation_type = 'observe' AND ` +
          `status = 'applied' AND starts_with(run_id, $1)`,
        [prefix],
      )
    ).rows[0]?.n ?? 0;

  const perReplica = CLIENTS_PER_REPLICA;
  const results = [
    await observeRate('sqlite, 1 replica', sqliteEnv, { processes: 1, instances: 1, clients: perReplica }, countSqlite),
    await observeRate(
      'postgres, 1 replica',
      postgresEnv,
      { processes: 1, instances: 1, clients: perReplica },
      countPostgres,
    ),
    await observeRate(
      'postgres, 1 replica, 3× the clients',
      postgresEnv,
      { processes: 1, instances: 1, clients: 3 * perReplica },
      countPostgres,
    ),
    await observeRate(
      'postgres, 3 replicas in 1 process (3 harnesses, 3 pools)',
      postgresEnv,
      { processes: 1, instances: 3, clients: perReplica },
      countPostgres,
    ),
    await observeRate(
      'postgres, 3 replicas, 3 processes',
      postgresEnv,
      { processes: 3, instances: 1, clients: perReplica },
      countPostgres,
    ),
  ];
  for (const result of results) {
    const rate = result.applied / result.seconds;
    console.log(
      [
        result.name.padEnd(58),
        `${Math.round(rate).toLocaleString('en').padStart(10)} ops/s`,
        `(${result.applied.toLocaleString('en')} applied in ${result.seconds.toFixed(2)} s, ${result.clients} clients)`,
      ].join('  '),
    );
  }
  const rateOf = (result: RateResult | undefined): number => (result ? result.applied / result.seconds : 0);
  console.log(
    `   postgres, 3 replicas / 1 replica: ×${(rateOf(results[4]) / rateOf(results[1])).toFixed(2)} as ` +
      `processes, ×${(rateOf(results[3]) / rateOf(results[1])).toFixed(2)} in one process` +
      ` (${availableParallelism()} CPUs shared by the replicas, the clients and the server)`,
  );
}

// ---------------------------------------------------------------------------------------------
// The replica child

function instantMemoryModel(): LanguageModel {
  const answer = (text: string): LanguageModelResult => ({
    text,
    toolCalls: [],
    finishReason: 'stop',
    usage: { inputTokens: 10, outputTokens: 5 },
  });
  return {
    specificationVersion: 'v1',
    provider: 'bench',
    modelId: 'instant',
    async doGenerate(options) {
      const system = options.messages[0]?.content ?? '';
      return answer(
        system.includes('structured reflection')
          ? 'SUMMARY:\nThe user runs a bench.\n'
          : 'IMPORTANCE:0.5\nThe user said a turn mattered.',
      );
    },
  };
}

async function replicaMain(): Promise<void> {
  const root = mkdtempSync(join(process.env['BENCH_ROOT'] ?? tmpdir(), 'replica-'));
  const env: Record<string, string> = { HARNESS_WORKSPACE: root };
  for (const [key, value] of Object.entries(process.env))
    if (key.startsWith('HARNESS_MEMORY_') && value !== undefined) env[key] = value;
  const model = instantMemoryModel();
  const config = loadConfig({ env, cwd: root, homeDir: join(root, 'home') });
  const instances = Number(process.env['BENCH_INSTANCES'] ?? '1');
  const harnesses: Harness[] = [];
  for (let index = 0; index < instances; index++)
    harnesses.push(await createHarness({ config, env, agentModel: model, memoryModel: model }));
  const replica = generateId('r');
  let counter = 0;
  process.on('message', (message: RunRequest | { type: 'close' }) => {
    void (async () => {
      if (message.type === 'close') {
        for (const harness of harnesses) await harness.dispose();
        rmSync(root, { recursive: true, force: true });
        process.disconnect();
        return;
      }
      const wait = message.startAt - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const deadline = Date.now() + message.durationMs;
      let count = 0;
      const errors: string[] = [];
      const client = async (harness: Harness): Promise<void> => {
        while (Date.now() < deadline) {
          const index = counter++;
          try {
            await harness.observationalMemory.observe({
              scope: { tenantId: 'bench', conversationId: `${message.prefix}-${index % SCOPES}` },
              runId: `${message.prefix}-${replica}-${index}`,
              messages: [
                { id: `${replica}-${index}`, role: 'user', content: `Turn ${index}: keep the deploy window in mind.` },
              ],
            });
            count++;
          } catch (error) {
            errors.push(String(error));
            return;
          }
        }
      };
      await Promise.all(harnesses.flatMap((harness) => Array.from({ length: message.clients }, () => client(harness))));
      // Operations another replica held are left queued for whoever holds the scope next.
      await Promise.all(
        harnesses.map((harness) => harness.observationalMemory.drain(undefined, { timeoutMs: 60_000 })),
      );
      process.send?.({ type: 'done', count, errors, drainedAt: Date.now() });
    })().catch((error: unknown) => process.send?.({ type: 'failed', error: String(error) }));
  });
  process.send?.({ type: 'ready' });
}

function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '****';
    return parsed.toString();
  } catch {
    return 'the server';
  }
}

if (process.argv.includes(REPLICA_FLAG) && process.send) {
  replicaMain().catch((error: unknown) => {
    process.send?.({ type: 'failed', error: String(error) });
    process.exit(1);
  });
}
