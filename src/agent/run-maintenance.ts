/**
 * Run maintenance: heartbeats for this process's runs, and the sweep that fails runs whose
 * process stopped heartbeating (`RUN_ABANDONED`), so their streams end, deletes runs and
 * settled memory operations past their retention, and the rows of expired working-memory
 * entries.
 * @module
 */
import type { FaultReporter } from '../core/fault.js';
import type { RunStore } from '../storage/run-store.js';
import type { RunEventEmitter } from './run-event-emitter.js';
import { invalidOption, requireCount, requireFunction, requireTimerMs } from '../core/require-option.js';
import { isRunEndedConflict } from './_run-errors.js';
import { isRunOpen } from '../storage/run-store.js';

const FACTORY = 'startRunMaintenance';

/** Options of {@link startRunMaintenance}. */
export interface RunMaintenanceOptions {
  /** @default 30000 */
  readonly heartbeatMs?: number;
  /** @default 60000 */
  readonly sweepMs?: number;
  /** @default 300 */
  readonly abandonAfterSeconds?: number;
  /**
   * Ended runs (completed, failed or cancelled) not written for this many seconds are deleted
   * with their events at each sweep; conversation messages are kept. The run store must have
   * `deleteEndedRuns`. Leave it out, or 0, to keep runs for ever.
   * @default 0
   */
  readonly runRetentionSeconds?: number;
  /**
   * Settled memory operations (applied or failed) not written for this many seconds are
   * deleted with their markers at each sweep, after the runs; queued, processing and dead ones,
   * and each scope's newest, are kept. The target must have `deleteSettledOperations` (the
   * runner's observational memory, over a store that has it). Leave it out, or 0, to keep them
   * for ever.
   * @default 0
   */
  readonly operationRetentionSeconds?: number;
  /**
   * Deletes the rows of expired working-memory entries, one bounded call
   * (`WorkingMemory.purgeExpired`): given, each sweep calls it after the deletes above, with a
   * limit of 1,000, again while a call deletes that many (20 calls a sweep at most). Without it
   * an expired entry, already gone for every reader, keeps its row until its scope's next set or
   * delete.
   */
  readonly purgeExpiredWorkingMemory?: (options: { readonly limit: number }) => Promise<number>;
}

/** Runs one `deleteEndedRuns` call deletes, and the most calls one sweep makes. */
const RETENTION_BATCH = 500;
const RETENTION_BATCHES_PER_SWEEP = 20;
/** Operations one `deleteSettledOperations` call deletes (its most), and the most calls one sweep makes. */
const OPERATION_RETENTION_BATCH = 1_000;
const OPERATION_RETENTION_BATCHES_PER_SWEEP = 20;
const OPERATIONS_FAILED = 'deleting settled memory operations failed; the next sweep tries again';
/** Entries one `purgeExpiredWorkingMemory` call deletes (its most), and the most calls one sweep makes. */
const PURGE_BATCH = 1_000;
const PURGE_BATCHES_PER_SWEEP = 20;
const PURGE_FAILED = 'deleting expired working-memory entries failed; the next sweep tries again';

/** What maintenance works on. */
export interface RunMaintenanceTarget {
  readonly runStore: RunStore;
  readonly events: RunEventEmitter;
  /** The ids of the runs executing in this process now. */
  readonly activeRunIds: () => Iterable<string>;
  /** True while the run executes in this process (the sweep leaves it alone). */
  readonly isActive: (runId: string) => boolean;
  /**
   * Told when a heartbeat finds a run of this process ended by another (swept as abandoned
   * while this process was paused), so that it stops working on it.
   */
  readonly endedElsewhere?: (runId: string) => void;
  readonly reportFault: FaultReporter;
  /**
   * Deletes settled memory operations past an age, one bounded call
   * (`ObservationalMemory.deleteSettledOperations`); needed for `operationRetentionSeconds`.
   */
  readonly deleteSettledOperations?: (options: { olderThanSeconds: number; limit: number }) => Promise<number>;
}

/** A started maintenance; `stop` waits for the task under way and the heartbeats in flight. */
export interface RunMaintenance {
  stop(): Promise<void>;
}

/**
 * Heartbeats the active runs every `heartbeatMs`, and at once and every `sweepMs` fails the
 * runs of any process that stopped heartbeating for `abandonAfterSeconds`, then deletes runs
 * that ended more than `runRetentionSeconds` ago, settled memory operations not written for
 * `operationRetentionSeconds` and the rows of expired working-memory entries (each when set).
 * Sweeps and deletes run one at a time; heartbeats go beside them, one in flight per run, so a
 * run whose row is held delays no other. A failed one is reported and runs again at its next
 * tick.
 */
export function startRunMaintenance(target: RunMaintenanceTarget, options: RunMaintenanceOptions = {}): RunMaintenance {
  const heartbeatMs = requireTimerMs(FACTORY, 'heartbeatMs', options.heartbeatMs, 1) ?? 30_000;
  const sweepMs = requireTimerMs(FACTORY, 'sweepMs', options.sweepMs, 1) ?? 60_000;
  const abandonAfterSeconds = requireCount(FACTORY, 'abandonAfterSeconds', options.abandonAfterSeconds) ?? 300;
  const retentionSeconds = requireRetention('runRetentionSeconds', options.runRetentionSeconds);
  const operationRetentionSeconds = requireRetention('operationRetentionSeconds', options.operationRetentionSeconds);
  requireFunction(FACTORY, 'purgeExpiredWorkingMemory', options.purgeExpiredWorkingMemory);
  const purgeExpired = options.purgeExpiredWorkingMemory ?? undefined;
  const { runStore, events, reportFault } = target;
  const deleteEndedRuns = retentionSeconds > 0 ? runStore.deleteEndedRuns?.bind(runStore) : undefined;
  if (retentionSeconds > 0 && !deleteEndedRuns)
    throw invalidOption(
      FACTORY,
      'runRetentionSeconds',
      `needs a run store with deleteEndedRuns(); ${runStore.name} has none`,
      'Leave it out to keep runs for ever, or give the store deleteEndedRuns().',
    );
  const deleteSettledOperations = operationRetentionSeconds > 0 ? target.deleteSettledOperations : undefined;
  if (operationRetentionSeconds > 0 && !deleteSettledOperations)
    throw invalidOption(
      FACTORY,
      'operationRetentionSeconds',
      'needs a memory store with deleteSettledOperations(); this one has none',
      'Leave it out to keep memory operations for ever, or give the store deleteSettledOperations().',
    );
  let chain: Promise<void> = Promise.resolve();
  const schedule = (
    task: () => Promise<void>,
    message = 'the stale-run sweep failed; it runs again at its next tick',
  ): void => {
    chain = chain.then(task).catch((error: unknown) => reportFault({ component: 'maintenance', message, error }));
  };
  // Heartbeats go at once, each run's on its own, outside the chain: a run whose row another
  // session holds (its heartbeat waits for it) must not hold up the heartbeats of the other
  // runs, nor the sweep, or those runs would be swept as abandoned. One in flight per run.
  const beating = new Map<string, Promise<void>>();
  const reportBeat = (error: unknown, runId?: string): void =>
    reportFault({
      component: 'maintenance',
      message: 'a run heartbeat failed; the next one retries',
      error,
      ...(runId === undefined ? {} : { runId }),
    });
  const heartbeat = (): void => {
    try {
      for (const runId of target.activeRunIds()) {
        if (beating.has(runId)) continue;
        // Begun in a promise, so a store or callback that throws is reported, never uncaught.
        const beat = Promise.resolve()
          .then(() => runStore.updateRun(runId, {}))
          .then((run) => {
            if (!isRunOpen(run.status)) target.endedElsewhere?.(runId);
          })
          .catch((error: unknown) => reportBeat(error, runId))
          .finally(() => beating.delete(runId));
        beating.set(runId, beat);
      }
    } catch (error) {
      reportBeat(error);
    }
  };
  const sweep = async (): Promise<void> => {
    for (const stale of await runStore.listStaleRuns(abandonAfterSeconds)) {
      if (target.isActive(stale.runId)) continue;
      const error = {
        code: 'RUN_ABANDONED',
        message:
          `the harness process running this run stopped before it finished (no heartbeat for ` +
          `${abandonAfterSeconds} s)`,
      };
      // Only the process whose update took the run reports it: its terminal event stays its last.
      const run = await runStore.abandonStaleRun(stale.runId, abandonAfterSeconds, error);
      if (!run) continue;
      await events
        .emit(run.runId, 'run.failed', { error }, { conversationId: run.scope.conversationId })
        .catch((failure: unknown) => {
          // The process running it woke and recorded its end first: that end stands.
          if (!isRunEndedConflict(failure)) throw failure;
        });
    }
    if (deleteEndedRuns && !stopped) schedule(retain(deleteEndedRuns, RETENTION_BATCHES_PER_SWEEP));
    if (deleteSettledOperations && !stopped)
      schedule(retainOperations(deleteSettledOperations, OPERATION_RETENTION_BATCHES_PER_SWEEP), OPERATIONS_FAILED);
    if (purgeExpired && !stopped) schedule(purge(purgeExpired, PURGE_BATCHES_PER_SWEEP), PURGE_FAILED);
  };
  // A bounded number of short deletes a sweep, each a task of its own: a backlog is worked off
  // over several sweeps instead of in one long transaction, and a heartbeat due meanwhile runs
  // between two deletes instead of after all of them.
  let stopped = false;
  const retain = (remove: NonNullable<RunStore['deleteEndedRuns']>, batches: number) => async (): Promise<void> => {
    const deleted = await remove(retentionSeconds, RETENTION_BATCH);
    if (deleted === RETENTION_BATCH && batches > 1 && !stopped) schedule(retain(remove, batches - 1));
  };
  const retainOperations =
    (remove: NonNullable<RunMaintenanceTarget['deleteSettledOperations']>, batches: number) =>
    async (): Promise<void> => {
      const deleted = await remove({ olderThanSeconds: operationRetentionSeconds, limit: OPERATION_RETENTION_BATCH });
      if (deleted === OPERATION_RETENTION_BATCH && batches > 1 && !stopped)
        schedule(retainOperations(remove, batches - 1), OPERATIONS_FAILED);
    };
  const purge =
    (remove: NonNullable<RunMaintenanceOptions['purgeExpiredWorkingMemory']>, batches: number) =>
    async (): Promise<void> => {
      const deleted = await remove({ limit: PURGE_BATCH });
      if (deleted === PURGE_BATCH && batches > 1 && !stopped) schedule(purge(remove, batches - 1), PURGE_FAILED);
    };
  schedule(sweep);
  const timers = [setInterval(heartbeat, heartbeatMs), setInterval(() => schedule(sweep), sweepMs)];
  for (const timer of timers) timer.unref?.();
  return {
    async stop() {
      for (const timer of timers) clearInterval(timer);
      // No further delete is scheduled; the task under way finishes, and what it scheduled
      // before it saw `stopped`.
      stopped = true;
      for (let current = chain; ; current = chain) {
        await current;
        if (current === chain) break;
      }
      await Promise.all(beating.values());
    },
  };
}

/** A retention as checked: 0 (keep for ever) or a whole number of seconds. */
function requireRetention(option: string, value: unknown): number {
  if (value === undefined || value === 0) return 0;
  return requireCount(FACTORY, option, value) ?? 0;
}
