/**
 * The one error type of harness-memory. Every error carries a stable string `code`
 * and a `data` object whose shape the code documents.
 * @module
 */

const MARKER = Symbol.for('harness-memory.error');

/**
 * Error codes and what their `data` holds.
 * - `SCOPE_INVALID`: `{ field, value? }`, a scope id is missing or malformed.
 * - `CONFIG_INVALID`: `{ key, source }`, a setting is malformed; `source` is a file path or env var.
 * - `TOOL_INPUT_INVALID`: `{ toolName, issues }`, tool arguments did not validate.
 * - `WORKING_MEMORY_INVALID`: `{ field }`, a key or value is malformed.
 * - `WORKING_MEMORY_LIMIT`: `{ limit, actual, max }`, a size or count limit was reached.
 * - `OBSERVE_INPUT_INVALID`: `{ index }`, a transcript message is malformed.
 * - `EXPORT_INVALID`: `{ format?, path?, field? }`, an export format or path was refused, or an export to import is
 *   malformed (`field` names it; `scope`: the scope imported into already holds memory).
 * - `MEMORY_DISABLED`: `{}`, the action needs memory but `mode = "off"`.
 * - `MODEL_NOT_CONFIGURED`: `{ role }`, no observer or reflector model was given.
 * - `MODEL_OUTPUT_INVALID`: `{ role, reason }`, the model answered with nothing usable.
 * - `MODEL_CALL_FAILED`: `{ url?, statusCode?, isRetryable }`, the model call failed.
 * - `STORE_CONFLICT`: `{ memoryId }`, a concurrent writer changed the record first; or `{ runId, status }`,
 *   an event for a run that ended (another process ended it first, or its terminal event is stored); or
 *   `{ runId }`, a new run under an id already stored.
 * - `STORE_FAILED`: `{ store }`, the storage adapter failed; from Postgres also `schema`, `sqlState`,
 *   and, when the connection was lost, `connectionLost: true` and `outcome` (`not-applied`,
 *   `unknown`, `read-failed`).
 * - `STORE_DISPOSED`: `{ store }`, the store was used after `dispose()`.
 * - `OPERATION_LEASE_LOST`: `{ operationId }`, a worker tried to apply after its lease lapsed.
 * - `SCOPE_FORGOTTEN`: `{ memoryId }`, the scope (or conversation) was forgotten after the caller
 *   read its generation; nothing of the refused write was stored.
 * - `REQUEST_INVALID`: `{ field? }`, a run or API request is malformed, or an eval option
 *   (`field` is `limit` or `types`) asks for something the dataset cannot give.
 * - `RUN_NOT_FOUND`: `{ runId }`, no such run (or not the caller's).
 * - `RUN_NOT_COMPLETED`: `{ runId }`, the run has not finished yet.
 * - `EVAL_DATASET_INVALID`: `{ format?, index?, id?, field? }`, an eval dataset is malformed:
 *   `format` is `longmemeval` or `locomo` once detected, `index` the instance's position in the
 *   file, `id` its `question_id` or `sample_id`, `field` the path of the bad field
 *   (`haystack_sessions[3][2].content`).
 * - `EVAL_RESULTS_INVALID`: `{ path, line }`, a results file cannot be resumed: `line` (from 1)
 *   is not a result line and is not a truncated last line.
 * - `OPTION_INVALID`: `{ factory, option }`, a factory was called without a required option, or with an empty one;
 *   or a store method was given an argument it cannot take (`factory` is the method, `option` the argument, such as
 *   `updateRun`/`steps`).
 * - `OPERATION_DEAD`: `{ operationId }`, the operation used up its attempts and was parked as `dead`.
 * - `OPERATION_NOT_FOUND`: `{ operationId }`, the scope has no operation with that id.
 * - `OPERATION_NOT_DEAD`: `{ operationId, status }`, only a `dead` operation can be retried by hand.
 * - `USAGE_INVALID`: `{}`, a `harness` command line is wrong in a way its parser cannot see (exit code 2).
 * - `OBSERVATION_NOT_FOUND`: `{ seq }`, the scope has no observation with that seq (never had, or it was deleted).
 * - `OBSERVATION_INVALID`: `{ field }`, a correction is malformed: `field` is `seq`, `content` or `importance`.
 * - `DRAIN_TIMEOUT`: `{ pending, timeoutMs }`, `drain` ran out of time with operations still pending (they stay queued).
 * - `ACCESS_DENIED`: `{ scope }`, the caller's API key lacks the scope the action needs (`memory:write` for an
 *   MCP tool that writes).
 * - `CANCELLED`: `{ operationId? }`, the caller's `signal` aborted the call (`cause` is the signal's reason): what
 *   it stored stays stored, and an operation it was running (`operationId`, its own) is queued again, not failed.
 *
 * Runs and tool results also carry the codes of {@link RUN_ERROR_CODES}.
 */
/** Every {@link HarnessMemoryErrorCode}, in the order documented above. */
export const HARNESS_MEMORY_ERROR_CODES = [
  'SCOPE_INVALID',
  'CONFIG_INVALID',
  'TOOL_INPUT_INVALID',
  'WORKING_MEMORY_INVALID',
  'WORKING_MEMORY_LIMIT',
  'OBSERVE_INPUT_INVALID',
  'EXPORT_INVALID',
  'MEMORY_DISABLED',
  'MODEL_NOT_CONFIGURED',
  'MODEL_OUTPUT_INVALID',
  'MODEL_CALL_FAILED',
  'STORE_CONFLICT',
  'STORE_FAILED',
  'STORE_DISPOSED',
  'OPERATION_LEASE_LOST',
  'SCOPE_FORGOTTEN',
  'REQUEST_INVALID',
  'RUN_NOT_FOUND',
  'RUN_NOT_COMPLETED',
  'EVAL_DATASET_INVALID',
  'EVAL_RESULTS_INVALID',
  'OPTION_INVALID',
  'OPERATION_DEAD',
  'OPERATION_NOT_FOUND',
  'OPERATION_NOT_DEAD',
  'USAGE_INVALID',
  'OBSERVATION_NOT_FOUND',
  'OBSERVATION_INVALID',
  'DRAIN_TIMEOUT',
  'ACCESS_DENIED',
  'CANCELLED',
] as const;

/** The code of a thrown {@link HarnessMemoryError}. */
export type HarnessMemoryErrorCode = (typeof HARNESS_MEMORY_ERROR_CODES)[number];

/**
 * Codes a run can end with (`run.error.code`, the `run.failed` event) or a tool result can
 * carry, besides the {@link HarnessMemoryErrorCode}s of errors thrown during the run:
 * - `MAX_STEPS`: the run reached `max_steps` without a final answer.
 * - `RUN_ABANDONED`: the process running the run stopped (no heartbeat for `abandonAfterSeconds`).
 * - `TOOL_NOT_FOUND`: the model called a tool the run does not offer (a tool result; the run goes on).
 * - `INTERNAL`: an unexpected error that is not a `HarnessMemoryError`; the message says what.
 */
export const RUN_ERROR_CODES = [
  'MAX_STEPS',
  'OUTPUT_TRUNCATED',
  'OUTPUT_FILTERED',
  'RUN_ABANDONED',
  'TOOL_NOT_FOUND',
  'TOOL_OUTPUT_INVALID',
  'INTERNAL',
] as const;

/** A code of {@link RUN_ERROR_CODES}. */
export type RunErrorCode = (typeof RUN_ERROR_CODES)[number];

/** Options for {@link HarnessMemoryError}. */
export interface HarnessMemoryErrorOptions {
  code: HarnessMemoryErrorCode;
  /** Which part failed, shown in the message prefix, for example `scope` or `config`. */
  component: string;
  /** What failed and how to fix it. */
  message: string;
  data?: Record<string, unknown>;
  cause?: unknown;
}

/**
 * Base class of every error harness-memory throws. A subclass declares its own `static kind`
 * (its name) for its `isInstance` to answer for it alone. Use {@link HarnessMemoryError.isInstance}
 * rather than `instanceof`: it also works across duplicated copies of the package.
 * @example
 * ```ts
 * import { HarnessMemoryError, resolveScope } from 'harness-memory';
 *
 * try {
 *   resolveScope({ tenantId: '../x', runId: 'r1' });
 * } catch (error) {
 *   if (HarnessMemoryError.isInstance(error) && error.code === 'SCOPE_INVALID') console.error(error.data['field']);
 * }
 * ```
 */
export class HarnessMemoryError extends Error {
  /** The class's name as {@link HarnessMemoryError.isInstance} checks it, the same in every copy of the package. */
  static readonly kind: string = 'HarnessMemoryError';
  readonly code: HarnessMemoryErrorCode;
  readonly component: string;
  readonly data: Record<string, unknown>;
  /** The message without the `[harness-memory] [component]` prefix, for end users. */
  readonly detail: string;

  constructor(options: HarnessMemoryErrorOptions) {
    super(`[harness-memory] [${options.component}] ${options.message}`, { cause: options.cause });
    this.name = 'HarnessMemoryError';
    // The kinds of the class made and of every class above it, for each class's isInstance.
    const kinds: string[] = [];
    for (let type: unknown = new.target; typeof type === 'function'; type = Object.getPrototypeOf(type)) {
      if (Object.hasOwn(type, 'kind')) kinds.push((type as unknown as { kind: string }).kind);
    }
    Object.defineProperty(this, MARKER, { value: Object.freeze(kinds) });
    this.code = options.code;
    this.component = options.component;
    this.detail = options.message;
    this.data = options.data ?? {};
  }

  /**
   * True for an error of this class (any harness-memory error, called on this base class;
   * `ModelCallError.isInstance` only for model call errors), whichever copy of the package
   * made it.
   */
  static isInstance<T extends abstract new (...args: never[]) => HarnessMemoryError>(
    this: T,
    error: unknown,
  ): error is InstanceType<T> {
    if (typeof error !== 'object' || error === null) return false;
    const marker = (error as Record<symbol, unknown>)[MARKER];
    // Called detached (`errors.filter(HarnessMemoryError.isInstance)`), it answers as the base class.
    const kind = (this as unknown as { kind?: string } | undefined)?.kind ?? HarnessMemoryError.kind;
    // `true`: the marker of a copy of the package from before kinds, which knew only the base class.
    if (marker === true) return kind === HarnessMemoryError.kind;
    return Array.isArray(marker) && marker.includes(kind);
  }
}

/** A configuration error; names the key and where its value came from. */
export class ConfigError extends HarnessMemoryError {
  static override readonly kind: string = 'ConfigError';
  readonly key: string;
  readonly source: string;
  constructor(options: { key: string; source: string; message: string; cause?: unknown }) {
    super({
      code: 'CONFIG_INVALID',
      component: 'config',
      message: `${options.source}: ${options.key}: ${options.message}`,
      data: { key: options.key, source: options.source },
      cause: options.cause,
    });
    this.name = 'ConfigError';
    this.key = options.key;
    this.source = options.source;
  }
}

/** A storage adapter error; carries the store's name. */
export class StoreError extends HarnessMemoryError {
  static override readonly kind: string = 'StoreError';
  readonly store: string;
  constructor(options: {
    store: string;
    message: string;
    code?: 'STORE_CONFLICT' | 'STORE_FAILED' | 'STORE_DISPOSED' | 'OPERATION_LEASE_LOST' | 'SCOPE_FORGOTTEN';
    data?: Record<string, unknown>;
    cause?: unknown;
  }) {
    super({
      code: options.code ?? 'STORE_FAILED',
      component: `store:${options.store}`,
      message: options.message,
      data: { store: options.store, ...options.data },
      cause: options.cause,
    });
    this.name = 'StoreError';
    this.store = options.store;
  }
}

/** A tool input error; carries the tool name and the validation issues. */
export class ToolError extends HarnessMemoryError {
  static override readonly kind: string = 'ToolError';
  readonly toolName: string;
  readonly issues: readonly string[];
  constructor(options: { toolName: string; message: string; issues?: readonly string[]; cause?: unknown }) {
    super({
      code: 'TOOL_INPUT_INVALID',
      component: `tool:${options.toolName}`,
      message: options.message,
      data: { toolName: options.toolName, issues: options.issues ?? [] },
      cause: options.cause,
    });
    this.name = 'ToolError';
    this.toolName = options.toolName;
    this.issues = options.issues ?? [];
  }
}

/** A failed call to a language model; says whether retrying can help. */
export class ModelCallError extends HarnessMemoryError {
  static override readonly kind: string = 'ModelCallError';
  readonly url: string | undefined;
  readonly statusCode: number | undefined;
  readonly responseBody: string | undefined;
  readonly retryAfterMs: number | undefined;
  /** True when the call was never sent (a circuit breaker failed it fast): no model saw it. */
  readonly notSent: boolean;
  constructor(options: {
    message: string;
    url?: string;
    statusCode?: number;
    responseBody?: string;
    retryAfterMs?: number;
    retryable?: boolean;
    /** The call was never sent: see {@link ModelCallError.notSent}. */
    notSent?: boolean;
    cause?: unknown;
  }) {
    const retryable = options.retryable ?? isRetryableStatus(options.statusCode);
    super({
      code: 'MODEL_CALL_FAILED',
      component: 'llm',
      message: options.message,
      data: { url: options.url, statusCode: options.statusCode, isRetryable: retryable },
      cause: options.cause,
    });
    this.name = 'ModelCallError';
    this.url = options.url;
    this.statusCode = options.statusCode;
    this.responseBody = options.responseBody;
    this.retryAfterMs = options.retryAfterMs;
    this.notSent = options.notSent ?? false;
    this.#retryable = retryable;
  }
  readonly #retryable: boolean;
  /** True for timeouts, connection failures, 408, 429 and 5xx. */
  get isRetryable(): boolean {
    return this.#retryable;
  }
}

function isRetryableStatus(status: number | undefined): boolean {
  if (status === undefined) return true;
  return status === 408 || status === 429 || status >= 500;
}
