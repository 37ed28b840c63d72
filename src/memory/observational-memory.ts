/**
 * Observational memory: an observer model turns new transcript into scored observations;
 * a reflector compresses them; a budgeted snippet is injected before every LLM turn.
 * @module
 */
import { HarnessMemoryError } from '../core/errors.js';
import { requireObject, requireOptions } from '../core/require-option.js';
import { generateId as defaultGenerateId } from '../core/ids.js';
import { parseExportFormat, renderExport } from '../core/memory-export.js';
import { statusOf } from '../core/memory-status.js';
import type { MemoryStatus } from '../core/memory-status.js';
import { DEFAULT_OBSERVATION_CONFIG, DEFAULT_TOOL_IMPORTANCE_CAP } from '../core/observation.js';
import type { MemoryRecord, Observation, ObservationConfig } from '../core/observation.js';
import { activeReflectionLinks, EMPTY_REFLECTION_LINKS } from '../core/reflection-links.js';
import type { ReflectionLinks } from '../core/reflection-links.js';
import { buildObservationSnippet } from '../core/observation-snippet.js';
import { memoryIdOf, resolveScope } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import type { IdGenerator } from '../core/ids.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import type { MemoryStore } from '../storage/store.js';
import { RUNE_TOKEN_ESTIMATOR } from '../core/token-estimator.js';
import { prepareTranscript } from '../core/transcript.js';
import type { Operation } from '../storage/store.js';
import { createModelObserver, createModelReflector } from './model-observer.js';
import type { ObservationalMemory, ObservationalMemoryEvent, ObservationalMemoryOptions, ObserveRequest, ObserveResult } from './observational-memory-api.js';
import { createOperationScheduler } from './operation-scheduler.js';
import { SnippetCache } from './snippet-cache.js';
import type { OperationOutcome, OperationWorkerContext, WorkerEvent } from './operation-worker.js';
import { ObservationCache } from './observation-cache.js';
import { KeyedLock } from './scope-lock.js';
import { positive, resolveMode, unitInterval, validateOverrides, validateThresholds } from './memory-settings.js';

/** The store methods every observational-memory call relies on. */
const MEMORY_STORE_METHODS = ['getRecord', 'appendMessages', 'enqueueOperation', 'claimOperation', 'completeObservation', 'failOperation', 'markOperationDead'];

export type {
  ObservationalMemoryOptions,
  ObservationalMemoryEvent,
  ObserveRequest,
  ObserveResult,
  ExportResult,
  MemoryInspection,
  ObservationalMemory,
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
 * await memory.observe({ scope: { conversationId: 'c1' }, messages: [{ id: 'm1', role: 'user', content: 'I prefer tabs.' }] });
 * const snippet = await memory.snippet({ conversationId: 'c1' });
 * ```
 */
export function createObservationalMemory(options: ObservationalMemoryOptions): ObservationalMemory {
  const factory = 'createObservationalMemory';
  requireOptions(factory, options, 'Pass { store, model }.');
  requireObject(factory, 'store', options.store, MEMORY_STORE_METHODS, 'Pass a MemoryStore, such as createInMemoryStore() or createSqliteStore({ path }).');
  requireObject(factory, 'model', options.model, ['doGenerate'], 'Pass a LanguageModel, such as createOpenAICompatibleModel({ baseURL, modelId }).', true);
  requireObject(factory, 'observer', options.observer, ['observe'], 'Pass an Observer, such as createModelObserver(model), or leave it out.', true);
  requireObject(factory, 'reflector', options.reflector, ['reflect'], 'Pass a Reflector, such as createModelReflector(model), or leave it out.', true);
  const mode = resolveMode(options.mode);
  const defaults = validateThresholds({ ...DEFAULT_OBSERVATION_CONFIG, ...options.defaults }, 'createObservationalMemory.defaults');
  const defaultEnabled = options.defaultEnabled ?? false;
  const store = options.store;
  const estimator = options.estimator ?? RUNE_TOKEN_ESTIMATOR;
  const now = options.now ?? (() => new Date());
  const generateId = options.generateId ?? defaultGenerateId;
  const listeners = new Set<(event: ObservationalMemoryEvent) => void>();
  if (options.onEvent) listeners.add(options.onEvent);
  const locks = new KeyedLock();
  const snippetCache = new SnippetCache();
  const observationCache = new ObservationCache(store);
  // The set only grows (until forget makes a new record), so its counts identify it.
  const linksCache = new SnippetCache<ReflectionLinks, string>();
  const linksOf = async (memoryId: string, record: MemoryRecord): Promise<ReflectionLinks> => {
    if (record.supersessionCount === 0 && record.contradictionCount === 0) return EMPTY_REFLECTION_LINKS;
    const version = `${record.createdAt}|${record.supersessionCount}|${record.contradictionCount}`;
    const cached = linksCache.get(memoryId, version);
    if (cached) return cached;
    const links = await store.listReflectionLinks(memoryId);
    linksCache.set(memoryId, version, links);
    return links;
  };

  const effective = (record: Pick<MemoryRecord, 'enabled' | 'config'> | undefined): { enabled: boolean; config: ObservationConfig } => ({
    enabled: record?.enabled ?? defaultEnabled,
    config: { ...defaults, ...record?.config },
  });
  const emit = (event: ObservationalMemoryEvent): void => {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch {
        // A failing subscriber must never fail the memory work it is told about.
      }
    }
  };
  const worker = workerContextOf(options, { store, estimator, generateId, now, effective, emit, observationCache, linksOf });

  const scheduler = createOperationScheduler({ worker, locks, onWorkerFailed: (error) => emit({ type: 'memory.worker.failed', error: error.message }) });
  const processScope = scheduler.processScope;

  type OperationMeta = { runId?: string | undefined; toolCallId?: string | undefined };
  const enqueue = (scope: Scope, operationType: 'observe' | 'reflect_now', payload: Record<string, unknown>, meta: OperationMeta): Promise<Operation> =>
    store.enqueueOperation({
      operationId: generateId('op'),
      scope,
      memoryId: memoryIdOf(scope),
      operationType,
      payload,
      runId: meta.runId ?? 'unknown',
      toolCallId: meta.toolCallId ?? 'system',
    });

  const enqueueAndRun = async (scope: Scope, operationType: 'observe' | 'reflect_now', payload: Record<string, unknown>, meta: OperationMeta) => {
    const operation = await enqueue(scope, operationType, payload, meta);
    const outcomes = await processScope(memoryIdOf(scope));
    return { operation, own: outcomes.get(operation.operationId), outcomes };
  };

  const requireMode = (action: string): void => {
    if (mode === 'off') {
      throw new HarnessMemoryError({ code: 'MEMORY_DISABLED', component: 'observational-memory', message: `observational memory is disabled by mode; cannot ${action}. Set memory mode to "auto" to use it.` });
    }
  };

  const currentStatus = async (scope: Scope, record?: MemoryRecord): Promise<MemoryStatus> =>
    statusFrom(scope, record ?? (await store.getRecord(memoryIdOf(scope))));

  /** The status of a scope whose record (or its absence) was just read. */
  const statusFrom = async (scope: Scope, found: MemoryRecord | undefined): Promise<MemoryStatus> => {
    const memoryId = memoryIdOf(scope);
    const { enabled, config } = effective(found);
    const [pendingOperations, deadOperations, links] = found
      ? await Promise.all([store.countPendingOperations(memoryId), store.countDeadOperations(memoryId), linksOf(memoryId, found)])
      : [0, 0, EMPTY_REFLECTION_LINKS];
    return statusOf({ mode, memoryId, scope, record: found, enabled: mode !== 'off' && enabled, config, pendingOperations, deadOperations, activeLinks: activeReflectionLinks(links) });
  };

  /** Stores the messages and, at the threshold, runs the observe operation; reports it on the scope's events. */
  const observeScope = async (
    scope: Scope,
    prepared: ReturnType<typeof prepareTranscript>,
    request: ObserveRequest,
    skipped: (reason: NonNullable<ObserveResult['reason']>, count?: number) => ObserveResult,
  ): Promise<ObserveResult> => {
    const memoryId = memoryIdOf(scope);
    const runId = request.runId ?? 'unknown';
    const generation = request.generation === undefined ? {} : { generation: request.generation };
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
        operation: { operationId: generateId('op'), payload: { messages: prepared.length }, runId, toolCallId: request.toolCallId ?? 'system' },
        leaseOwner: worker.workerId,
        leaseMs: worker.leaseMs,
      });
      if (result.disabled) return skipped('disabled', result.record?.observationCount ?? 0);
      if (!result.operation) return skipped('below_threshold', result.record.observationCount);
      operation = result.operation;
      run = () => processScope(memoryId, result.claimed, result.operation?.operationId, result.prefetched);
    } else {
      const record = await store.getRecord(memoryId);
      const { enabled, config } = effective(record);
      if (!enabled) return skipped('disabled', record?.observationCount ?? 0);
      if (prepared.length === 0) return skipped('no_messages', record?.observationCount ?? 0);
      const appended = await store.appendMessages({ scope, memoryId, messages: prepared, ...generation });
      if (appended.unobservedTokens < config.observeMinTokens) return skipped('below_threshold', appended.record.observationCount);
      operation = await enqueue(scope, 'observe', { messages: appended.inserted, unobserved_tokens: appended.unobservedTokens }, request);
      run = () => processScope(memoryId);
    }
    const base = { scope, runId, operationId: operation.operationId };
    emit({ type: 'memory.observe.started', ...base });
    let outcomes: Map<string, OperationOutcome>;
    try {
      outcomes = await run();
    } catch (error) {
      emit({ type: 'memory.observe.failed', ...base, error: (error as Error).message });
      throw error;
    }
    const own = outcomes.get(operation.operationId);
    if (own?.error && own.status !== 'applied') {
      emit({ type: 'memory.observe.failed', ...base, error: own.error.message });
      throw own.error;
    }
    const reflections = [...outcomes.values()].filter((item) => item.operationType === 'reflect');
    const reflectionFailure = reflections.find((item) => item.error)?.error;
    const result: ObserveResult = {
      status: own ? 'applied' : 'queued',
      observed: [...outcomes.values()].some((item) => item.operationType === 'observe' && item.observationsAdded > 0),
      reflected: reflections.some((item) => item.reflected),
      observationCount: own?.observationCount ?? (await store.getRecord(memoryId))?.observationCount ?? 0,
      operationId: operation.operationId,
      ...(reflectionFailure ? { reflectionError: reflectionFailure.message } : {}),
    };
    emit({ type: 'memory.observe.completed', ...base, status: result.status === 'applied' ? 'applied' : 'queued', observed: result.observed, reflected: result.reflected, observationCount: result.observationCount });
    if (reflectionFailure) emit({ type: 'memory.observe.failed', ...base, error: reflectionFailure.message });
    return result;
  };

  /** The scope's snippet from a record already read (and, when at hand, its observations and links). */
  const snippetOf = async (memoryId: string, record: MemoryRecord | undefined, observations?: readonly Observation[], links?: ReflectionLinks): Promise<string> => {
    if (!record) return '';
    const { enabled, config } = effective(record);
    if (!enabled) return '';
    const cached = snippetCache.get(memoryId, record.stateVersion);
    if (cached !== undefined) return cached;
    const [listed, linked] = await Promise.all([observations ?? observationCache.get(memoryId, record), links ?? linksOf(memoryId, record)]);
    const text = buildObservationSnippet({ observations: listed, reflection: record.reflection, links: activeReflectionLinks(linked), maxTokens: config.snippetMaxTokens, estimator });
    snippetCache.set(memoryId, record.stateVersion, text);
    return text;
  };

  const service: ObservationalMemory = {
    mode,

    async observe(request) {
      const scope = resolveScope(request.scope, request.runId);
      const prepared = prepareTranscript(request.messages, estimator, { redact: options.redactSecrets ?? true });
      const skipped = (reason: NonNullable<ObserveResult['reason']>, count = 0): ObserveResult => ({ status: 'skipped', reason, observed: false, reflected: false, observationCount: count });
      if (mode === 'off') return skipped('mode_off');
      try {
        return await observeScope(scope, prepared, request, skipped);
      } catch (error) {
        if (HarnessMemoryError.isInstance(error) && error.code === 'SCOPE_FORGOTTEN') return skipped('forgotten');
        throw error;
      }
    },

    async reflectNow(scopeInput, meta = {}) {
      requireMode('reflect');
      const scope = resolveScope(scopeInput, meta.runId);
      const record = await store.getRecord(memoryIdOf(scope));
      if (!record || !effective(record).enabled || record.observationCount === 0) {
        return { reflected: false, status: await currentStatus(scope, record) };
      }
      const { own } = await enqueueAndRun(scope, 'reflect_now', {}, meta);
      if (own?.error) throw own.error;
      return { reflected: own?.reflected ?? false, status: await currentStatus(scope) };
    },

    async snippet(scopeInput) {
      if (mode === 'off') return '';
      const memoryId = memoryIdOf(resolveScope(scopeInput));
      return snippetOf(memoryId, await store.getRecord(memoryId));
    },

    async status(scopeInput) {
      return currentStatus(resolveScope(scopeInput));
    },

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

    async export(scopeInput, format) {
      requireMode('export');
      const parsed = parseExportFormat(format);
      const inspection = await service.inspect(scopeInput);
      const content = renderExport(parsed, inspection);
      return { format: parsed, content, bytes: Buffer.byteLength(content, 'utf8'), status: inspection.status };
    },

    async inspect(scopeInput) {
      const scope = resolveScope(scopeInput);
      const memoryId = memoryIdOf(scope);
      const record = await store.getRecord(memoryId);
      if (!record) {
        return { status: await statusFrom(scope, undefined), observations: [], reflection: null, links: EMPTY_REFLECTION_LINKS, operations: [], snippet: '' };
      }
      const [status, observations, links, operations] = await Promise.all([
        statusFrom(scope, record),
        store.listObservations(memoryId),
        linksOf(memoryId, record),
        store.listOperations(memoryId),
      ]);
      const snippet = mode === 'off' ? '' : await snippetOf(memoryId, record, observations, links);
      return { status, observations, reflection: record.reflection ?? null, links: activeReflectionLinks(links), operations, snippet };
    },

    async forget(scopeInput) {
      const memoryId = memoryIdOf(resolveScope(scopeInput));
      await locks.run(memoryId, () => store.forget(memoryId));
      snippetCache.delete(memoryId);
      observationCache.delete(memoryId);
      linksCache.delete(memoryId);
    },

    async generation(scopeInput) {
      return store.scopeGeneration(memoryIdOf(resolveScope(scopeInput)));
    },

    async retryOperation(scopeInput, operationId) {
      const memoryId = memoryIdOf(resolveScope(scopeInput));
      if (typeof operationId !== 'string' || operationId.trim() === '' || operationId.length > 200) {
        throw new HarnessMemoryError({ code: 'OPERATION_NOT_FOUND', component: 'observational-memory', message: 'an operation id is required (at most 200 characters).', data: { operationId: String(operationId).slice(0, 200) } });
      }
      const retried = await store.retryDeadOperation({ memoryId, operationId });
      if (retried) return retried;
      const found = (await store.listOperations(memoryId)).find((operation) => operation.operationId === operationId);
      if (!found) {
        throw new HarnessMemoryError({ code: 'OPERATION_NOT_FOUND', component: 'observational-memory', message: `the scope has no operation ${operationId}; list them with inspect().`, data: { operationId } });
      }
      throw new HarnessMemoryError({
        code: 'OPERATION_NOT_DEAD',
        component: 'observational-memory',
        message: `operation ${operationId} is ${found.status}, not dead; only a dead operation can be retried by hand.`,
        data: { operationId, status: found.status },
      });
    },

    async drain(scopeInput, drainOptions = {}) {
      const memoryId = scopeInput === undefined ? undefined : memoryIdOf(resolveScope(scopeInput));
      return scheduler.drain(memoryId, drainOptions.timeoutMs ?? 60_000);
    },

    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    startWorker(workerOptions = {}) {
      return scheduler.startWorker(workerOptions);
    },
  };
  return service;
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
}

/** The operation worker's context: the service's options checked, its events turned into the service's. */
function workerContextOf(options: ObservationalMemoryOptions, dependencies: WorkerDependencies): OperationWorkerContext {
  const { store, estimator, generateId, now, effective, emit, observationCache, linksOf } = dependencies;
  const maxAttempts = positive(options.maxOperationAttempts ?? options.maxAttempts ?? 5, options.maxOperationAttempts === undefined && options.maxAttempts !== undefined ? 'maxAttempts' : 'maxOperationAttempts');
  const onWorkerEvent = (event: WorkerEvent): void => {
    const base = { scope: event.operation.scope, runId: event.operation.runId, operationId: event.operation.operationId };
    if (event.type === 'reflection-completed') emit({ type: 'memory.reflection.completed', ...base, trigger: event.trigger });
    else if (event.type === 'operation-dead') {
      emit({ type: 'memory.operation.dead', ...base, operationType: event.operation.operationType, error: event.errorText, attempts: Math.min(event.operation.attempt, maxAttempts) });
    } else emit({ type: 'memory.operation.failed', ...base, operationType: event.operation.operationType, error: event.error.message, willRetry: event.willRetry });
  };
  return {
    store,
    observer: options.observer ?? (options.model ? createModelObserver(options.model) : undefined),
    reflector: options.reflector ?? (options.model ? createModelReflector(options.model) : undefined),
    estimator,
    generateId,
    workerId: generateId('worker'),
    leaseMs: positive(options.leaseMs ?? 300_000, 'leaseMs'),
    maxAttempts,
    retryDelayMs: options.retryDelayMs ?? 1000,
    maxBatchTokens: positive(options.maxBatchTokens ?? 16_000, 'maxBatchTokens'),
    toolImportanceCap: unitInterval(options.toolImportanceCap ?? DEFAULT_TOOL_IMPORTANCE_CAP, 'toolImportanceCap'),
    effective,
    onEvent: onWorkerEvent,
    observationsOf: (memoryId, record) => observationCache.get(memoryId, record),
    observationsApplied: (memoryId, record, observations) => observationCache.add(memoryId, record, observations),
    linksOf,
    now,
    faultPoint: options.faultPoint,
  };
}
