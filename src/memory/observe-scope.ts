/**
 * One observe call after its messages were prepared: store them and, at the threshold, run
 * the observe operation (one transaction with `appendMessagesAndClaim` where the store has
 * it), reporting it on the scope's events.
 * @module
 */
import type { PreparedMessage } from '../core/transcript.js';
import { hiddenFailureText } from '../core/public-error-text.js';
import { memoryIdOf } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import type { IdGenerator } from '../core/ids.js';
import type { MemoryStore, Operation } from '../storage/store.js';
import type { ObservationalMemoryEvent, ObserveRequest, ObserveResult } from './observational-memory-api.js';
import { runModelPayload, type OperationOutcome, type OperationWorkerContext } from './operation-worker.js';
import type { OperationScheduler } from './operation-scheduler.js';
import { observeCancelled } from './observe-cancelled.js';
import type { ScopeReader } from './scope-reader.js';

/** What {@link observeScope} works with; the service builds it once. */
export interface ObserveDependencies {
  readonly store: MemoryStore;
  readonly effective: ScopeReader['effective'];
  readonly generateId: IdGenerator;
  readonly worker: OperationWorkerContext;
  readonly processScope: OperationScheduler['processScope'];
  readonly enqueue: (
    scope: Scope,
    operationType: 'observe',
    payload: Record<string, unknown>,
    request: ObserveRequest,
  ) => Promise<Operation>;
  readonly emit: (event: ObservationalMemoryEvent) => void;
  /** Told of messages stored under the caller's generation, so later calls can leave them out. */
  readonly noteStored: (memoryId: string, generation: number | undefined, messages: readonly PreparedMessage[]) => void;
}

/** Stores the messages and, at the threshold, runs the observe operation; reports it on the scope's events. */
export async function observeScope(
  dependencies: ObserveDependencies,
  scope: Scope,
  prepared: readonly PreparedMessage[],
  request: ObserveRequest,
  skipped: (reason: NonNullable<ObserveResult['reason']>, count?: number) => ObserveResult,
): Promise<ObserveResult> {
  const { store, effective, generateId, worker, processScope, enqueue, emit, noteStored } = dependencies;
  const memoryId = memoryIdOf(scope);
  const runId = request.runId ?? 'unknown';
  const generation = request.generation === undefined ? {} : { generation: request.generation };
  const model = worker.followRunModel ? runModelPayload(request.modelId) : {};
  const signal = request.signal;
  let operation: Operation;
  let run: () => Promise<Map<string, OperationOutcome>>;
  if (store.appendMessagesAndClaim && prepared.length > 0) {
    // One transaction reads the settings, stores the messages, enqueues and claims: the
    // enqueue is still the commit point.
    const result = await store.appendMessagesAndClaim({
      scope,
      memoryId,
      messages: prepared,
      ...generation,
      settings: (record) => {
        const { enabled, config } = effective(record);
        return { enabled, minTokens: config.observeMinTokens };
      },
      operation: {
        operationId: generateId('op'),
        // The store sets `messages` (the ones it stored) and `unobserved_tokens`.
        payload: model,
        runId,
        toolCallId: request.toolCallId ?? 'system',
      },
      leaseOwner: worker.workerId,
      leaseMs: worker.leaseMs,
      batchTokens: worker.maxBatchTokens,
    });
    if (result.disabled) return skipped('disabled', result.record?.observationCount ?? 0);
    noteStored(memoryId, request.generation, prepared);
    if (!result.operation) return skipped('below_threshold', result.record.observationCount);
    operation = result.operation;
    run = () => processScope(memoryId, result.claimed, result.operation?.operationId, result.prefetched, signal);
  } else {
    const record = await store.getRecord(memoryId);
    const { enabled, config } = effective(record);
    if (!enabled) return skipped('disabled', record?.observationCount ?? 0);
    if (prepared.length === 0) return skipped('no_messages', record?.observationCount ?? 0);
    const appended = await store.appendMessages({ scope, memoryId, messages: prepared, ...generation });
    noteStored(memoryId, request.generation, prepared);
    if (appended.unobservedTokens < config.observeMinTokens)
      return skipped('below_threshold', appended.record.observationCount);
    operation = await enqueue(
      scope,
      'observe',
      { ...model, messages: appended.inserted, unobserved_tokens: appended.unobservedTokens },
      request,
    );
    // Only as far as this call's own operation: later ones belong to their own callers.
    run = () => processScope(memoryId, undefined, operation.operationId, undefined, signal);
  }
  const base = { scope, runId, operationId: operation.operationId };
  emit({ type: 'memory.observe.started', ...base });
  let outcomes: Map<string, OperationOutcome>;
  try {
    outcomes = await run();
  } catch (error) {
    emit({ type: 'memory.observe.failed', ...base, error: shownText(worker, error) });
    throw error;
  }
  const own = outcomes.get(operation.operationId);
  if (signal !== undefined && wasCancelled(outcomes, own, signal)) {
    // Not a failure: the operations it reached are queued again, to be run later.
    emit({
      type: 'memory.observe.completed',
      ...base,
      status: own?.status === 'applied' ? 'applied' : 'queued',
      observed: observedIn(outcomes),
      reflected: [...outcomes.values()].some((item) => item.reflected),
      observationCount: own?.observationCount ?? (await store.getRecord(memoryId))?.observationCount ?? 0,
    });
    throw observeCancelled(signal.reason, operation.operationId);
  }
  if (own?.error && own.status !== 'applied') {
    emit({ type: 'memory.observe.failed', ...base, error: shownText(worker, own.error) });
    throw own.error;
  }
  const reflections = [...outcomes.values()].filter((item) => item.operationType === 'reflect');
  const failure = reflections.find((item) => item.error)?.error;
  const reflectionFailure = failure === undefined ? undefined : shownText(worker, failure);
  const result: ObserveResult = {
    status: own ? 'applied' : 'queued',
    observed: observedIn(outcomes),
    reflected: reflections.some((item) => item.reflected),
    observationCount: own?.observationCount ?? (await store.getRecord(memoryId))?.observationCount ?? 0,
    operationId: operation.operationId,
    ...(reflectionFailure === undefined ? {} : { reflectionError: reflectionFailure }),
  };
  emit({
    type: 'memory.observe.completed',
    ...base,
    status: result.status === 'applied' ? 'applied' : 'queued',
    observed: result.observed,
    reflected: result.reflected,
    observationCount: result.observationCount,
  });
  if (reflectionFailure !== undefined) emit({ type: 'memory.observe.failed', ...base, error: reflectionFailure });
  return result;
}

/** Whether an observe operation among `outcomes` added observations. */
function observedIn(outcomes: ReadonlyMap<string, OperationOutcome>): boolean {
  return [...outcomes.values()].some((item) => item.operationType === 'observe' && item.observationsAdded > 0);
}

/**
 * Whether the caller's signal stopped the call: an operation it reached was put back in the
 * queue, or the signal ended its wait for the scope before its own operation ran.
 */
function wasCancelled(
  outcomes: ReadonlyMap<string, OperationOutcome>,
  own: OperationOutcome | undefined,
  signal: AbortSignal,
): boolean {
  return [...outcomes.values()].some((item) => item.status === 'cancelled') || (own === undefined && signal.aborted);
}

/**
 * What the service's events and result say of `error`: its message, or only its code where
 * server failures are hidden. Not reported here: the caller gets the error itself, or the
 * worker reported it when it recorded the failure.
 */
function shownText(worker: OperationWorkerContext, error: unknown): string {
  return (
    hiddenFailureText(error, worker.hideServerFailures) ?? (error instanceof Error ? error.message : String(error))
  );
}
