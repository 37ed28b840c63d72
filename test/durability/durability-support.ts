/**
 * Shared pieces of the durability tests: running a child script under tsx, and reading a
 * SQLite file the way an auditor would (directly, not through the store).
 * @module
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';

/** The repository root, so `--import tsx` resolves from the project's node_modules. */
export const REPO_ROOT: string = fileURLToPath(new URL('../../', import.meta.url));

/** How a child process ended. */
export interface ChildResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** A child process started by {@link startChild}. */
export interface StartedChild {
  /** The process, to kill it from outside. */
  readonly child: ChildProcess;
  /** Resolves once the child has printed `text` as a whole line; rejects if it ends first. */
  line(text: string): Promise<void>;
  /** Resolves when the child has ended (after `timeoutMs` it is SIGKILLed). */
  readonly ended: Promise<ChildResult>;
}

/**
 * Starts `node --import tsx <script>` with extra environment variables, collecting its
 * output; the caller may wait for a line it prints and kill it.
 */
export function startChild(script: string, env: Record<string, string>, timeoutMs = 60_000): StartedChild {
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL(script, import.meta.url))], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const waiting = new Set<() => void>();
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    for (const check of waiting) check();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const ended = new Promise<ChildResult>((resolve, reject) => {
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
  const line = (text: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (!stdout.split('\n').slice(0, -1).includes(text)) return;
        waiting.delete(check);
        resolve();
      };
      waiting.add(check);
      check();
      ended.then(
        (result) => {
          if (!waiting.delete(check)) return;
          reject(
            new Error(`the child ended (${result.signal ?? result.code}) before printing ${text}: ${result.stderr}`),
          );
        },
        (error: unknown) => {
          waiting.delete(check);
          reject(error as Error);
        },
      );
    });
  return { child, line, ended };
}

/** Runs `node --import tsx <script>` with extra environment variables and collects its output. */
export function runChild(script: string, env: Record<string, string>, timeoutMs = 60_000): Promise<ChildResult> {
  return startChild(script, env, timeoutMs).ended;
}

/** SIGKILLs the calling process (a child at its fault point): nothing after it runs, no cleanup. */
export function sigkillSelf(): never {
  process.kill(process.pid, 'SIGKILL');
  // SIGKILL to oneself is delivered before kill() returns; this only guards the impossible.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10_000);
  process.exit(99);
}

/** The first line of `stdout` that parses as a JSON object. */
export function jsonLine<T>(stdout: string): T {
  for (const line of stdout.split('\n')) {
    if (line.startsWith('{')) return JSON.parse(line) as T;
  }
  throw new Error(`no JSON line in child output: ${stdout}`);
}

/** Rows the invariant checks read. */
export interface AuditRows {
  readonly integrity: string[];
  readonly records: Array<{
    memory_id: string;
    observed_through_message_seq: number;
    messages_cleared_through_seq: number;
    last_message_seq: number;
    observation_count: number;
    last_observation_seq: number;
    active_reflection: string | null;
    reflection_through_seq: number | null;
  }>;
  readonly operations: Array<{
    operation_id: string;
    memory_id: string;
    operation_type: string;
    status: string;
    scope_sequence: number;
    attempt: number;
    run_id: string;
    lease_expires_at: string | null;
    updated_at: string;
  }>;
  readonly messages: Array<{ memory_id: string; seq: number; message_key: string; observed: number }>;
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

/** Reads every table of the file read-only, after `PRAGMA integrity_check`. */
export function audit(path: string): AuditRows {
  const db = new Database(path, { readonly: true });
  try {
    const all = <T>(sql: string): T[] => db.prepare(sql).all() as T[];
    return {
      integrity: db.prepare('PRAGMA integrity_check').pluck().all() as string[],
      records: all('SELECT * FROM om_memory_records ORDER BY memory_id'),
      operations: all('SELECT * FROM om_operation_log ORDER BY memory_id, scope_sequence'),
      messages: all('SELECT memory_id, seq, message_key, observed FROM om_messages ORDER BY memory_id, seq'),
      observations: all('SELECT * FROM om_observations ORDER BY memory_id, seq'),
      markers: all('SELECT * FROM om_markers ORDER BY memory_id, marker_position'),
      entries: all('SELECT * FROM working_memory_entries ORDER BY memory_id, entry_key'),
    };
  } finally {
    db.close();
  }
}

import { coveredSeqs, range } from '../support/observation-ranges.js';

export { coveredSeqs, range };

/**
 * Every stored message is observed (at or below its scope's cursor), and its text is gone
 * exactly when it lies at or below the point the scope's appends have cleared through.
 */
export function messagesObservedAndCleared(rows: AuditRows): string[] {
  const problems: string[] = [];
  const records = new Map(rows.records.map((record) => [record.memory_id, record]));
  for (const message of rows.messages) {
    const record = records.get(message.memory_id);
    if (!record) problems.push(`${message.message_key}: no record`);
    else if (message.seq > record.observed_through_message_seq) problems.push(`${message.message_key}: not observed`);
    else if ((message.observed === 1) !== message.seq <= record.messages_cleared_through_seq)
      problems.push(`${message.message_key}: observed=${message.observed}`);
  }
  return problems;
}

const OPERATION_STATUSES: ReadonlySet<string> = new Set(['queued', 'processing', 'applied', 'failed', 'dead']);

/**
 * What an operation may have left in the file, by its id, as `<observations>:<marker types>`:
 * nothing until it is applied; then an observe's one observation (the tests' observers make
 * one per call) between its two markers, or nothing (it found nothing to observe), and a
 * reflection's one marker, or nothing (nothing to reflect).
 */
function allowedRows(operation: AuditRows['operations'][number]): readonly string[] {
  if (operation.status !== 'applied') return ['0:'];
  return operation.operation_type === 'observe'
    ? ['1:observation_start,observation_end', '0:']
    : ['0:reflection_end', '0:'];
}

/**
 * The reliability catalogue's invariants, checked on a file as a SIGKILL may leave it in the
 * middle of work (before any recovery): `integrity_check` is ok and every operation state is
 * valid; each operation has exactly the rows its state allows, by its id; each scope's
 * observed cursor is at most its last committed message, and the messages up to it are
 * covered by observations exactly once; no row belongs to another scope than its operation's.
 * Assumes the tests' observers: one observation per call, naming its message range
 * (`obs for messages a-b`). Returns the problems found, none when all hold.
 */
export function invariantProblems(rows: AuditRows): string[] {
  const problems: string[] = [];
  if (rows.integrity.join('\n') !== 'ok') problems.push(`integrity_check: ${rows.integrity.join('; ')}`);
  const operations = new Map(rows.operations.map((operation) => [operation.operation_id, operation]));
  const records = new Map(rows.records.map((record) => [record.memory_id, record]));
  for (const operation of rows.operations) {
    const id = operation.operation_id;
    if (!OPERATION_STATUSES.has(operation.status)) problems.push(`${id}: unknown status ${operation.status}`);
    if (!records.has(operation.memory_id)) problems.push(`${id}: no record for its scope ${operation.memory_id}`);
    const observations = rows.observations.filter((row) => row.operation_id === id);
    const markers = rows.markers.filter((row) => row.cycle_id === id).map((row) => row.marker_type);
    const found = `${observations.length}:${markers.join(',')}`;
    if (!allowedRows(operation).includes(found))
      problems.push(`${id} (${operation.operation_type}, ${operation.status}): rows ${found}`);
  }
  // No row outside its scope: each belongs to an operation of its own scope.
  for (const row of rows.observations) {
    const owner = operations.get(row.operation_id);
    if (owner?.memory_id !== row.memory_id)
      problems.push(`observation ${row.memory_id}#${row.seq}: operation ${row.operation_id} is not of its scope`);
  }
  for (const row of rows.markers) {
    if (operations.get(row.cycle_id)?.memory_id !== row.memory_id)
      problems.push(`marker of ${row.memory_id}: operation ${row.cycle_id} is not of its scope`);
  }
  for (const row of rows.messages) {
    if (!records.has(row.memory_id)) problems.push(`message ${row.message_key}: no record for ${row.memory_id}`);
  }
  for (const record of rows.records) problems.push(...scopeProblems(rows, record));
  return problems;
}

/** {@link invariantProblems} for one scope: its messages, cursor, observations and open operations. */
function scopeProblems(rows: AuditRows, record: AuditRows['records'][number]): string[] {
  const scope = record.memory_id;
  const problems: string[] = [];
  const say = (problem: string): number => problems.push(`${scope}: ${problem}`);
  const messages = rows.messages.filter((row) => row.memory_id === scope);
  const seqs = messages.map((row) => row.seq);
  if (seqs.join() !== range(record.last_message_seq).join())
    say(`message seqs ${seqs.join()} are not 1..${record.last_message_seq}`);
  // The watermark: never past the last committed message.
  if (record.observed_through_message_seq > record.last_message_seq)
    say(`observed through ${record.observed_through_message_seq}, past the last message ${record.last_message_seq}`);
  if (record.messages_cleared_through_seq > record.observed_through_message_seq)
    say(`messages cleared through ${record.messages_cleared_through_seq}, past the cursor`);
  for (const message of messages) {
    if ((message.observed === 1) !== message.seq <= record.messages_cleared_through_seq)
      say(`${message.message_key}: observed=${message.observed}`);
  }
  const observations = rows.observations.filter((row) => row.memory_id === scope);
  if (observations.map((row) => row.seq).join() !== range(observations.length).join())
    say(`observation seqs are not 1..${observations.length}`);
  if (record.observation_count !== observations.length || record.last_observation_seq !== observations.length)
    say(
      `${observations.length} observations, the record says ${record.observation_count}/${record.last_observation_seq}`,
    );
  // Every message up to the cursor observed exactly once.
  try {
    const covered = coveredSeqs(rows, scope);
    if (covered.join() !== range(record.observed_through_message_seq).join())
      say(`observations cover ${covered.join()}, not 1..${record.observed_through_message_seq}`);
  } catch (error) {
    say((error as Error).message);
  }
  if ((record.reflection_through_seq ?? 0) > record.last_observation_seq)
    say(`reflection through ${record.reflection_through_seq}, past the last observation`);
  // Operations of one scope run one at a time: a crash leaves at most one claimed.
  const processing = rows.operations.filter((row) => row.memory_id === scope && row.status === 'processing');
  if (processing.length > 1) say(`${processing.length} operations processing`);
  return problems;
}
