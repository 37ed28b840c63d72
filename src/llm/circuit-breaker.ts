/**
 * A circuit breaker for a model: after repeated retryable failures it fails fast for a
 * while, so a dead provider does not hold up every observation, then tries one call again.
 * @module
 */
import { ModelCallError } from '../core/errors.js';
import { requireObject } from '../core/require-option.js';
import { isModelCallError } from './_model-call-errors.js';
import type { LanguageModel, LanguageModelCallOptions, LanguageModelResult } from './language-model.js';

/** `closed`: calls go through. `open`: calls fail fast. `half-open`: one trial call may go through. */
export type CircuitState = 'closed' | 'open' | 'half-open';

/** Options of {@link withCircuitBreaker}. */
export interface CircuitBreakerOptions {
  /** Consecutive retryable failures that open the circuit. @default 5 */
  readonly failureThreshold?: number;
  /** Time the circuit stays open before a trial call, in milliseconds. @default 30000 */
  readonly resetMs?: number;
  /** The clock. @default Date.now */
  readonly now?: () => number;
  /** Called on every state change, for logs and events. */
  readonly onStateChange?: (state: CircuitState) => void;
}

/** A model behind a circuit breaker; `state` is read live. */
export type CircuitBreakerModel = LanguageModel & { readonly state: CircuitState };

/**
 * Wraps `model` in a circuit breaker. Only retryable `ModelCallError`s count as failures:
 * a bad request or a bad answer says nothing about whether the provider is up. While open,
 * calls throw a retryable `ModelCallError` whose `retryAfterMs` is the time until the trial.
 * Put it outside `withRetries`, so one failure means one logical call that exhausted its retries.
 * @example
 * const model = withCircuitBreaker(withRetries(base), { failureThreshold: 5, resetMs: 30_000 });
 */
export function withCircuitBreaker(model: LanguageModel, options: CircuitBreakerOptions = {}): CircuitBreakerModel {
  requireObject(
    'withCircuitBreaker',
    'model',
    model,
    ['doGenerate'],
    'Pass a LanguageModel, such as createOpenAICompatibleModel({ baseURL, modelId }).',
  );
  const failureThreshold = options.failureThreshold ?? 5;
  const resetMs = options.resetMs ?? 30_000;
  const now = options.now ?? Date.now;
  let state: CircuitState = 'closed';
  let failures = 0;
  let openedAt = 0;
  let trialInFlight = false;

  const moveTo = (next: CircuitState): void => {
    if (next === state) return;
    state = next;
    options.onStateChange?.(next);
  };
  const currentState = (): CircuitState => (state === 'open' && now() - openedAt >= resetMs ? 'half-open' : state);

  function failFast(): ModelCallError {
    const retryAfterMs = Math.max(0, openedAt + resetMs - now());
    const when = trialInFlight
      ? 'after the trial call in flight'
      : `at ${new Date(openedAt + resetMs).toISOString()} (in ${retryAfterMs} ms)`;
    return new ModelCallError({
      message:
        `The circuit for ${model.provider}/${model.modelId} is open after ${failures} consecutive ` +
        `failures; calls fail fast and it will try again ${when}.`,
      retryable: true,
      retryAfterMs,
    });
  }

  async function doGenerate(callOptions: LanguageModelCallOptions): Promise<LanguageModelResult> {
    const observed = currentState();
    if (observed === 'open' || (observed === 'half-open' && trialInFlight)) throw failFast();
    const trial = observed === 'half-open';
    if (trial) {
      moveTo('half-open');
      trialInFlight = true;
    }
    try {
      const result = await model.doGenerate(callOptions);
      failures = 0;
      moveTo('closed');
      return result;
    } catch (error) {
      if (isModelCallError(error) && error.isRetryable && !callOptions.abortSignal?.aborted) {
        failures += 1;
        if (trial || failures >= failureThreshold) {
          openedAt = now();
          moveTo('open');
        }
      }
      throw error;
    } finally {
      if (trial) trialInFlight = false;
    }
  }

  return {
    specificationVersion: 'v1',
    provider: model.provider,
    modelId: model.modelId,
    doGenerate,
    get state(): CircuitState {
      return currentState();
    },
  };
}
