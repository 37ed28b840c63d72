/**
 * Background checkpoints: one worker thread per process copies committed pages from each
 * registered file's write-ahead log into the database file and syncs it, so that commits
 * on the main thread do not wait for that copying and its fsyncs.
 * @module
 */
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { Worker } from 'node:worker_threads';

/** What {@link startBackgroundCheckpoints} returns. */
export interface BackgroundCheckpoints {
  /** Counts a commit of the caller's connection: the worker checkpoints after enough of them, or once they pause. */
  noteCommit(): void;
  /** Closes the worker's connection to the file; resolves once it is closed. */
  stop(): Promise<void>;
}

/** Options of {@link startBackgroundCheckpoints}. */
export interface BackgroundCheckpointOptions {
  /** The checkpointing connection's sync level: it decides the checkpoint's fsyncs. */
  readonly synchronous: 'NORMAL' | 'FULL';
  /** Called once if the worker cannot checkpoint this file (any more); the caller falls back to inline checkpoints. */
  readonly onFailure: (message: string) => void;
}

/** How often the worker looks at each file's commit count. */
const CHECKPOINT_INTERVAL_MS = 20;

/**
 * Commits between checkpoints while writes go on. Each checkpoint ends with fsyncs, which
 * stall the disk for the whole process for a moment, so they are batched: a few thousand
 * log pages each. When commits pause for a tick, the rest is checkpointed, so the log can
 * restart from its beginning.
 */
const COMMITS_PER_PASS = 300;

/**
 * A log file larger than this is cut back (a TRUNCATE checkpoint) once its connection's
 * commits have paused for {@link TRIM_AFTER_IDLE_MS}: otherwise it keeps the size of its
 * largest burst (the backstop allows about 40 MiB) until the process exits. Cutting it back
 * at every restart instead (`journal_size_limit`) cost 10-20% of the writes under load.
 */
const TRIM_ABOVE_BYTES = 16 * 1024 * 1024;
const TRIM_AFTER_IDLE_MS = 1000;

type FromWorker = { type: 'stopped'; id: number } | { type: 'failed'; id: number; message: string };

// Runs in the worker (CommonJS, evaluated from this string so that the same code serves the
// TypeScript sources and the built package). A PASSIVE checkpoint never waits for locks:
// when another connection is checkpointing or recovering the file it returns busy, which
// only means "next time".
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { statSync } = require('node:fs');
const Database = require(workerData.driverPath);
const files = new Map();
let timer;
const fail = (id, error) => {
  const entry = files.get(id);
  files.delete(id);
  try { if (entry) entry.db.close(); } catch {}
  parentPort.postMessage({ type: 'failed', id, message: String((error && error.message) || error) });
};
const tick = () => {
  for (const [id, entry] of files) {
    const commits = Atomics.load(entry.commits, 0);
    if (commits === entry.seen) entry.idleTicks++;
    else { entry.idleTicks = 0; entry.trimmed = false; }
    const due = commits - entry.passed >= workerData.commitsPerPass || (commits !== entry.passed && commits ===
      entry.seen);
    entry.seen = commits;
    if (due) {
      entry.passed = commits;
      try { entry.db.pragma('wal_checkpoint(PASSIVE)'); }
      catch (error) { if (!String(error && error.code).startsWith('SQLITE_BUSY')) { fail(id, error); continue; } }
    }
    if (entry.trimmed || entry.idleTicks < workerData.trimAfterIdleTicks) continue;
    entry.trimmed = true;
    try {
      if (statSync(entry.path + '-wal').size > workerData.trimAboveBytes) {
        const [result] = entry.db.pragma('wal_checkpoint(TRUNCATE)');
        if (result && result.busy) entry.trimmed = false;
      }
    } catch (error) {
      const code = String(error && error.code);
      if (code.startsWith('SQLITE_BUSY')) entry.trimmed = false;
      else if (code !== 'ENOENT') fail(id, error);
    }
  }
};
const schedule = () => {
  if (files.size > 0 && timer === undefined) timer = setInterval(tick, workerData.intervalMs);
  if (files.size === 0 && timer !== undefined) { clearInterval(timer); timer = undefined; }
};
parentPort.on('message', (message) => {
  if (message.type === 'start') {
    try {
      const db = new Database(message.path, { fileMustExist: true, timeout: 0 });
      db.pragma('synchronous = ' + message.synchronous);
      db.pragma('wal_autocheckpoint = 0');
      files.set(message.id, { db, path: message.path, commits: new Int32Array(message.commits), passed: 0, seen: 0,
        idleTicks: 0, trimmed: true });
    } catch (error) { fail(message.id, error); }
  } else if (message.type === 'stop') {
    const entry = files.get(message.id);
    files.delete(message.id);
    try { if (entry) entry.db.close(); } catch {}
    parentPort.postMessage({ type: 'stopped', id: message.id });
  }
  schedule();
});
`;

interface Registration {
  readonly onFailure: (message: string) => void;
  stopped?: () => void;
}

/** The process's one checkpoint worker, created on first use. */
class CheckpointWorker {
  readonly #worker: Worker;
  readonly #registrations = new Map<number, Registration>();
  #nextId = 0;
  #dead = false;
  /** Stops waiting for the worker's answer: while there are any, the worker keeps the process alive. */
  #stopping = 0;

  constructor(onExit: () => void) {
    const driverPath = createRequire(import.meta.url).resolve('better-sqlite3');
    this.#worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        driverPath,
        intervalMs: CHECKPOINT_INTERVAL_MS,
        commitsPerPass: COMMITS_PER_PASS,
        trimAboveBytes: TRIM_ABOVE_BYTES,
        trimAfterIdleTicks: Math.ceil(TRIM_AFTER_IDLE_MS / CHECKPOINT_INTERVAL_MS),
      },
    });
    this.#worker.on('message', (message: FromWorker) => this.#receive(message));
    const die = (message: string): void => {
      if (this.#dead) return;
      this.#dead = true;
      onExit();
      for (const registration of this.#registrations.values()) {
        registration.onFailure(message);
        registration.stopped?.();
      }
      this.#registrations.clear();
    };
    this.#worker.on('error', (error) => die(`the checkpoint worker failed: ${error.message}`));
    this.#worker.on('exit', (code) => die(`the checkpoint worker exited with code ${code}`));
    // Never keeps the process alive: with no store open it has nothing to do. (After the
    // listeners: adding a 'message' listener refs the worker's port again.)
    this.#worker.unref();
  }

  start(path: string, options: BackgroundCheckpointOptions): BackgroundCheckpoints {
    const id = ++this.#nextId;
    const registration: Registration = { onFailure: options.onFailure };
    this.#registrations.set(id, registration);
    const commits = new SharedArrayBuffer(4);
    const counter = new Int32Array(commits);
    this.#worker.postMessage({ type: 'start', id, path, synchronous: options.synchronous, commits });
    let stopping: Promise<void> | undefined;
    return {
      noteCommit: () => {
        counter[0] = ((counter[0] as number) + 1) | 0;
      },
      stop: () => {
        stopping ??= new Promise<void>((done) => {
          if (this.#dead || !this.#registrations.has(id)) return done();
          if (this.#stopping++ === 0) this.#worker.ref();
          registration.stopped = () => {
            if (--this.#stopping === 0) this.#worker.unref();
            done();
          };
          this.#worker.postMessage({ type: 'stop', id });
        });
        return stopping;
      },
    };
  }

  #receive(message: FromWorker): void {
    const registration = this.#registrations.get(message.id);
    if (!registration) return;
    this.#registrations.delete(message.id);
    if (message.type === 'failed') registration.onFailure(message.message);
    registration.stopped?.();
  }
}

let shared: CheckpointWorker | undefined;

/**
 * Starts checkpointing the WAL-mode database at `path` on the process's checkpoint worker
 * (created on first use). The caller's own connection should then checkpoint only as a
 * backstop (a large `wal_autocheckpoint`), for when the log cannot be restarted because
 * writes never pause.
 */
export function startBackgroundCheckpoints(path: string, options: BackgroundCheckpointOptions): BackgroundCheckpoints {
  shared ??= new CheckpointWorker(() => {
    shared = undefined;
  });
  return shared.start(resolve(path), options);
}
