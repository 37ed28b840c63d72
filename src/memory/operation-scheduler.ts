/**
 * When operations run: a scope's queue under its lock (for the observe or reflect call
 * waiting on it), `drain` until nothing is pending, and the background worker loop that
 * requeues stale operations and runs what any scope left queued. What one operation does is
 * `operation-worker.ts`.
 * @module
 */
import { HarnessMemoryError } from '../core/errors.js';
import { memoryIdOf } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import type { MemoryStore, Operation, PrefetchedObserve } from '../storage/store.js';
import { releaseOperation, runOperation } from './operation-worker.js';
import { observeCancelled } from './observe-cancelled.js';
import type { OperationOutcome, OperationWorkerContext } from './operation-worker.js';
import type { KeyedLock } from './scope-lock.js';
import { startWorkerLoop } from './worker-loop.js';
import type { BackgroundWorker, ClaimableRunner, WorkerLoopOptions } from './worker-loop.js';

/** Options of {@link createOperationScheduler}. */
export interface OperationSchedulerOptions {
  readonly worker: OperationWorkerContext;
  /** The per-scope locks the service also takes (forget holds the scope's). */
  readonly locks: KeyedLock;
  /** Told when a background worker tick failed; the worker goes on at its next poll. */
  readonly onWorkerFailed: (error: Error) => void;
}

/** Who asked for an operation: a run's tool call, or the system. */
export interface OperationMeta {
  readonly runId?: string | undefined;
  readonly toolCallId?: string | undefined;
}

/** Operations a service enqueues itself (`observe` at the threshold, `reflect_now` on demand). */
export type EnqueuedOperationType = 'observe' | 'reflect_now';

/** Runs queued operations, for callers or in the background. */
export interface OperationScheduler {
  /**
   * Runs `first` (already claimed, with what its claim prefetched) if given, then claimable
   * operations of the scope, in order, under the scope's lock. Once the `wanted` operation
   * ran and left no follow-up work, it stops: whatever else is queued belongs to other
   * callers, who run it themselves (or the background worker does).
   *
   * When `signal` aborts (an observe caller's), it stops at once: the wait for the scope's lock
   * ends, the model call under way is aborted, and the operation claimed then (or `first`) is
   * put back in the queue as it was, its outcome `cancelled`; operations not reached stay queued.
   */
  processScope(
    memoryId: string,
    first?: Operation,
    wanted?: string,
    prefetched?: PrefetchedObserve,
    signal?: AbortSignal,
  ): Promise<Map<string, OperationOutcome>>;
  /** Enqueues an operation of the scope. */
  enqueue(
    scope: Scope,
    operationType: EnqueuedOperationType,
    payload: Record<string, unknown>,
    meta: OperationMeta,
  ): Promise<Operation>;
  /** Enqueues an operation, then runs the scope's queue; `own` is the outcome of the one enqueued. */
  enqueueAndRun(
    scope: Scope,
    operationType: EnqueuedOperationType,
    payload: Record<string, unknown>,
    meta: OperationMeta,
    signal?: AbortSignal,
  ): Promise<{ operation: Operation; own: OperationOutcome | undefined; outcomes: Map<string, OperationOutcome> }>;
  /** Processes pending operations (of one scope, or all) until none is left; `DRAIN_TIMEOUT` after `timeoutMs`. */
  drain(memoryId: string | undefined, timeoutMs: number): Promise<void>;
  /**
   * Retries a `dead` operation by hand (back to the queue at the end of its scope's log).
   * Throws `OPERATION_NOT_FOUND` for an id the scope does not have, `OPERATION_NOT_DEAD` for
   * an operation that is not dead.
   */
  retryDead(memoryId: string, operationId: string): Promise<Operation>;
  /**
   * Starts the background worker loop. `stop()` waits for the operation in hand; with
   * `timeoutMs`, no longer than that: its model call is then aborted and it is put back in the
   * queue as a cancelled observe's is (available at once, its attempt not counted), and `stop`
   * resolves once that is written, or after {@link WORKER_RELEASE_GRACE_MS} more.
   */
  startWorker(options?: WorkerLoopOptions): BackgroundWorker;
}

/** Callers that may run or wait for one scope's operations at once; more answer `queued` at once. */
export const MAX_SCOPE_CALLERS = 16;

/** The scheduler over one service's worker context and locks. */

export function createOperationScheduler(options: OperationSchedulerOptions): OperationScheduler {
  const { worker, locks } = options;
  const { store } = worker;

  /**
   * Runs an operation claimed from any scope under its scope's lock. When `signal` aborts, its
   * model call is aborted, or the wait for the lock ended, and it is put back in the queue.
   */
  const runClaimed = (operation: Operation, signal?: AbortSignal): Promise<OperationOutcome> => {
    const release = (reason: unknown) => releaseOperation(worker, operation, observeCancelled(reason));
    return underLock(
      operation.memoryId,
      signal,
      () => (signal?.aborted ? release(signal.reason) : runOperation(worker, operation, undefined, signal)),
      release,
    );
  };

  /**
   * `work` under the scope's lock; when `signal` aborts while it waits for the lock (the work
   * never started), `aborted` answers instead.
   */
  const underLock = async <T>(
    memoryId: string,
    signal: AbortSignal | undefined,
    work: () => Promise<T>,
    aborted: (reason: unknown) => Promise<T>,
  ): Promise<T> => {
    let started = false;
    try {
      return await locks.run(
        memoryId,
        () => {
          started = true;
          return work();
        },
        signal,
      );
    } catch (error) {
      if (!started && signal?.aborted && error === signal.reason) return aborted(signal.reason);
      throw error;
    }
  };

  /**
   * Claims and runs operations of any scope until none is claimable (or `stopped` says so);
   * `holding` is told of the operation in hand, and of none once it is settled.
   */
  const runClaimable: ClaimableRunner = async (stopped = () => false, signal, holding) => {
    while (!stopped()) {
      const operation = await store.claimOperation({ leaseOwner: worker.workerId, leaseMs: worker.leaseMs });
      if (!operation) return;
      holding?.(operation);
      await runClaimed(operation, signal);
      holding?.(undefined);
    }
  };

  // Scopes whose callers were turned away with their operations queued, or where an operation
  // ended with other work perhaps queued behind it by another process (see
  // `OperationOutcome.othersMayWait`): the last caller leaving the scope runs what is left, so
  // nothing waits for a worker there may not be, or for the scope's next observe.
  const leftQueued = new Set<string>();

  /** `first`, claimed by a caller whose signal aborted before it ran, put back in the queue. */
  const released = async (first: Operation | undefined, reason: unknown) => {
    const outcomes = new Map<string, OperationOutcome>();
    if (first) outcomes.set(first.operationId, await releaseOperation(worker, first, observeCancelled(reason)));
    return outcomes;
  };

  const processScope: OperationScheduler['processScope'] = async (memoryId, first, wanted, prefetched, signal) => {
    if (signal?.aborted) return released(first, signal.reason);
    // Enough callers wait for the scope already: this one's operation is stored and queued.
    // Waiting too would hold the caller, and what it keeps (an MCP request its client gave up
    // on), for as long as the model takes for all of them.
    if (first === undefined && locks.callers(memoryId) >= MAX_SCOPE_CALLERS) {
      leftQueued.add(memoryId);
      return new Map<string, OperationOutcome>();
    }
    const work = async (): Promise<Map<string, OperationOutcome>> => {
      const outcomes = new Map<string, OperationOutcome>();
      // The scope's claim also takes over an operation whose holder let its lease expire (a
      // process that died): the scope's next observe or drain recovers it, worker or not.
      const claim = () => store.claimOperation({ memoryId, leaseOwner: worker.workerId, leaseMs: worker.leaseMs });
      const run = async (operation: Operation, prefetch?: PrefetchedObserve): Promise<OperationOutcome> => {
        const result = signal?.aborted
          ? await releaseOperation(worker, operation, observeCancelled(signal.reason))
          : await runOperation(worker, operation, prefetch, signal);
        outcomes.set(operation.operationId, result);
        if (result.othersMayWait) leftQueued.add(memoryId);
        return result;
      };
      let operation = first ?? (await claim());
      for (; operation; operation = await claim()) {
        const result = await run(operation, prefetched);
        // What is still queued runs at the scope's next observe, drain or worker poll.
        if (result.status === 'cancelled') return outcomes;
        if (wanted !== undefined && outcomes.has(wanted) && !result.followUp) break;
      }
      if (leftQueued.has(memoryId)) {
        // Only while no other caller waits for the scope: one that does runs its own operation
        // (and answers `applied` for it), and the last of them what is left. A cancelled caller
        // leaves it for the next (its released operation would be claimed again and again).
        const alone = () => locks.callers(memoryId) === 1 && !signal?.aborted;
        while (alone() && (operation = await claim())) await run(operation);
        if (alone()) leftQueued.delete(memoryId);
      }
      return outcomes;
    };
    return underLock(memoryId, signal, work, (reason) => released(first, reason));
  };

  const enqueue: OperationScheduler['enqueue'] = (scope, operationType, payload, meta) =>
    store.enqueueOperation({
      operationId: worker.generateId('op'),
      scope,
      memoryId: memoryIdOf(scope),
      operationType,
      payload,
      runId: meta.runId ?? 'unknown',
      toolCallId: meta.toolCallId ?? 'system',
    });

  return {
    processScope,
    enqueue,

    async enqueueAndRun(scope, operationType, payload, meta, signal) {
      const operation = await enqueue(scope, operationType, payload, meta);
      const outcomes = await processScope(memoryIdOf(scope), undefined, operation.operationId, undefined, signal);
      return { operation, own: outcomes.get(operation.operationId), outcomes };
    },

    retryDead: (memoryId, operationId) => retryDead(store, memoryId, operationId),

    async drain(memoryId, timeoutMs) {
      const deadline = performance.now() + timeoutMs;
      let lastStaleCheck = Number.NEGATIVE_INFINITY;
      for (;;) {
        if (memoryId !== undefined) await processScope(memoryId);
        else await runClaimable();
        const pending = await store.countPendingOperations(memoryId);
        if (pending === 0) return;
        // A scope's claim takes over its operation whose lease expired; the claim of any scope
        // does not, so a drain of every scope requeues them itself (about once a second while
        // work is pending), as the worker's stale check would.
        if (memoryId === undefined && performance.now() - lastStaleCheck >= 1000) {
          lastStaleCheck = performance.now();
          if ((await store.requeueStaleOperations({ graceSeconds: 0 })) > 0) continue;
        }
        if (performance.now() >= deadline) {
          throw new HarnessMemoryError({
            code: 'DRAIN_TIMEOUT',
            component: 'observational-memory',
            message: `drain timed out after ${timeoutMs} ms with ${pending} operation(s) still pending; they stay queued and will be retried.`,
            data: { pending, timeoutMs },
          });
        }
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },

    startWorker: (loopOptions = {}) =>
      startWorkerLoop(
        {
          store,
          runClaimable,
          onWorkerFailed: options.onWorkerFailed,
          reportFault: worker.reportFault,
          leaseMs: worker.leaseMs,
        },
        loopOptions,
      ),
  };
}

const CONTROL_CHARACTER = /\p{Cc}/u;

/** Retries a dead operation by hand; `OPERATION_NOT_FOUND` or `OPERATION_NOT_DEAD` otherwise. */
async function retryDead(store: MemoryStore, memoryId: string, operationId: string): Promise<Operation> {
  // An id with a control character names no operation (and Postgres cannot even look it up).
  if (
    typeof operationId !== 'string' ||
    operationId.trim() === '' ||
    operationId.length > 200 ||
    CONTROL_CHARACTER.test(operationId)
  ) {
    throw new HarnessMemoryError({
      code: 'OPERATION_NOT_FOUND',
      component: 'observational-memory',
      message: 'an operation id is required (at most 200 characters).',
      data: { operationId: String(operationId).slice(0, 200) },
    });
  }
  const retried = await store.retryDeadOperation({ memoryId, operationId });
  if (retried) return retried;
  const found = (await store.listOperations(memoryId)).find((operation) => operation.operationId === operationId);
  if (!found) {
    throw new HarnessMemoryError({
      code: 'OPERATION_NOT_FOUND',
      component: 'observational-memory',
      message: `the scope has no operation ${operationId}; its operations are listed by \`harness memory show\`, GET …/operations and inspect().`,
      data: { operationId },
    });
  }
  throw new HarnessMemoryError({
    code: 'OPERATION_NOT_DEAD',
    component: 'observational-memory',
    message: `operation ${operationId} is ${found.status}, not dead; only a dead operation can be retried by hand.`,
    data: { operationId, status: found.status },
  });
}
