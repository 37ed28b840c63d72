/**
 * Observational memory: an observer model turns new transcript into scored observations;
 * a reflector compresses them; a budgeted snippet is injected before every LLM turn.
 * @module
 */
import { HarnessMemoryError } from '../core/errors.js';
import { requireObject, requireOptions } from '../core/require-option.js';
import { generateId as defaultGenerateId } from '../core/ids.js';
import type { IdGenerator } from '../core/ids.js';
import { parseExportFormat, renderExport } from '../core/memory-export.js';
import type { ExportFormat } from '../core/memory-export.js';
import { statusOf } from '../core/memory-status.js';
import type { MemoryMode, MemoryStatus } from '../core/memory-status.js';
import { DEFAULT_OBSERVATION_CONFIG, DEFAULT_TOOL_IMPORTANCE_CAP } from '../core/observation.js';
import type { MemoryRecord, Observation, ObservationConfig, StoredReflection } from '../core/observation.js';
import { activeReflectionLinks, EMPTY_REFLECTION_LINKS } from '../core/reflection-links.js';
import type { ReflectionLinks } from '../core/reflection-links.js';
import { buildObservationSnippet } from '../core/observation-snippet.js';
import { memoryIdOf, resolveScope } from '../core/scope.js';
import type { Scope, ScopeInput } from '../core/scope.js';
import { RUNE_TOKEN_ESTIMATOR } from '../core/token-estimator.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import { prepareTranscript } from '../core/transcript.js';
import type { PreparedMessage } from '../core/transcript.js';
import type { TranscriptMessage } from '../core/transcript.js';
import type { LanguageModel } from '../llm/language-model.js';
import type { MemoryStore, Operation, PrefetchedObserve } from '../storage/store.js';
import { createModelObserver, createModelReflector } from './model-observer.js';
import type { Observer, Reflector } from './model-observer.js';
import { runOperation } from './operation-worker.js';
import { SnippetCache } from './snippet-cache.js';
import type { OperationOutcome, OperationWorkerContext, WorkerEvent } from './operation-worker.js';
import { ObservationCache } from './observation-cache.js';
import { StoredMessageKeys } from './stored-message-keys.js';
import { KeyedLock } from './scope-lock.js';
import { positive, resolveMode, unitInterval, validateOverrides, validateThresholds } from './memory-settings.js';

/** Options of {@link createObservationalMemory}. */
export interface ObservationalMemoryOptions {
  /** Where memory lives. Use `createInMemoryStore()` (lost on exit) or the SQLite store. */
  store: MemoryStore;
  /** Model for both the observer and the reflector. */
  model?: LanguageModel;
  /** Overrides the observer built from `model`. */
  observer?: Observer;
  /** Overrides the reflector built from `model`. */
  reflector?: Reflector;
  /** @default 'auto' */
  mode?: MemoryMode;
  /** Whether scopes never enabled or disabled explicitly observe. @default false */
  defaultEnabled?: boolean;
  /** Default thresholds for scopes without overrides. @default 1200 / 900 / 4000 */
  defaults?: Partial<ObservationConfig>;
  /** @default RuneTokenEstimator */
  estimator?: TokenEstimator;
  /** Redact secrets from transcript text before it is stored or sent to the model. @default true */
  redactSecrets?: boolean;
  /** How long a worker may hold an operation (the stale-operation window). @default 300000 */
  leaseMs?: number;
  /**
   * Attempts an operation gets, whatever ends them: a retryable failure (re-queued with
   * backoff) or a crash that let its lease expire (re-queued by the stale check). Once they
   * are used up it becomes `dead`: it stops blocking its scope, keeps its last error, emits
   * `memory.operation.dead`, and runs again only when retried by hand. Failures that retrying
   * cannot help (bad model output) fail the operation at once.
   * @default 5
   */
  maxOperationAttempts?: number;
  /** @deprecated The former name of {@link maxOperationAttempts}, used when that is not set. */
  maxAttempts?: number;
  /** Base of the exponential retry backoff. @default 1000 */
  retryDelayMs?: number;
  /**
   * Most transcript tokens sent to the observer in one call, each message counted as the
   * observer sees it (a message over 8,000 characters is clipped). A batch always holds at
   * least one message, so no message can stop observation. @default 16000
   */
  maxBatchTokens?: number;
  /**
   * Highest importance an observation may have when everything it came from is tool output
   * (`[memory] tool_importance_cap`): a web page or file cannot plant a top-priority fact.
   * A number in [0, 1]. @default 0.6
   */
  toolImportanceCap?: number;
  /** @default () => new Date() */
  now?: () => Date;
  /** @default ULID ids */
  generateId?: IdGenerator;
  /** Called for memory events (reflections completed, operations failed). */
  onEvent?: (event: ObservationalMemoryEvent) => void;
  /** Testing hook: called at step boundaries of an operation; crash tests kill the process there. */
  faultPoint?: (point: 'after_claim' | 'after_llm') => void;
}

/** The store methods every observational-memory call relies on. */
const MEMORY_STORE_METHODS = ['getRecord', 'appendMessages', 'enqueueOperation', 'claimOperation', 'completeObservation', 'failOperation', 'markOperationDead'];

/**
 * Events of observational memory, reported on the scope (with the run that caused them):
 * `memory.observe.*` for every observe call that ran (or queued) an observe operation, also
 * when the run that asked for it has already ended.
 */
export type ObservationalMemoryEvent =
  | { readonly type: 'memory.observe.started'; readonly scope: Scope; readonly runId: string; readonly operationId: string }
  | {
      readonly type: 'memory.observe.completed';
      readonly scope: Scope;
      readonly runId: string;
      readonly operationId: string;
      readonly status: 'applied' | 'queued';
      readonly observed: boolean;
      readonly reflected: boolean;
      readonly observationCount: number;
    }
  /** The observation failed, or it succeeded and the reflection after it failed. */
  | { readonly type: 'memory.observe.failed'; readonly scope: Scope; readonly runId: string; readonly operationId: string; readonly error: string }
  | { readonly type: 'memory.reflection.completed'; readonly scope: Scope; readonly runId: string; readonly operationId: string; readonly trigger: 'auto' | 'reflect_now' }
  | { readonly type: 'memory.operation.failed'; readonly scope: Scope; readonly runId: string; readonly operationId: string; readonly operationType: string; readonly error: string; readonly willRetry: boolean }
  /** The operation used up its attempts and was parked as `dead` with its last error. */
  | {
      readonly type: 'memory.operation.dead';
      readonly scope: Scope;
      readonly runId: string;
      readonly operationId: string;
      readonly operationType: string;
      readonly error: string;
      readonly attempts: number;
    }
  /** The background worker hit a store error; it retries on its next poll. */
  | { readonly type: 'memory.worker.failed'; readonly error: string };

/** What {@link ObservationalMemory.observe} takes. */
export interface ObserveRequest {
  /** Scope ids; missing tenant and agent become `default`, a missing conversation the run id. */
  readonly scope: ScopeInput;
  readonly runId?: string;
  readonly toolCallId?: string;
  /** The transcript, or just its new part; each message needs an `id` or `index`. */
  readonly messages: readonly TranscriptMessage[];
  /**
   * The scope's generation ({@link ObservationalMemory.generation}) read before these
   * messages were gathered. When the scope was forgotten since, nothing is stored and the
   * call answers `skipped` with reason `forgotten`: forgotten messages never come back.
   */
  readonly generation?: number;
}

/** What an observe call came to. */
export interface ObserveResult {
  /** `applied` when the observer ran; `queued` when another worker holds the scope or a retry is pending. */
  readonly status: 'applied' | 'skipped' | 'queued';
  /** Why nothing was observed: `mode_off`, `disabled`, `no_messages`, `below_threshold`, `forgotten` (see `generation`). */
  readonly reason?: 'mode_off' | 'disabled' | 'no_messages' | 'below_threshold' | 'forgotten';
  readonly observed: boolean;
  readonly reflected: boolean;
  /** Observations in the scope afterwards. */
  readonly observationCount: number;
  /** Set when the observation succeeded but the reflection after it failed. */
  readonly reflectionError?: string;
  readonly operationId?: string;
}

/** What an export produced. */
export interface ExportResult {
  readonly format: ExportFormat;
  readonly content: string;
  readonly bytes: number;
  readonly status: MemoryStatus;
}

/** Everything stored for a scope, for inspection. */
export interface MemoryInspection {
  readonly status: MemoryStatus;
  readonly observations: readonly Observation[];
  readonly reflection: StoredReflection | null;
  /** The scope's active supersession set: every supersession, and the contradictions no later supersession resolved. */
  readonly links: ReflectionLinks;
  readonly operations: readonly Operation[];
}

/** The observational memory service. */
export interface ObservationalMemory {
  readonly mode: 'off' | 'local_coordinator';
  /** Stores new messages; when enough are unobserved, runs the observer (and, when due, the reflector). */
  observe(request: ObserveRequest): Promise<ObserveResult>;
  /** Reflects now, whatever the thresholds. A no-op when disabled or empty. */
  reflectNow(scope: ScopeInput, options?: { runId?: string; toolCallId?: string }): Promise<{ reflected: boolean; status: MemoryStatus }>;
  /** The `<observational-memory>` snippet for the next turn, or `""`. Never writes. */
  snippet(scope: ScopeInput): Promise<string>;
  /** Never writes; an untouched scope reports the current defaults. */
  status(scope: ScopeInput): Promise<MemoryStatus>;
  /**
   * Whether observe would store anything for the scope now (the mode is not off and the
   * scope is enabled): `status` without its counts, one read. Never writes.
   */
  isEnabled?(scope: ScopeInput): Promise<boolean>;
  /** Enables or disables a scope; `config` overrides thresholds per field. */
  setEnabled(scope: ScopeInput, enabled: boolean, config?: Partial<ObservationConfig>, options?: { runId?: string; toolCallId?: string }): Promise<MemoryStatus>;
  export(scope: ScopeInput, format?: string): Promise<ExportResult>;
  inspect(scope: ScopeInput): Promise<MemoryInspection>;
  /**
   * Deletes everything the scope remembers (export files already written are not touched).
   * The scope gets a new {@link generation}, so observe calls holding the old one store nothing.
   */
  forget(scope: ScopeInput): Promise<void>;
  /** The scope's generation: 0 until it is first forgotten, then a new value at every forget. Never writes. */
  generation(scope: ScopeInput): Promise<number>;
  /**
   * Retries a `dead` operation by hand: it goes back to the queue, at the end of its scope's
   * log, with fresh attempts; it runs at the scope's next observe or the background worker's
   * next poll. Throws `OPERATION_NOT_FOUND` for an id the scope does not have, and
   * `OPERATION_NOT_DEAD` for an operation that is not dead.
   */
  retryOperation(scope: ScopeInput, operationId: string): Promise<Operation>;
  /** Processes pending operations (of one scope, or all) until none is left or the timeout passes. */
  drain(scope?: ScopeInput, options?: { timeoutMs?: number }): Promise<void>;
  /** Subscribes to events; returns the unsubscribe function. */
  subscribe(listener: (event: ObservationalMemoryEvent) => void): () => void;
  /**
   * Starts a background worker: at once and then every `staleCheckMs` it returns stale
   * `processing` operations (lease expired, by the store's clock) to `queued`, and every
   * `pollMs` it runs queued operations of any scope, so work left by a crashed process,
   * or retries waiting for their backoff, complete without a new observe call.
   */
  startWorker(options?: { pollMs?: number; staleCheckMs?: number }): { stop(): Promise<void> };
}

/**
 * Creates the observational memory service.
 * @example
 * const memory = createObservationalMemory({ store: createInMemoryStore(), model, defaultEnabled: true });
 * await memory.observe({ scope: { conversationId: 'c1' }, messages });
 * const snippet = await memory.snippet({ conversationId: 'c1' });
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
  const maxAttempts = positive(options.maxOperationAttempts ?? options.maxAttempts ?? 5, options.maxOperationAttempts === undefined && options.maxAttempts !== undefined ? 'maxAttempts' : 'maxOperationAttempts');
  const onWorkerEvent = (event: WorkerEvent): void => {
    const base = { scope: event.operation.scope, runId: event.operation.runId, operationId: event.operation.operationId };
    if (event.type === 'reflection-completed') emit({ type: 'memory.reflection.completed', ...base, trigger: event.trigger });
    else if (event.type === 'operation-dead') {
      emit({ type: 'memory.operation.dead', ...base, operationType: event.operation.operationType, error: event.errorText, attempts: Math.min(event.operation.attempt, maxAttempts) });
    } else emit({ type: 'memory.operation.failed', ...base, operationType: event.operation.operationType, error: event.error.message, willRetry: event.willRetry });
  };
  const worker: OperationWorkerContext = {
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

  /**
   * Runs `first` (already claimed, with what its claim prefetched) if given, then claimable
   * operations of the scope, in order, under the scope's lock. Once the `wanted` operation
   * ran and left no follow-up work, it stops: whatever else is queued belongs to other
   * callers, who run it themselves (or the background worker does).
   */
  const processScope = (memoryId: string, first?: Operation, wanted?: string, prefetched?: PrefetchedObserve): Promise<Map<string, OperationOutcome>> =>
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

  const currentStatus = async (scope: Scope, record?: MemoryRecord): Promise<MemoryStatus> => {
    const memoryId = memoryIdOf(scope);
    const found = record ?? (await store.getRecord(memoryId));
    const { enabled, config } = effective(found);
    const [pendingOperations, deadOperations, links] = found
      ? await Promise.all([store.countPendingOperations(memoryId), store.countDeadOperations(memoryId), linksOf(memoryId, found)])
      : [0, 0, EMPTY_REFLECTION_LINKS];
    return statusOf({ mode, memoryId, scope, record: found, enabled: mode !== 'off' && enabled, config, pendingOperations, deadOperations, activeLinks: activeReflectionLinks(links) });
  };

  /** Stores the messages and, at the threshold, runs the observe operation; reports it on the scope's events. */
  const storedKeys = new StoredMessageKeys();
  const noteStored = (memoryId: string, generation: number | undefined, messages: readonly PreparedMessage[]): void => {
    if (generation !== undefined) storedKeys.add(memoryId, generation, messages.map((message) => message.messageKey));
  };
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
      noteStored(memoryId, request.generation, prepared);
      if (!result.operation) return skipped('below_threshold', result.record.observationCount);
      operation = result.operation;
      run = () => processScope(memoryId, result.claimed, result.operation?.operationId, result.prefetched);
    } else {
      const record = await store.getRecord(memoryId);
      const { enabled, config } = effective(record);
      if (!enabled) return skipped('disabled', record?.observationCount ?? 0);
      if (prepared.length === 0) return skipped('no_messages', record?.observationCount ?? 0);
      const appended = await store.appendMessages({ scope, memoryId, messages: prepared, ...generation });
      noteStored(memoryId, request.generation, prepared);
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

  const service: ObservationalMemory = {
    mode,

    async observe(request) {
      const scope = resolveScope({ ...request.scope, runId: request.runId ?? request.scope.runId });
      const known = request.generation === undefined ? undefined : storedKeys.known(memoryIdOf(scope), request.generation);
      const prepared = prepareTranscript(request.messages, estimator, { redact: options.redactSecrets ?? true, skip: known });
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
      const scope = resolveScope({ ...scopeInput, runId: meta.runId ?? scopeInput.runId });
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
      const scope = resolveScope(scopeInput);
      const memoryId = memoryIdOf(scope);
      const record = await store.getRecord(memoryId);
      if (!record) return '';
      const { enabled, config } = effective(record);
      if (!enabled) return '';
      const cached = snippetCache.get(memoryId, record.stateVersion);
      if (cached !== undefined) return cached;
      const [observations, links] = await Promise.all([observationCache.get(memoryId, record), linksOf(memoryId, record)]);
      const text = buildObservationSnippet({ observations, reflection: record.reflection, links: activeReflectionLinks(links), maxTokens: config.snippetMaxTokens, estimator });
      snippetCache.set(memoryId, record.stateVersion, text);
      return text;
    },

    async status(scopeInput) {
      return currentStatus(resolveScope(scopeInput));
    },

    async isEnabled(scopeInput) {
      if (mode === 'off') return false;
      return effective(await store.getRecord(memoryIdOf(resolveScope(scopeInput)))).enabled;
    },

    async setEnabled(scopeInput, enabled, config, meta = {}) {
      requireMode(enabled ? 'enable' : 'disable');
      const scope = resolveScope({ ...scopeInput, runId: meta.runId ?? scopeInput.runId });
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
      return {
        status: await currentStatus(scope, record),
        observations: record ? await store.listObservations(memoryId) : [],
        reflection: record?.reflection ?? null,
        links: record ? activeReflectionLinks(await linksOf(memoryId, record)) : EMPTY_REFLECTION_LINKS,
        operations: record ? await store.listOperations(memoryId) : [],
      };
    },

    async forget(scopeInput) {
      const memoryId = memoryIdOf(resolveScope(scopeInput));
      await locks.run(memoryId, () => store.forget(memoryId));
      snippetCache.delete(memoryId);
      observationCache.delete(memoryId);
      storedKeys.delete(memoryId);
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
      const deadline = Date.now() + (drainOptions.timeoutMs ?? 60_000);
      for (;;) {
        if (memoryId !== undefined) await processScope(memoryId);
        else {
          for (;;) {
            const operation = await store.claimOperation({ leaseOwner: worker.workerId, leaseMs: worker.leaseMs });
            if (!operation) break;
            await locks.run(operation.memoryId, () => runOperation(worker, operation));
          }
        }
        if ((await store.countPendingOperations(memoryId)) === 0) return;
        if (Date.now() >= deadline) {
          throw new HarnessMemoryError({ code: 'STORE_FAILED', component: 'observational-memory', message: 'drain timed out with operations still pending; they stay queued and will be retried.' });
        }
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },

    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    startWorker(workerOptions = {}) {
      const pollMs = workerOptions.pollMs ?? 1000;
      const staleCheckMs = workerOptions.staleCheckMs ?? 30_000;
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
            for (;;) {
              if (stopped) break;
              const operation = await store.claimOperation({ leaseOwner: worker.workerId, leaseMs: worker.leaseMs });
              if (!operation) break;
              await locks.run(operation.memoryId, () => runOperation(worker, operation));
            }
          } catch (error) {
            emit({ type: 'memory.worker.failed', error: (error as Error).message });
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
  return service;
}
