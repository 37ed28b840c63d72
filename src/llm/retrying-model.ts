/**
 * The one retry layer of model calls: capped exponential backoff with full jitter that
 * honours `Retry-After`, bounded by a number of attempts and a total time budget.
 * @module
 */
import { ModelCallError } from '../core/errors.js';
import { requireCount, requireObject, requireTimerMs } from '../core/require-option.js';
import { isModelCallError } from './_model-call-errors.js';
import type { LanguageModel, LanguageModelCallOptions, LanguageModelResult } from './language-model.js';
import { monotonicNow } from '../core/monotonic-now.js';

/** How {@link withRetries} retries. */
export interface RetryPolicy {
  /** Calls made in all, the first included. @default 4 */
  readonly maxAttempts?: number;
  /**
   * Time budget of one logical call, retries and waits included, in milliseconds. Calls still
   * running when it runs out are aborted. Keep it below the 300 s operation lease
   * (`stale_operation_seconds`) so a worker never outlives its lease while retrying.
   * @default 120000
   */
  readonly maxTotalMs?: number;
  /** Backoff ceiling before the first retry, in milliseconds. @default 500 */
  readonly baseDelayMs?: number;
  /** Backoff growth per attempt. @default 2 */
  readonly factor?: number;
  /** Largest backoff wait, in milliseconds (a longer `Retry-After` is still honoured). @default 10000 */
  readonly maxDelayMs?: number;
  /** Waits `ms`; resolves early when `signal` fires. @default a setTimeout-based sleep */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** A number in [0, 1) for the jitter. @default Math.random */
  readonly random?: () => number;
  /** The clock. @default a monotonic clock (`performance.now`): a step of the wall clock does not move it */
  readonly now?: () => number;
  /** Called before each wait, for logs and events. */
  readonly onRetry?: (event: {
    readonly attempt: number;
    readonly delayMs: number;
    readonly error: ModelCallError;
  }) => void;
}

/** Defaults of {@link RetryPolicy}. */
export const DEFAULT_RETRY_POLICY: Readonly<
  Required<Pick<RetryPolicy, 'maxAttempts' | 'maxTotalMs' | 'baseDelayMs' | 'factor' | 'maxDelayMs'>>
> = Object.freeze({ maxAttempts: 4, maxTotalMs: 120_000, baseDelayMs: 500, factor: 2, maxDelayMs: 10_000 });

const INNER = Symbol.for('harness-memory.retries.inner');

/** The model under a {@link withRetries} layer, or the model itself when it has none. */
export function withoutRetries(model: LanguageModel): LanguageModel {
  requireObject(
    'withoutRetries',
    'model',
    model,
    ['doGenerate'],
    'Pass a LanguageModel, such as createOpenAICompatibleModel({ baseURL, modelId }).',
  );
  return (model as { [INNER]?: LanguageModel })[INNER] ?? model;
}

/**
 * Wraps `model` so retryable `ModelCallError`s (timeouts, connection errors, 408, 429, 5xx)
 * are retried. Anything else is thrown at once, and nothing is retried once the caller's
 * abort signal fired. Wrapping a model that already retries replaces its policy rather than
 * stacking a second layer.
 * @example
 * ```ts
 * import { createOpenAICompatibleModel, withRetries } from 'harness-memory/llm';
 *
 * const base = createOpenAICompatibleModel({ baseURL: 'http://127.0.0.1:11434', modelId: 'llama3.2' });
 * const model = withRetries(base, { maxAttempts: 3 });
 * ```
 */
export function withRetries(model: LanguageModel, policy: RetryPolicy = {}): LanguageModel {
  requireObject(
    'withRetries',
    'model',
    model,
    ['doGenerate'],
    'Pass a LanguageModel, such as createOpenAICompatibleModel({ baseURL, modelId }).',
  );
  const inner = withoutRetries(model);
  requireCount('withRetries', 'maxAttempts', policy.maxAttempts);
  requireTimerMs('withRetries', 'maxTotalMs', policy.maxTotalMs, 1);
  requireTimerMs('withRetries', 'baseDelayMs', policy.baseDelayMs, 0);
  requireTimerMs('withRetries', 'maxDelayMs', policy.maxDelayMs, 0);
  const settings = { ...DEFAULT_RETRY_POLICY, ...withoutUndefined(policy) };
  const sleep = policy.sleep ?? defaultSleep;
  const random = policy.random ?? Math.random;
  const now = policy.now ?? monotonicNow;

  async function doGenerate(options: LanguageModelCallOptions): Promise<LanguageModelResult> {
    const caller = options.abortSignal;
    const budget = new AbortController();
    const timer = setTimeout(() => budget.abort(), settings.maxTotalMs);
    const signal = caller ? AbortSignal.any([caller, budget.signal]) : budget.signal;
    const started = now();
    try {
      for (let attempt = 1; ; attempt += 1) {
        let error: ModelCallError;
        try {
          return await inner.doGenerate({ ...options, abortSignal: signal });
        } catch (thrown) {
          if (budget.signal.aborted && !caller?.aborted) throw budgetError(settings.maxTotalMs, thrown);
          if (!isModelCallError(thrown) || !thrown.isRetryable || caller?.aborted) throw thrown;
          error = thrown;
        }
        if (attempt >= settings.maxAttempts) throw error;
        const backoff =
          random() * Math.min(settings.maxDelayMs, settings.baseDelayMs * settings.factor ** (attempt - 1));
        const delayMs = Math.max(backoff, error.retryAfterMs ?? 0);
        const remaining = settings.maxTotalMs - (now() - started);
        // A server asking for more time than is left would only make us fail later.
        if (delayMs >= remaining) throw error;
        policy.onRetry?.({ attempt, delayMs, error });
        await sleep(delayMs, signal);
        if (signal.aborted) throw error;
      }
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    specificationVersion: 'v1',
    provider: inner.provider,
    modelId: inner.modelId,
    doGenerate,
    [INNER]: inner,
  } as LanguageModel;
}

function budgetError(maxTotalMs: number, cause: unknown): ModelCallError {
  const url = isModelCallError(cause) ? cause.url : undefined;
  return new ModelCallError({
    message: `Gave up on the model call after its ${maxTotalMs} ms retry budget ran out.`,
    ...(url === undefined ? {} : { url }),
    retryable: true,
    cause,
  });
}

function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as Partial<T>;
}
