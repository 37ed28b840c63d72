/**
 * Observational memory: an observer model turns new transcript into scored observations;
 * a reflector compresses them; a budgeted snippet is injected before every LLM turn.
 * @module
 */
import { HarnessMemoryError } from '../core/errors.js';
import { IGNORE_FAULTS } from '../core/fault.js';
import { needsStripping } from '../core/sanitize-text.js';
import { requireEstimator, requireFunction, requireObject, requireOptions } from '../core/require-option.js';
import { generateId as defaultGenerateId } from '../core/ids.js';
import { parseExportFormat, renderExport } from '../core/memory-export.js';
import { DEFAULT_OBSERVATION_CONFIG, DEFAULT_TOOL_IMPORTANCE_CAP, MAX_MODEL_ID_LENGTH } from '../core/observation.js';
import { memoryIdOf, resolveScope } from '../core/scope.js';
import type { IdGenerator } from '../core/ids.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import type { MemoryStore } from '../storage/store.js';
import { RUNE_TOKEN_ESTIMATOR } from '../core/token-estimator.js';
import { prepareTranscript } from '../core/transcript.js';
import type { PreparedMessage } from '../core/transcript.js';
import { StoredMessageKeys } from './stored-message-keys.js';
import { createModelObserver, createModelReflector } from './model-observer.js';
import type {
  ObservationalMemory,
  ObservationalMemoryEvent,
  ObservationalMemoryOptions,
  ObserveResult,
} from './observational-memory-api.js';
import { createOperationScheduler } from './operation-scheduler.js';
import type { OperationScheduler } from './operation-scheduler.js';
import { createMemoryInspector } from './memory-inspector.js';
import type { MemoryInspector } from './memory-inspector.js';
import { createScopeReader } from './scope-reader.js';
import { observeScope } from './observe-scope.js';
import type { ObserveDependencies } from './observe-scope.js';
import type { OperationWorkerContext, WorkerEvent } from './operation-worker.js';
import type { ObservationCache } from './observation-cache.js';
import { RunningCalls } from './running-calls.js';
import { KeyedLock } from './scope-lock.js';
import {
  positive,
  resolveMode,
  timerMs,
  unitInterval,
  validateOverrides,
  validateThresholds,
} from './memory-settings.js';
import { importPrepared, prepareImport } from './import-observations.js';
import { importExport } from './import-export.js';
import { observeCancelled, reflectCancelled } from './observe-cancelled.js';
import { createReflectionBackoff } from './reflection-backoff.js';

/** How long a forget waits for the scope's running work once it has aborted its model calls. */
export const FORGET_LOCK_WAIT_MS = 5_000;
const FORGET_WAIT_ENDED = Symbol('forget wait ended');

/** The store methods every observational-memory call relies on. */
const MEMORY_STORE_METHODS = [
  'getRecord',
  'appendMessages',
  'enqueueOperation',
  'claimOperation',
  'completeObservation',
  'failOperation',
  'markOperationDead',
];

export type {
  ObservationalMemoryOptions,
  ObservationalMemoryEvent,
  ObserveRequest,
  ObserveResult,
  ExportResult,
  ExportImportResult,
  MemoryInspection,
  ObservationalMemory,
  ListedScope,
  MemoryProgress,
  ObservationView,
  Page,
  PageRequest,
  ScopeListRequest,
  InspectOptions,
} from './observational-memory-api.js';

/**
 * Creates the observational memory service.
 * @example
 * ```ts
 * import { createInMemoryStore, createObservationalMemory } from 'harness-memory';
 * import { createOpenAICompatibleModel } from 'harness-memory/llm';
 *
 * const model = createOpenAICompatibleModel({ baseURL: 'http://127.0.0.1:11434/v1', modelId: 'llama3.2' });
 * const memory = createObservationalMemory({ store: createInMemoryStore(), model, defaultEnabled: true });
 * const messages = [{ id: 'm1', role: 'user' as const, content: 'I prefer tabs.' }];
 * await memory.observe({ scope: { conversationId: 'c1' }, messages });
 * const snippet = await memory.snippet({ conversationId: 'c1' });
 * ```
 */
export function createObservationalMemory(options: ObservationalMemoryOptions): ObservationalMemory {
  const parts = assemble(options);
  const { mode, store, estimator, generateId, listeners, locks, reader, scheduler, inspector, emit, worker } = parts;
  const { effective, currentStatus } = reader;
  const { processScope, enqueue, enqueueAndRun } = scheduler;

  const requireMode = (action: string): void => requireModeOn(mode, action);

  // Message keys this process stored per scope generation: observe leaves them out before redacting and writing.
  const storedKeys = new StoredMessageKeys();
  const noteStored = noteStoredIn(storedKeys);
  const observeDependencies: ObserveDependencies = {
    store,
    effective,
    generateId,
    worker,
    processScope,
    enqueue,
    emit,
    noteStored,
  };

  const service: ObservationalMemory = {
    mode,

    async observe(request) {
      checkModelId(request.modelId);
      checkSignal(request.signal);
      if (request.signal?.aborted) throw observeCancelled(request.signal.reason);
      const scope = resolveScope(request.scope, request.runId);
      const known =
        request.generation === undefined ? undefined : storedKeys.known(memoryIdOf(scope), request.generation);
      const prepared = prepareTranscript(request.messages, estimator, {
        redact: options.redactSecrets ?? true,
        skip: known,
      });
      const skipped = (reason: NonNullable<ObserveResult['reason']>, count = 0): ObserveResult => ({
        status: 'skipped',
        reason,
        observed: false,
        reflected: false,
        observationCount: count,
      });
      if (mode === 'off') return skipped('mode_off');
      try {
        return await observeScope(observeDependencies, scope, prepared, request, skipped);
      } catch (error) {
        if (HarnessMemoryError.isInstance(error) && error.code === 'SCOPE_FORGOTTEN') return skipped('forgotten');
        // A forget that went ahead beside this call (its observer ignored the abort) took the
        // operation with the scope: not a failure of memory.
        if (
          HarnessMemoryError.isInstance(error) &&
          error.code === 'OPERATION_LEASE_LOST' &&
          (await store.getRecord(memoryIdOf(scope))) === undefined
        )
          return skipped('forgotten');
        throw error;
      }
    },

    async reflectNow(scopeInput, options = {}) {
      requireMode('reflect');
      const { signal, ...meta } = options;
      checkSignal(signal);
      if (signal?.aborted) throw reflectCancelled(signal.reason);
      const scope = resolveScope(scopeInput, meta.runId);
      const record = await store.getRecord(memoryIdOf(scope));
      if (!record || !effective(record).enabled || record.observationCount === 0) {
        return { reflected: false, queued: false, status: await currentStatus(scope, record) };
      }
      const { operation, own, outcomes } = await enqueueAndRun(scope, 'reflect_now', {}, meta, signal);
      // Stopped by the signal: what it reached went back to the queue, this reflection too.
      const cancelled = [...outcomes.values()].some((item) => item.status === 'cancelled');
      if (signal !== undefined && (cancelled || (own === undefined && signal.aborted)))
        throw reflectCancelled(signal.reason, operation.operationId);
      if (own?.error) throw own.error;
      if (own) return { reflected: own.reflected, queued: false, status: await currentStatus(scope) };
      // Not run by this call: 16 callers already ran or waited for the scope (it waits in the
      // scope's queue), or another caller's drain ran it first. The log tells which.
      const [found] = await store.listOperationPage(operation.memoryId, {
        beforeSequence: operation.scopeSequence + 1,
        limit: 1,
      });
      // Settled and deleted since by operation retention: an older one is not this call's.
      const logged = found?.operationId === operation.operationId ? found : undefined;
      const queued = logged?.status === 'queued' || logged?.status === 'processing';
      // An applied reflect_now that changed nothing carries a note ("nothing to reflect").
      const reflected = logged?.status === 'applied' && logged.errorText === '';
      return { reflected, queued, status: await currentStatus(scope) };
    },

    async snippet(scopeInput) {
      if (mode === 'off') return '';
      return reader.currentSnippet(memoryIdOf(resolveScope(scopeInput)));
    },

    status: async (scopeInput) => currentStatus(resolveScope(scopeInput)),

    isEnabled: async (scopeInput) => reader.isEnabled(memoryIdOf(resolveScope(scopeInput))),

    async setEnabled(scopeInput, enabled, config, meta = {}) {
      requireMode(enabled ? 'enable' : 'disable');
      const scope = resolveScope(scopeInput, meta.runId);
      const overrides = config === undefined ? undefined : validateOverrides(config);
      const record = await store.updateSettings({
        scope,
        memoryId: memoryIdOf(scope),
        enabled,
        ...(overrides ? { config: overrides } : {}),
        runId: meta.runId ?? 'unknown',
        toolCallId: meta.toolCallId ?? 'system',
        operationId: generateId('op'),
      });
      return currentStatus(scope, record);
    },

    async importObservations(scopeInput, observations, meta = {}) {
      requireMode('import');
      const scope = resolveScope(scopeInput, meta.runId);
      // The cap was checked when the service was made.
      const cap = options.toolImportanceCap ?? DEFAULT_TOOL_IMPORTANCE_CAP;
      const prepared = prepareImport(observations, estimator, options.redactSecrets ?? true, cap);
      const result = await importPrepared({ store, locks, generateId }, scope, prepared, meta);
      // Held as applied, like an observer's: the next snippet reads none of them back.
      reader.observationCache.add(memoryIdOf(scope), result.record, result.observations);
      return { observations: result.observations, status: await currentStatus(scope, result.record) };
    },

    async importExport(scopeInput, exported, meta = {}) {
      requireMode('import');
      const scope = resolveScope(scopeInput, meta.runId);
      const result = await importExport(
        {
          store,
          locks,
          generateId,
          estimator,
          now: options.now ?? (() => new Date()),
          redact: options.redactSecrets ?? true,
          // The cap was checked when the service was made.
          toolImportanceCap: options.toolImportanceCap ?? DEFAULT_TOOL_IMPORTANCE_CAP,
        },
        scope,
        exported,
        meta,
      );
      reader.observationCache.add(memoryIdOf(scope), result.record, result.observations);
      const status = await currentStatus(scope, result.record);
      return { observations: result.observations, status, droppedLinks: result.droppedLinks };
    },

    async export(scopeInput, format) {
      requireMode('export');
      const parsed = parseExportFormat(format);
      const inspection = await service.inspect(scopeInput, { operations: 'open' });
      const content = renderExport(parsed, inspection);
      return { format: parsed, content, bytes: Buffer.byteLength(content, 'utf8'), status: inspection.status };
    },

    inspect: async (scopeInput, options) => reader.inspect(resolveScope(scopeInput), options),

    async forget(scopeInput) {
      const memoryId = memoryIdOf(resolveScope(scopeInput));
      // A model call of the scope would only hold the lock while its answer is bound to be thrown away.
      worker.calls?.abort(memoryId, new Error('the scope is being forgotten'));
      await forgetUnderLock(locks, memoryId, () => store.forget(memoryId));
      reader.forget(memoryId);
      storedKeys.delete(memoryId);
    },

    ...inspectorMethods(inspector, requireMode),

    generation: async (scopeInput) => store.scopeGeneration(memoryIdOf(resolveScope(scopeInput))),

    ...retentionMethods(store),

    ...schedulerMethods(scheduler, listeners),
  };
  return service;
}

/** The service's parts: its options checked, and the reader, worker, scheduler and inspector wired together. */
function assemble(options: ObservationalMemoryOptions) {
  validateMemoryOptions(options);
  const mode = resolveMode(options.mode);
  const defaults = validateThresholds(
    { ...DEFAULT_OBSERVATION_CONFIG, ...options.defaults },
    'createObservationalMemory.defaults',
  );
  const store = options.store;
  const estimator = options.estimator ?? RUNE_TOKEN_ESTIMATOR;
  const generateId = options.generateId ?? defaultGenerateId;
  const listeners = new Set<(event: ObservationalMemoryEvent) => void>();
  if (options.onEvent) listeners.add(options.onEvent);
  const locks = new KeyedLock();
  const defaultEnabled = options.defaultEnabled ?? false;
  const reader = createScopeReader({ store, mode, defaults, defaultEnabled, estimator });
  const emit = (event: ObservationalMemoryEvent): void => notify(listeners, event);
  const worker = workerContextOf(options, {
    store,
    estimator,
    generateId,
    now: options.now ?? (() => new Date()),
    effective: reader.effective,
    emit,
    observationCache: reader.observationCache,
    linksOf: reader.linksOf,
    calls: new RunningCalls(),
  });
  const scheduler = createOperationScheduler({
    worker,
    locks,
    onWorkerFailed: (error) => emit({ type: 'memory.worker.failed', error: error.message }),
  });
  const inspector = createMemoryInspector({
    store,
    reader,
    estimator,
    defaultEnabled,
    mode,
    redact: options.redactSecrets ?? true,
    locks,
    generateId,
    currentStatus: reader.currentStatus,
  });
  return { mode, store, estimator, generateId, listeners, locks, reader, worker, scheduler, inspector, emit };
}

/** The service's listing and correction methods, each resolving its scope first. */
function inspectorMethods(
  inspector: MemoryInspector,
  requireMode: (action: string) => void,
): Pick<
  ObservationalMemory,
  | 'listScopes'
  | 'observationPage'
  | 'searchObservations'
  | 'operationPage'
  | 'correctObservation'
  | 'deleteObservation'
  | 'progress'
> {
  return {
    listScopes: (tenantId, request) => inspector.listScopes(tenantId, request),
    observationPage: async (scopeInput, request) => inspector.observationPage(resolveScope(scopeInput), request),
    searchObservations: async (scopeInput, request) => inspector.searchObservations(resolveScope(scopeInput), request),
    operationPage: async (scopeInput, request) => inspector.operationPage(resolveScope(scopeInput), request),
    async correctObservation(scopeInput, seq, change, meta) {
      requireMode('correct');
      return inspector.correctObservation(resolveScope(scopeInput), seq, change, meta);
    },
    async deleteObservation(scopeInput, seq, meta) {
      requireMode('correct');
      return inspector.deleteObservation(resolveScope(scopeInput), seq, meta);
    },
    progress: async (scopeInput) => inspector.progress(resolveScope(scopeInput)),
  };
}

/** Operation retention, when the store has it. */
function retentionMethods(store: MemoryStore): Pick<ObservationalMemory, 'deleteSettledOperations'> {
  const remove = store.deleteSettledOperations?.bind(store);
  return remove ? { deleteSettledOperations: async (options) => remove(options) } : {};
}

/** The service's methods over its operation scheduler and its event listeners. */
function schedulerMethods(
  scheduler: OperationScheduler,
  listeners: Set<(event: ObservationalMemoryEvent) => void>,
): Pick<ObservationalMemory, 'retryOperation' | 'drain' | 'subscribe' | 'startWorker'> {
  return {
    retryOperation: async (scopeInput, operationId) =>
      scheduler.retryDead(memoryIdOf(resolveScope(scopeInput)), operationId),
    async drain(scopeInput, drainOptions = {}) {
      const memoryId = scopeInput === undefined ? undefined : memoryIdOf(resolveScope(scopeInput));
      return scheduler.drain(memoryId, drainOptions.timeoutMs ?? 60_000);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    startWorker: (workerOptions = {}) => scheduler.startWorker(workerOptions),
  };
}

/** What {@link workerContextOf} takes from the service besides its options. */
interface WorkerDependencies {
  readonly store: MemoryStore;
  readonly estimator: TokenEstimator;
  readonly generateId: IdGenerator;
  readonly now: () => Date;
  readonly effective: OperationWorkerContext['effective'];
  readonly emit: (event: ObservationalMemoryEvent) => void;
  readonly observationCache: ObservationCache;
  readonly linksOf: OperationWorkerContext['linksOf'];
  readonly calls: RunningCalls;
}

/** The operation worker's context: the service's options checked, its events turned into the service's. */
function workerContextOf(
  options: ObservationalMemoryOptions,
  dependencies: WorkerDependencies,
): OperationWorkerContext {
  const { store, estimator, generateId, now, effective, emit, observationCache, linksOf, calls } = dependencies;
  const maxAttempts = positive(
    options.maxOperationAttempts ?? options.maxAttempts ?? 5,
    options.maxOperationAttempts === undefined && options.maxAttempts !== undefined
      ? 'maxAttempts'
      : 'maxOperationAttempts',
  );
  const onWorkerEvent = (event: WorkerEvent): void => {
    const base = {
      scope: event.operation.scope,
      runId: event.operation.runId,
      operationId: event.operation.operationId,
    };
    if (event.type === 'reflection-completed')
      emit({ type: 'memory.reflection.completed', ...base, trigger: event.trigger });
    else if (event.type === 'operation-dead') {
      emit({
        type: 'memory.operation.dead',
        ...base,
        operationType: event.operation.operationType,
        error: event.errorText,
        attempts: Math.min(event.operation.attempt, maxAttempts),
      });
    } else if (event.type === 'message-skipped') {
      emit({
        type: 'memory.message.skipped',
        ...base,
        messageSeq: event.messageSeq,
        messageKey: event.messageKey,
        error: event.errorText,
      });
    } else
      emit({
        type: 'memory.operation.failed',
        ...base,
        operationType: event.operation.operationType,
        error: event.errorText,
        willRetry: event.willRetry,
      });
  };
  return {
    store,
    observer: options.observer ?? (options.model ? createModelObserver(options.model) : undefined),
    reflector: options.reflector ?? (options.model ? createModelReflector(options.model) : undefined),
    estimator,
    generateId,
    workerId: generateId('worker'),
    leaseMs: timerMs(options.leaseMs ?? 300_000, 'leaseMs', 1),
    maxAttempts,
    retryDelayMs: timerMs(options.retryDelayMs ?? 1000, 'retryDelayMs', 0),
    maxBatchTokens: positive(options.maxBatchTokens ?? 16_000, 'maxBatchTokens'),
    toolImportanceCap: unitInterval(options.toolImportanceCap ?? DEFAULT_TOOL_IMPORTANCE_CAP, 'toolImportanceCap'),
    followRunModel: options.followRunModel ?? false,
    redact: options.redactSecrets ?? true,
    effective,
    onEvent: onWorkerEvent,
    hideServerFailures: options.hideServerFailures ?? false,
    reportFault: options.onFault ?? IGNORE_FAULTS,
    observationsOf: (memoryId, record) => observationCache.get(memoryId, record),
    observationsApplied: (memoryId, record, observations) => observationCache.add(memoryId, record, observations),
    linksOf,
    now,
    calls,
    reflectionBackoff: createReflectionBackoff(),
    faultPoint: options.faultPoint,
  };
}

/** Refuses a `signal` that is not an `AbortSignal` (or left out): one that could never abort would be ignored silently. */
/**
 * `erase` under the scope's lock, waited for at most {@link FORGET_LOCK_WAIT_MS}: a model call
 * that ignores the abort a forget sends (a reflector of a library user's own) would otherwise
 * hold the erasure until it answered. Past the wait the erase runs beside it, as a forget from
 * another process does: its apply then finds the scope gone and revives nothing.
 */
async function forgetUnderLock(locks: KeyedLock, memoryId: string, erase: () => Promise<void>): Promise<void> {
  const waited = new AbortController();
  const timer = setTimeout(() => waited.abort(FORGET_WAIT_ENDED), FORGET_LOCK_WAIT_MS);
  try {
    await locks.run(memoryId, erase, waited.signal);
  } catch (error) {
    if (error !== FORGET_WAIT_ENDED) throw error;
    await erase();
  } finally {
    clearTimeout(timer);
  }
}

function checkSignal(signal: unknown): void {
  if (signal === undefined) return;
  const candidate = signal as Partial<AbortSignal> | null;
  if (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.aborted === 'boolean' &&
    typeof candidate.addEventListener === 'function'
  )
    return;
  throw new HarnessMemoryError({
    code: 'OBSERVE_INPUT_INVALID',
    component: 'observe',
    message: 'signal must be an AbortSignal (from an AbortController, say), or left out.',
    data: { field: 'signal' },
  });
}

/** Refuses a `modelId` that is not a model name an observe may ask for (or left out). */
function checkModelId(modelId: unknown): void {
  if (modelId === undefined) return;
  if (
    typeof modelId === 'string' &&
    modelId.trim() !== '' &&
    modelId.length <= MAX_MODEL_ID_LENGTH &&
    !needsStripping(modelId) &&
    !/[\n\t]/.test(modelId)
  )
    return;
  throw new HarnessMemoryError({
    code: 'OBSERVE_INPUT_INVALID',
    component: 'observe',
    message: `modelId must be a model name of 1 to ${MAX_MODEL_ID_LENGTH} characters, without control or invisible characters, or left out.`,
    data: { field: 'modelId' },
  });
}

function validateMemoryOptions(options: ObservationalMemoryOptions): void {
  const factory = 'createObservationalMemory';
  requireOptions(factory, options, 'Pass { store, model }.');
  requireObject(
    factory,
    'store',
    options.store,
    MEMORY_STORE_METHODS,
    'Pass a MemoryStore, such as createInMemoryStore() or createSqliteStore({ path }).',
  );
  requireObject(
    factory,
    'model',
    options.model,
    ['doGenerate'],
    'Pass a LanguageModel, such as createOpenAICompatibleModel({ baseURL, modelId }).',
    true,
  );
  requireObject(
    factory,
    'observer',
    options.observer,
    ['observe'],
    'Pass an Observer, such as createModelObserver(model), or leave it out.',
    true,
  );
  requireObject(
    factory,
    'reflector',
    options.reflector,
    ['reflect'],
    'Pass a Reflector, such as createModelReflector(model), or leave it out.',
    true,
  );
  requireEstimator(factory, options.estimator);
  for (const option of ['now', 'generateId', 'onEvent', 'faultPoint'] as const)
    requireFunction(factory, option, options[option]);
}

/** Tells every listener; a failing subscriber must never fail the memory work it is told about. */
function notify(
  listeners: ReadonlySet<(event: ObservationalMemoryEvent) => void>,
  event: ObservationalMemoryEvent,
): void {
  for (const listener of listeners) {
    try {
      listener(event);
    } catch {
      // Ignored on purpose: see above.
    }
  }
}

function requireModeOn(mode: 'off' | 'local_coordinator', action: string): void {
  if (mode === 'off') {
    throw new HarnessMemoryError({
      code: 'MEMORY_DISABLED',
      component: 'observational-memory',
      message: `observational memory is disabled by mode; cannot ${action}. Set [memory] mode to "auto" (and [memory] enabled, if set, to true) to use it.`,
    });
  }
}

/** Records the keys of messages stored under a caller's generation, so its later calls leave them out. */
function noteStoredIn(storedKeys: StoredMessageKeys): ObserveDependencies['noteStored'] {
  return (memoryId, generation, messages: readonly PreparedMessage[]) => {
    if (generation !== undefined)
      storedKeys.add(
        memoryId,
        generation,
        messages.map((message) => message.messageKey),
      );
  };
}
