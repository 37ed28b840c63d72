/**
 * When operations run: a scope's queue under its lock (for the observe or reflect call
 * waiting on it), `drain` until nothing is pending, and the background worker loop that
 * requeues stale operations and runs what any scope left queued. What one operation does is
 * `operation-worker.ts`.
 * @module
 */
import { HarnessMemoryError } from '../core/errors.js';
import type { Operation, PrefetchedObserve } from '../storage/store.js';
import { runOperation } from './operation-worker.js';
import type { OperationOutcome, OperationWorkerContext } from './operation-worker.js';
import type { KeyedLock } from './scope-lock.js';

/** Options of {@link createOperationScheduler}. */
export interface OperationSchedulerOptions {
  readonly worker: OperationWorkerContext;
  /** The per-scope locks the service also takes (forget holds the scope's). */
  readonly locks: KeyedLock;
  /** Told when a background worker tick failed; the worker goes on at its next poll. */
  readonly onWorkerFailed: (error: Error) => void;
}

/** Options of {@link OperationScheduler.startWorker}. */
export interface WorkerLoopOptions {
  /** @default 1000 */
  readonly pollMs?: number;
  /** @default 30000 */
  readonly staleCheckMs?: number;
}

/** Runs queued operations, for callers or in the background. */
export interface OperationScheduler {
  /**
   * Runs `first` (already claimed, with what its claim prefetched) if given, then claimable
   * operations of the scope, in order, under the scope's lock. Once the `wanted` operation
   * ran and left no follow-up work, it stops: whatever else is queued belongs to other
   * callers, who run it themselves (or the background worker does).
   */
  processScope(memoryId: string, first?: Operation, wanted?: string, prefetched?: PrefetchedObserve): Promise<Map<string, OperationOutcome>>;
  /** Processes pending operations (of one scope, or all) until none is left; `STORE_FAILED` after `timeoutMs`. */
  drain(memoryId: string | undefined, timeoutMs: number): Promise<void>;
  /** Starts the background worker loop; `stop` waits for the tick under way. */
  startWorker(options?: WorkerLoopOptions): { stop(): Promise<void> };
}

/** The scheduler over one service's worker context and locks. */
export function createOperationScheduler(options: OperationSchedulerOptions): OperationScheduler {
  const { worker, locks } = options;
  const { store } = worker;

  /** Claims and runs operations of any scope until none is claimable (or `stopped` says so). */
  const runClaimable = async (stopped: () => boolean = () => false): Promise<void> => {
    while (!stopped()) {
      const operation = await store.claimOperation({ leaseOwner: worker.workerId, leaseMs: worker.leaseMs });
      if (!operation) return;
      await locks.run(operation.memoryId, () => runOperation(worker, operation));
    }
  };

  const processScope: OperationScheduler['processScope'] = (memoryId, first, wanted, prefetched) =>
    locks.run(memoryId, async () => {
      const outcomes = new Map<string, OperationOutcome>();
      const claim = () => store.claimOperation({ memoryId, leaseOwner: worker.workerId, leaseMs: worker.leaseMs });
      for (let operation = first ?? (await claim()); operation; operation = await claim()) {
        const result = await runOperation(worker, operation, prefetched);
        outcomes.set(operation.operationId, result);
        if (wanted !== undefined && outcomes.has(wanted) && !result.followUp) break;
      }
      return outcomes;
    });

  return {
    processScope,

    async drain(memoryId, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        if (memoryId !== undefined) await processScope(memoryId);
        else await runClaimable();
        if ((await store.countPendingOperations(memoryId)) === 0) return;
        if (Date.now() >= deadline) {
          throw new HarnessMemoryError({ code: 'STORE_FAILED', component: 'observational-memory', message: 'drain timed out with operations still pending; they stay queued and will be retried.' });
        }
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },

    startWorker(loopOptions = {}) {
      const pollMs = loopOptions.pollMs ?? 1000;
      const staleCheckMs = loopOptions.staleCheckMs ?? 30_000;
      let stopped = false;
      let lastStaleCheck = 0;
      let wake: (() => void) | undefined;
      const loop = async (): Promise<void> => {
        while (!stopped) {
          try {
            if (Date.now() - lastStaleCheck >= staleCheckMs) {
              lastStaleCheck = Date.now();
              await store.requeueStaleOperations({ graceSeconds: 0 });
            }
            await runClaimable(() => stopped);
          } catch (error) {
            options.onWorkerFailed(error as Error);
          }
          if (stopped) break;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, pollMs);
            // Idle polling must not keep a process alive; stop() wakes the loop itself.
            timer.unref?.();
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = undefined;
        }
      };
      const running = loop();
      return {
        async stop() {
          stopped = true;
          wake?.();
          await running;
        },
      };
    },
  };
}
