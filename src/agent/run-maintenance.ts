/**
 * Run maintenance: heartbeats for this process's runs, and the sweep that fails runs whose
 * process stopped heartbeating (`RUN_ABANDONED`), so their streams end.
 * @module
 */
import type { FaultReporter } from '../core/fault.js';
import type { RunStore } from '../storage/run-store.js';
import type { RunEventEmitter } from './run-event-emitter.js';

/** Options of {@link startRunMaintenance}. */
export interface RunMaintenanceOptions {
  /** @default 30000 */
  readonly heartbeatMs?: number;
  /** @default 60000 */
  readonly sweepMs?: number;
  /** @default 300 */
  readonly abandonAfterSeconds?: number;
}

/** What maintenance works on. */
export interface RunMaintenanceTarget {
  readonly runStore: RunStore;
  readonly events: RunEventEmitter;
  /** The ids of the runs executing in this process now. */
  readonly activeRunIds: () => Iterable<string>;
  /** True while the run executes in this process (the sweep leaves it alone). */
  readonly isActive: (runId: string) => boolean;
  readonly reportFault: FaultReporter;
}

/** A started maintenance; `stop` waits for the task under way. */
export interface RunMaintenance {
  stop(): Promise<void>;
}

/**
 * Heartbeats the active runs every `heartbeatMs`, and at once and every `sweepMs` fails the
 * runs of any process that stopped heartbeating for `abandonAfterSeconds`. One task runs at
 * a time; a failed one is reported and runs again at its next tick.
 */
export function startRunMaintenance(target: RunMaintenanceTarget, options: RunMaintenanceOptions = {}): RunMaintenance {
  const heartbeatMs = options.heartbeatMs ?? 30_000;
  const sweepMs = options.sweepMs ?? 60_000;
  const abandonAfterSeconds = options.abandonAfterSeconds ?? 300;
  const { runStore, events, reportFault } = target;
  let chain: Promise<void> = Promise.resolve();
  const schedule = (task: () => Promise<void>): void => {
    chain = chain.then(task).catch((error: unknown) =>
      reportFault({
        component: 'maintenance',
        message: 'the stale-run sweep failed; it runs again at its next tick',
        error,
      }),
    );
  };
  const heartbeat = async (): Promise<void> => {
    for (const runId of target.activeRunIds()) {
      await runStore.updateRun(runId, {}).catch((error: unknown) =>
        reportFault({
          component: 'maintenance',
          message: 'a run heartbeat failed; the next one retries',
          error,
          runId,
        }),
      );
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
      await events.emit(run.runId, 'run.failed', { error }, { conversationId: run.scope.conversationId });
    }
  };
  schedule(sweep);
  const timers = [setInterval(() => schedule(heartbeat), heartbeatMs), setInterval(() => schedule(sweep), sweepMs)];
  for (const timer of timers) timer.unref?.();
  return {
    async stop() {
      for (const timer of timers) clearInterval(timer);
      await chain;
    },
  };
}
