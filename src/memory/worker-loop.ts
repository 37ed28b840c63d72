/**
 * The background worker loop: requeues stale operations and runs claimable ones of any scope
 * until stopped; a timed stop gives back the operation in hand.
 * @module
 */
import type { Fault, FaultReporter } from '../core/fault.js';
import { requireTimerMs } from '../core/require-option.js';
import { waitAtMost } from '../core/until-stopped.js';
import type { MemoryStore, Operation } from '../storage/store.js';

/** Options of the operation scheduler's `startWorker`. */
export interface WorkerLoopOptions {
  /** @default 1000 */
  readonly pollMs?: number;
  /** @default 30000 */
  readonly staleCheckMs?: number;
}

/** Options of the background worker's `stop`. */
export interface WorkerStopOptions {
  /**
   * How long to wait for the operation in hand; then its model call is aborted and it is put
   * back in the queue (see the operation scheduler's `startWorker`). Left out: waits for it.
   */
  readonly timeoutMs?: number;
}

/** A running background worker. */
export interface BackgroundWorker {
  stop(options?: WorkerStopOptions): Promise<void>;
}

/**
 * How long a worker's `stop({ timeoutMs })` (and the runner's `stopObserving`) waits, once it
 * aborted the model call in flight, for the operation to be put back in the queue: one store
 * write, which a store that hangs must not hold a shutdown on.
 */
export const WORKER_RELEASE_GRACE_MS = 2_000;

/** Runs claimable operations of any scope (`runClaimable` of the operation scheduler). */
export type ClaimableRunner = (
  stopped?: () => boolean,
  signal?: AbortSignal,
  holding?: (operation: Operation | undefined) => void,
) => Promise<void>;

/** The reason a worker's `stop({ timeoutMs })` aborts the model call in flight with, once its time is up. */
const WORKER_STOPPING = new DOMException('the background memory worker is stopping', 'AbortError');

/** What the background worker loop works with. */
export interface WorkerLoopParts {
  readonly store: MemoryStore;
  readonly runClaimable: ClaimableRunner;
  readonly onWorkerFailed: (error: Error) => void;
  readonly reportFault: FaultReporter;
  readonly leaseMs: number;
}

/**
 * The background worker: requeues stale operations every `staleCheckMs`, and runs claimable
 * operations of any scope every `pollMs`, until stopped.
 */
export function startWorkerLoop(parts: WorkerLoopParts, loopOptions: WorkerLoopOptions): BackgroundWorker {
  const { store, runClaimable, onWorkerFailed, reportFault } = parts;
  const pollMs = loopOptions.pollMs ?? 1000;
  const staleCheckMs = loopOptions.staleCheckMs ?? 30_000;
  let stopped = false;
  let lastStaleCheck = Number.NEGATIVE_INFINITY;
  let wake: (() => void) | undefined;
  // Aborted by a timed stop: the model call in flight ends and its operation goes back to the queue.
  const stopping = new AbortController();
  let inHand: Operation | undefined;
  const loop = async (): Promise<void> => {
    while (!stopped) {
      try {
        if (performance.now() - lastStaleCheck >= staleCheckMs) {
          lastStaleCheck = performance.now();
          await store.requeueStaleOperations({ graceSeconds: 0 });
        }
        await runClaimable(
          () => stopped,
          stopping.signal,
          (operation) => (inHand = operation),
        );
      } catch (error) {
        if (!stopped) onWorkerFailed(error as Error);
        else if (inHand) reportFault(leftForItsLease(inHand, error, parts.leaseMs));
        // Stopped with nothing in hand (a claim or a stale check failed, the store closing under
        // it, say): nothing is left behind, and the worker does not poll again.
      }
      inHand = undefined;
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
    async stop(stopOptions = {}) {
      const timeoutMs = requireTimerMs('startWorker().stop', 'timeoutMs', stopOptions?.timeoutMs, 0);
      stopped = true;
      wake?.();
      if (timeoutMs === undefined) return running;
      await waitAtMost(running, timeoutMs);
      stopping.abort(WORKER_STOPPING);
      await waitAtMost(running, WORKER_RELEASE_GRACE_MS);
    },
  };
}

/** The fault of a stopped worker that could not settle or give back the operation it held. */
function leftForItsLease(operation: Operation, error: unknown, leaseMs: number): Fault {
  return {
    component: 'memory-worker',
    message:
      `the background memory worker stopped holding ${operation.operationType} operation ${operation.operationId}, ` +
      `whose last store write failed: it stays processing until its lease runs out (${Math.ceil(leaseMs / 1000)} s), ` +
      'then the next process runs it',
    error,
    runId: operation.runId,
    operationId: operation.operationId,
  };
}
