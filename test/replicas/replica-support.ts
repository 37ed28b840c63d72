/**
 * Shared pieces of the replica tests: harness replicas as child processes on one Postgres
 * schema (`replica-child.ts`), HTTP against them, and reading the schema's tables directly,
 * the way an auditor would.
 * @module
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { ApiInit } from '../e2e/e2e-harness.js';

/** The repository root, so `--import tsx` resolves from the project's node_modules. */
const REPO_ROOT: string = fileURLToPath(new URL('../../', import.meta.url));
const CHILD: string = fileURLToPath(new URL('./replica-child.ts', import.meta.url));

/** How a replica process ended. */
export interface ReplicaExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** A running replica. */
export interface Replica {
  readonly name: string;
  readonly url: string;
  readonly pid: number;
  /** JSON lines the replica printed on stdout, in order. */
  readonly lines: ReadonlyArray<Record<string, unknown>>;
  /** Everything the replica wrote on stderr so far. */
  stderr(): string;
  /** Resolves once the process has exited. */
  readonly exited: Promise<ReplicaExit>;
  /** `fetch` against the replica; `json` is sent as the body. */
  api(path: string, init?: ApiInit): Promise<Response>;
  /** `api`, then the JSON body. */
  apiJson(path: string, init?: ApiInit): Promise<{ status: number; body: Record<string, any> }>;
  /** SIGKILL, then waits for the exit. */
  kill(): Promise<ReplicaExit>;
  /** Closes stdin (the replica shuts down cleanly), SIGKILL after `timeoutMs`; waits for the exit. */
  stop(timeoutMs?: number): Promise<ReplicaExit>;
}

/**
 * The variables of a replica on `schema`, plus `extra`. The per-tenant limits are lifted:
 * these tests send the traffic of many clients as one tenant, and test the store, not the limits.
 */
export function postgresEnv(url: string, schema: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    HARNESS_MAX_WRITES_PER_SECOND: '1000000',
    HARNESS_MAX_CONCURRENT_RUNS: '1000000',
    HARNESS_MAX_SSE_CONNECTIONS: '1000000',
    HARNESS_MEMORY_DB_DRIVER: 'postgres',
    HARNESS_MEMORY_DB_DSN: url,
    HARNESS_MEMORY_SCHEMA: schema,
    HARNESS_MEMORY_DEFAULT_ENABLED: 'true',
    HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '1',
    ...extra,
  };
}

/** Starts one replica and waits for its ready line. */
export function startReplica(name: string, env: Record<string, string>, timeoutMs = 20_000): Promise<Replica> {
  // The child reads every HARNESS_MEMORY_* variable it is given: pass only ours.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith('HARNESS_MEMORY_')),
  );
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, ['--import', 'tsx', CHILD], {
    cwd: REPO_ROOT,
    env: { ...inherited, ...env, REPLICA_NAME: name },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: Array<Record<string, unknown>> = [];
  let stdoutBuffer = '';
  let stderr = '';
  const exited = new Promise<ReplicaExit>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  // The replica may already be gone when stdin is closed.
  child.stdin.on('error', () => {});

  return new Promise<Replica>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`replica ${name} did not start within ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`replica ${name} exited (${code ?? signal}) before it was ready; stderr: ${stderr}`));
    });
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdoutBuffer += chunk;
      for (let end = stdoutBuffer.indexOf('\n'); end !== -1; end = stdoutBuffer.indexOf('\n')) {
        const line = stdoutBuffer.slice(0, end);
        stdoutBuffer = stdoutBuffer.slice(end + 1);
        if (!line.startsWith('{')) continue;
        const parsed = JSON.parse(line) as Record<string, unknown>;
        lines.push(parsed);
        if (parsed['ready'] === true) {
          clearTimeout(timer);
          // A killed replica cannot remove its temp folder; a stopped one already has.
          const root = String(parsed['root'] ?? '');
          if (root !== '') void exited.then(() => rmSync(root, { recursive: true, force: true }));
          resolve(replicaOf(name, String(parsed['url']), child, lines, () => stderr, exited));
        }
      }
    });
  });
}

function replicaOf(
  name: string,
  url: string,
  child: ChildProcessWithoutNullStreams,
  lines: ReadonlyArray<Record<string, unknown>>,
  stderr: () => string,
  exited: Promise<ReplicaExit>,
): Replica {
  const api = (path: string, init: ApiInit = {}): Promise<Response> => {
    const { key, json, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (key !== undefined) headers.set('authorization', `Bearer ${key}`);
    let body = rest.body;
    if (json !== undefined) {
      body = typeof json === 'string' ? json : JSON.stringify(json);
      if (!headers.has('content-type')) headers.set('content-type', 'application/json');
    }
    return fetch(`${url}${path}`, { ...rest, headers, ...(body === undefined ? {} : { body }) });
  };
  return {
    name,
    url,
    pid: child.pid ?? -1,
    lines,
    stderr,
    exited,
    api,
    async apiJson(path, init) {
      const response = await api(path, init);
      const text = await response.text();
      return { status: response.status, body: (text === '' ? {} : JSON.parse(text)) as Record<string, any> };
    },
    kill() {
      child.kill('SIGKILL');
      return exited;
    },
    async stop(timeoutMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** Starts `count` replicas at once (they migrate the schema together), named `r0`, `r1`, …. */
export async function startReplicas(count: number, env: Record<string, string>): Promise<Replica[]> {
  const started = await Promise.allSettled(Array.from({ length: count }, (_, index) => startReplica(`r${index}`, env)));
  const replicas = started.flatMap((item) => (item.status === 'fulfilled' ? [item.value] : []));
  const failed = started.find((item) => item.status === 'rejected');
  if (failed) {
    await stopReplicas(replicas);
    throw failed.reason;
  }
  return replicas;
}

/** Stops every replica still running. */
export async function stopReplicas(replicas: readonly Replica[]): Promise<ReplicaExit[]> {
  return Promise.all(replicas.map((replica) => replica.stop()));
}

/** Polls `check` until it returns a value other than undefined; rejects after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 15_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Runs `work(0..count-1)` with at most `concurrency` calls in flight. */
export async function inParallel<T>(
  count: number,
  concurrency: number,
  work: (index: number) => Promise<T>,
): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) {
      const index = next++;
      results[index] = await work(index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  return results;
}

/** Operation log rows, as the audit reads them. */
export interface OperationRow {
  readonly operation_id: string;
  readonly memory_id: string;
  readonly run_id: string;
  readonly scope_sequence: number;
  readonly operation_type: string;
  readonly status: string;
  readonly attempt: number;
  readonly error_text: string;
  readonly lease_owner: string | null;
  readonly lease_expires_at: Date | null;
  readonly updated_at: Date;
}

/** Everything the invariant checks read, straight from the schema's tables. */
export interface AuditRows {
  readonly records: Array<{
    memory_id: string;
    observed_through_message_seq: number;
    last_message_seq: number;
    observation_count: number;
    last_observation_seq: number;
  }>;
  readonly operations: OperationRow[];
  readonly messages: Array<{ memory_id: string; seq: number; message_key: string; observed: boolean }>;
  readonly observations: Array<{
    memory_id: string;
    seq: number;
    content: string;
    source_start_seq: number;
    source_end_seq: number;
    operation_id: string;
  }>;
  readonly markers: Array<{ memory_id: string; cycle_id: string; marker_type: string }>;
  readonly entries: Array<{ memory_id: string; entry_key: string; entry_json: string }>;
}

/** Reads every memory table of `schema` in one snapshot (REPEATABLE READ). */
export async function audit(pool: pg.Pool, schema: string): Promise<AuditRows> {
  const s = `"${schema}".`;
  const client = await pool.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const all = async <T>(sql: string): Promise<T[]> => (await client.query(sql)).rows as T[];
    const rows: AuditRows = {
      records: await all(
        `SELECT memory_id, observed_through_message_seq::int, last_message_seq::int, observation_count::int, ` +
          `last_observation_seq::int FROM ${s}om_memory_records ORDER BY memory_id`,
      ),
      operations: await all(
        `SELECT operation_id, memory_id, run_id, scope_sequence::int, operation_type, status, attempt, error_text,
          lease_owner, lease_expires_at, updated_at
         FROM ${s}om_operation_log ORDER BY memory_id, scope_sequence`,
      ),
      messages: await all(
        `SELECT memory_id, seq::int, message_key, observed FROM ${s}om_messages ORDER BY memory_id, seq`,
      ),
      observations: await all(
        `SELECT memory_id, seq::int, content, source_start_seq::int, source_end_seq::int, operation_id FROM ` +
          `${s}om_observations ORDER BY memory_id, seq`,
      ),
      markers: await all(`SELECT memory_id, cycle_id, marker_type FROM ${s}om_markers ORDER BY marker_position`),
      entries: await all(
        `SELECT memory_id, entry_key, entry_json FROM ${s}working_memory_entries ORDER BY memory_id, entry_key`,
      ),
    };
    await client.query('COMMIT');
    return rows;
  } finally {
    client.release();
  }
}

export { coveredSeqs, range } from '../support/observation-ranges.js';

/** Operations of a schema not yet final (`queued` or `processing`). */
export async function pendingOperations(pool: pg.Pool, schema: string): Promise<number> {
  const result = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM "${schema}".om_operation_log WHERE status IN ('queued', 'processing')`,
  );
  return result.rows[0]?.n ?? 0;
}
