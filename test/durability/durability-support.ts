/**
 * Shared pieces of the durability tests: running a child script under tsx, and reading a
 * SQLite file the way an auditor would (directly, not through the store).
 * @module
 */
import { spawn } from 'node:child_process';
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

/** Runs `node --import tsx <script>` with extra environment variables and collects its output. */
export function runChild(script: string, env: Record<string, string>, timeoutMs = 60_000): Promise<ChildResult> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL(script, import.meta.url))], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
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
  }>;
  readonly operations: Array<{
    operation_id: string;
    memory_id: string;
    operation_type: string;
    status: string;
    scope_sequence: number;
    attempt: number;
    run_id: string;
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

export { coveredSeqs, range } from '../support/observation-ranges.js';

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
