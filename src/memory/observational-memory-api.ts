/**
 * The API of the observational memory service: its options, requests, results, events and
 * the service interface. `createObservationalMemory` (observational-memory.ts) builds it.
 * @module
 */
import type { ExportFormat } from '../core/memory-export.js';
import type { FaultReporter } from '../core/fault.js';
import type { MemoryMode, MemoryStatus } from '../core/memory-status.js';
import type { Observation, ObservationConfig, StoredReflection } from '../core/observation.js';
import type { ReflectionLinks } from '../core/reflection-links.js';
import type { Scope, ScopeInput } from '../core/scope.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import type { TranscriptMessage } from '../core/transcript.js';
import type { IdGenerator } from '../core/ids.js';
import type { LanguageModel } from '../llm/language-model.js';
import type { MemoryStore, Operation, ScopeSummary } from '../storage/store.js';
import type { ObservationImport } from './import-observations.js';
import type { Observer, Reflector } from './model-observer.js';

/** Options of {@link createObservationalMemory}. */
export interface ObservationalMemoryOptions {
  /** Where memory lives. Use `createInMemoryStore()` (lost on exit) or the SQLite store. */
  store: MemoryStore;
  /** Model for both the observer and the reflector. */
  model?: LanguageModel;
  /**
   * Ask for the model each observe call names ({@link ObserveRequest.modelId}: the model its
   * run used) instead of `model`'s own, as the `inherit` memory mode does: memory then follows
   * a run's `--model`. Calls that name none use `model` as it is. @default false
   */
  followRunModel?: boolean;
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
  /**
   * Show a server failure (a store's, such as a database it cannot write, or a bug) only by its
   * code, `internal error (STORE_FAILED); see the server log`, wherever a tenant could read it:
   * the operation log, the `memory.*` events' `error` and {@link ObserveResult.reflectionError}.
   * Its detail (a database path, a Postgres schema or address) goes to {@link onFault}. The
   * harness server sets it; off by default, for a process that is its own operator. The error
   * an `observe` call throws is never changed.
   */
  hideServerFailures?: boolean;
  /** Receives the detail of every failure {@link hideServerFailures} hid. Must not throw. */
  onFault?: FaultReporter;
  /** Testing hook: called at step boundaries of an operation; crash tests kill the process there. */
  faultPoint?: (point: 'after_claim' | 'after_llm') => void;
}

/**
 * Events of observational memory, reported on the scope (with the run that caused them):
 * `memory.observe.*` for every observe call that ran (or queued) an observe operation, also
 * when the run that asked for it has already ended.
 */
export type ObservationalMemoryEvent =
  | {
      readonly type: 'memory.observe.started';
      readonly scope: Scope;
      readonly runId: string;
      readonly operationId: string;
    }
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
  | {
      readonly type: 'memory.observe.failed';
      readonly scope: Scope;
      readonly runId: string;
      readonly operationId: string;
      readonly error: string;
    }
  | {
      readonly type: 'memory.reflection.completed';
      readonly scope: Scope;
      readonly runId: string;
      readonly operationId: string;
      readonly trigger: 'auto' | 'reflect_now';
    }
  | {
      readonly type: 'memory.operation.failed';
      readonly scope: Scope;
      readonly runId: string;
      readonly operationId: string;
      readonly operationType: string;
      readonly error: string;
      readonly willRetry: boolean;
    }
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
  /**
   * The model refused one message (a refusal, or its content filter) even alone: it was passed
   * over, so the scope's later messages are observed, and is never observed. `error` is the
   * operation's note (the refusal, redacted).
   */
  | {
      readonly type: 'memory.message.skipped';
      readonly scope: Scope;
      readonly runId: string;
      readonly operationId: string;
      /** The message's seq in the scope. */
      readonly messageSeq: number;
      /** Which message, as given to `observe`: `id:<id>`, or `index:<index>` for one given by index. */
      readonly messageKey: string;
      readonly error: string;
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
  /**
   * The model the run used. With `followRunModel`, the observer and the reflection after it
   * ask this model; otherwise it is ignored.
   */
  readonly modelId?: string;
  /**
   * Cancels the call, as `fetch`'s `signal` does (pass an HTTP request's, or the AI SDK's
   * `abortSignal`). Already aborted, `observe` rejects with `CANCELLED` before it stores
   * anything. Aborted during the call, the observer's (or the reflector's) model call is aborted
   * at once and `observe` rejects with `CANCELLED` (`cause`: the signal's reason; `data.operationId`:
   * its observe operation): the messages it stored stay stored, and the operation it was running
   * is put back in the queue as it was, available at once, its attempt not counted, no failure
   * recorded or reported (the scope's next `observe`, `drain` or the background worker runs it).
   * A reflection after the observation is cancelled the same way and stays queued. Other callers
   * of the scope waiting behind the call go on as before. A call whose work is done resolves as
   * usual, whenever the signal aborts afterwards.
   * @example
   * await memory.observe({ scope, messages, signal: request.signal });
   */
  readonly signal?: AbortSignal;
}

/** What an observe call came to. */
export interface ObserveResult {
  /**
   * `applied` when the observer ran; `queued` when another worker holds the scope or an earlier
   * operation of the scope waits for its retry. When this call's own model call fails, `observe`
   * rejects (`MODEL_CALL_FAILED`, …) and, for a retryable failure, its operation stays queued
   * for a retry: the messages are stored either way.
   */
  readonly status: 'applied' | 'skipped' | 'queued';
  /**
   * Why nothing was observed: `mode_off`, `disabled`, `no_messages`, `below_threshold`, `forgotten` (see
   * `generation`).
   */
  readonly reason?: 'mode_off' | 'disabled' | 'no_messages' | 'below_threshold' | 'forgotten';
  readonly observed: boolean;
  readonly reflected: boolean;
  /** Observations in the scope afterwards. */
  readonly observationCount: number;
  /**
   * Set when the observation succeeded but the reflection after it failed: the failure's
   * message (a server failure only by its code with `hideServerFailures`).
   */
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

/** What {@link ObservationalMemory.importExport} resolves. */
export interface ExportImportResult {
  /** The observations imported, with their new seqs. */
  readonly observations: Observation[];
  readonly status: MemoryStatus;
  /**
   * Links of the export not imported as written: those naming a seq none of its observations
   * has (left out), and supersessions in which an observation that may rest on tool output
   * replaces one that does not (kept as contradictions, as a reflector's are).
   */
  readonly droppedLinks: number;
}

/** Everything stored for a scope, for inspection. */
export interface MemoryInspection {
  readonly status: MemoryStatus;
  /** Unobserved and unreflected tokens against their thresholds, the snippet's size, and work under way. */
  readonly progress: MemoryProgress;
  readonly observations: readonly Observation[];
  readonly reflection: StoredReflection | null;
  /** The scope's active supersession set: every supersession, and the contradictions no later supersession resolved. */
  readonly links: ReflectionLinks;
  /** The scope's operations in scope-sequence order: all, or the open ones (see {@link InspectOptions}). */
  readonly operations: readonly Operation[];
  /**
   * The `<observational-memory>` snippet the next turn gets (as {@link ObservationalMemory.snippet}), from the
   * same read.
   */
  readonly snippet: string;
}

/** Options of {@link ObservationalMemory.inspect}. */
export interface InspectOptions {
  /**
   * Which operations to read: `all` of the scope's log, or the `open` ones (queued,
   * processing, dead) without the applied ones, which grow with every turn: what a view that
   * polls needs. @default 'all'
   */
  readonly operations?: 'all' | 'open';
}

/** One page of a listing, and the cursor of the next (`null` after the last). */
export interface Page<T> {
  readonly items: readonly T[];
  readonly nextCursor: string | null;
}

/** Paging of a listing: `limit` 1–200 (default 50), `cursor` from the previous page. */
export interface PageRequest {
  readonly limit?: number;
  readonly cursor?: string;
}

/** What {@link ObservationalMemory.listScopes} takes. */
export interface ScopeListRequest extends PageRequest {
  /** Words that must each appear in the conversation or agent id (case-insensitive). */
  readonly query?: string;
  /** Only scopes that observe (`true`) or do not (`false`), unset flags following `defaultEnabled`. */
  readonly enabled?: boolean;
}

/** A listed scope: its counts, and whether it observes now (an unset flag follows `defaultEnabled`). */
export interface ListedScope extends Omit<ScopeSummary, 'enabled'> {
  readonly enabled: boolean;
}

/** An observation as the inspector shows it: with its score and whether the next snippet shows it. */
export interface ObservationView extends Observation {
  /** Observations after it in the scope (the newest has 0). */
  readonly ageSteps: number;
  /** Importance-weighted recency, the snippet's ranking (see `scoreObservation`). */
  readonly score: number;
  /** Whether the next `<observational-memory>` snippet shows it. */
  readonly included: boolean;
  /**
   * Why the next snippet does not show it, or null when it does: memory is off for the scope,
   * a newer observation repeats it word for word (the snippet shows that one), it is
   * superseded (scored low, it did not fit), or the budget had no room for it.
   */
  readonly notShownBecause: 'memory_off' | 'repeated' | 'superseded' | 'budget' | null;
  /** The seq that supersedes it, or null. */
  readonly supersededBy: number | null;
}

/** Where a scope stands toward its next observe, reflection and snippet budget. */
export interface MemoryProgress {
  readonly unobservedTokens: number;
  readonly observeMinTokens: number;
  readonly unreflectedObservationTokens: number;
  readonly reflectThresholdTokens: number;
  /** Tokens of the next `<observational-memory>` snippet, by the service's estimator. */
  readonly snippetTokens: number;
  readonly snippetMaxTokens: number;
  /** An observe operation is being processed now. */
  readonly observing: boolean;
  /** A reflection is being processed now. */
  readonly reflecting: boolean;
}

/** The observational memory service. */
export interface ObservationalMemory {
  readonly mode: 'off' | 'local_coordinator';
  /** Stores new messages; when enough are unobserved, runs the observer (and, when due, the reflector). */
  observe(request: ObserveRequest): Promise<ObserveResult>;
  /**
   * Reflects now, whatever the thresholds. A no-op when disabled or empty. `queued` is true
   * when 16 callers already ran or waited for the scope: the reflection is stored in the
   * scope's queue and runs after them, and `reflected` is false. With `signal`, the call is
   * cancelled as `observe`'s is: already aborted, it rejects `CANCELLED` before storing
   * anything; aborted during the call, the reflector's model request is aborted at once, it
   * rejects `CANCELLED` and the reflection goes back to the queue untouched (no attempt used),
   * for the scope's next observe or the worker.
   */
  reflectNow(
    scope: ScopeInput,
    options?: { runId?: string; toolCallId?: string; signal?: AbortSignal },
  ): Promise<{ reflected: boolean; queued: boolean; status: MemoryStatus }>;
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
  /**
   * Appends observations brought in from elsewhere (another memory system, a test, a
   * benchmark), in the order given, after the scope's last seq; no observer runs. Each is
   * checked (`OBSERVE_INPUT_INVALID` names the observation and field), cleaned of invisible
   * characters and redacted like observer output, with provenance `import` (or `client`). The
   * next snippet includes them; the import is logged as an applied `import` operation.
   */
  importObservations(
    scope: ScopeInput,
    observations: readonly ObservationImport[],
    options?: { runId?: string; toolCallId?: string },
  ): Promise<{ observations: Observation[]; status: MemoryStatus }>;
  /**
   * Restores a JSON export (`export(scope, 'json')`, as its text or parsed) into a scope that
   * holds no observations yet, in one store transaction: nothing is written when any part
   * fails. The observations are imported as {@link importObservations} imports them (same
   * checks, cleaning, redaction and caps) with new seqs; the reflection (cleaned and redacted
   * like a reflector's, at most 64 KiB) and the supersession set follow, every seq renumbered,
   * so the next snippet shows the reflection and holds back the superseded observations as the
   * exported scope's did. The reflection covers the observations through the export's
   * `reflection_through_seq` or, when it has none, all of them. A link naming a seq none of the
   * exported observations has is left out, and a supersession in which an observation that may
   * rest on tool output replaces one that does not is kept as a contradiction; both are counted
   * in `droppedLinks`. At most `MAX_IMPORTED_LINKS` supersessions and as many contradictions.
   * The export's `config` and `status` (enabled or not) are not applied: use {@link setEnabled}.
   *
   * Throws `EXPORT_INVALID` with `data.field` naming what is wrong
   * (`reflection_links.supersessions[3].newer_seq`, `observations[2]`), or `scope` when the scope
   * already holds observations, a reflection or links (also when another caller writes it during
   * the import). An export with a reflection or links needs a store declaring `supportsRestore`
   * (`STORE_FAILED` otherwise, nothing written).
   */
  importExport(
    scope: ScopeInput,
    exported: string | Readonly<Record<string, unknown>>,
    options?: { runId?: string; toolCallId?: string },
  ): Promise<ExportImportResult>;
  setEnabled(
    scope: ScopeInput,
    enabled: boolean,
    config?: Partial<ObservationConfig>,
    options?: { runId?: string; toolCallId?: string },
  ): Promise<MemoryStatus>;
  export(scope: ScopeInput, format?: string): Promise<ExportResult>;
  inspect(scope: ScopeInput, options?: InspectOptions): Promise<MemoryInspection>;
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
  /**
   * Operation retention for callers without the server's sweep: one short call to the store's
   * `deleteSettledOperations`, deleting settled operations (applied, and failed ones, which
   * nothing retries) of any scope not written for `olderThanSeconds` (by the store's clock),
   * with their markers, at most `limit` (1 to 1,000); returns how many. Queued, processing and
   * dead operations, and each scope's newest, are kept. A call that deleted `limit` may leave
   * more: call again (say, every minute until it deletes fewer). Present when the store has
   * the method (the in-memory, SQLite and Postgres stores do). `OPTION_INVALID` names a bad
   * argument.
   * @example
   * await memory.deleteSettledOperations?.({ olderThanSeconds: 30 * 86_400, limit: 1000 });
   */
  deleteSettledOperations?(options: { olderThanSeconds: number; limit: number }): Promise<number>;
  /** Processes pending operations (of one scope, or all) until none is left or the timeout passes. */
  drain(scope?: ScopeInput, options?: { timeoutMs?: number }): Promise<void>;
  /**
   * A page of the tenant's scopes (those with a record: anything observed, imported, enabled or
   * written to working memory), ordered by conversation id then agent id, with their counts.
   * Throws `REQUEST_INVALID` naming `limit`, `cursor` or `query`.
   */
  listScopes(tenantId: string, request?: ScopeListRequest): Promise<Page<ListedScope>>;
  /**
   * A page of the scope's observations, newest first, whose content holds every word of
   * `query` (case-insensitive), each with its score and whether the next snippet shows it.
   */
  observationPage(
    scope: ScopeInput,
    request?: PageRequest & { readonly query?: string },
  ): Promise<Page<ObservationView>>;
  /** Observations holding every word of `query`, ranked by score (newest and most important first), paged. */
  searchObservations(
    scope: ScopeInput,
    request: PageRequest & { readonly query: string },
  ): Promise<Page<ObservationView>>;
  /** A page of the scope's operation log, newest first; `status` keeps one status. */
  operationPage(scope: ScopeInput, request?: PageRequest & { readonly status?: string }): Promise<Page<Operation>>;
  /**
   * Replaces the text (and, when given, the importance) of observation `seq`, cleaned and
   * redacted like an import, logged as an applied `correct` operation; the next snippet shows
   * the new text. With `content` left out the stored text stays and `importance` (then
   * required) alone changes, in one store transaction (a text corrected meanwhile elsewhere is
   * kept); the reflection and the supersessions naming it stay, so a fact it superseded stays
   * held back. A new text takes them out of force. Throws `OBSERVATION_NOT_FOUND` or
   * `OBSERVATION_INVALID` (naming the field: `content` when neither is given).
   */
  correctObservation(
    scope: ScopeInput,
    seq: number,
    change: { readonly content?: string; readonly importance?: number | null },
    options?: { runId?: string; toolCallId?: string },
  ): Promise<{ observation: ObservationView; status: MemoryStatus }>;
  /** Deletes observation `seq` (logged as an applied `correct` operation). Throws `OBSERVATION_NOT_FOUND`. */
  deleteObservation(
    scope: ScopeInput,
    seq: number,
    options?: { runId?: string; toolCallId?: string },
  ): Promise<{ seq: number; status: MemoryStatus }>;
  /** Unobserved and unreflected tokens against their thresholds, the snippet's size, and work under way. */
  progress(scope: ScopeInput): Promise<MemoryProgress>;
  /** Subscribes to events; returns the unsubscribe function. */
  subscribe(listener: (event: ObservationalMemoryEvent) => void): () => void;
  /**
   * Starts a background worker: at once and then every `staleCheckMs` it returns stale
   * `processing` operations (lease expired, by the store's clock) to `queued`, and every
   * `pollMs` it runs queued operations of any scope, so work left by a crashed process,
   * or retries waiting for their backoff, complete without a new observe call.
   *
   * `stop()` waits for the operation in hand. `stop({ timeoutMs })` waits for it no longer than
   * `timeoutMs`: then the operation's model call is aborted and the operation is put back in
   * the queue as a cancelled observe's is (`queued`, available at once, its attempt not
   * counted, no failure recorded), for this store's next observe, drain or worker (another
   * process's included) to run at once instead of after its lease. It resolves once that is
   * written, or at most 2 s later when the store does not answer (should that write then fail,
   * the operation is left `processing` until its lease runs out, and `onFault` is told so).
   * @example
   * const worker = memory.startWorker({ pollMs: 500 });
   * // at shutdown, before closing the store:
   * await worker.stop({ timeoutMs: 5_000 });
   */
  startWorker(options?: { pollMs?: number; staleCheckMs?: number }): {
    stop(options?: { readonly timeoutMs?: number }): Promise<void>;
  };
}
