/**
 * A circuit breaker for a model: after repeated retryable failures it fails fast for a
 * while, so a dead provider does not hold up every observation, then tries one call again.
 * @module
 */
import { ModelCallError } from '../core/errors.js';
import { requireCount, requireObject, requireTimerMs } from '../core/require-option.js';
import { isDeadlineAbort, isModelCallError } from './_model-call-errors.js';
import type { LanguageModel, LanguageModelCallOptions, LanguageModelResult } from './language-model.js';
import { monotonicNow } from '../core/monotonic-now.js';

/** `closed`: calls go through. `open`: calls fail fast. `half-open`: one trial call may go through. */
export type CircuitState = 'closed' | 'open' | 'half-open';

/** Options of {@link withCircuitBreaker}. */
export interface CircuitBreakerOptions {
  /** Consecutive retryable failures that open the circuit. @default 5 */
  readonly failureThreshold?: number;
  /** Time the circuit stays open before a trial call, in milliseconds. @default 30000 */
  readonly resetMs?: number;
  /** The clock. @default a monotonic clock (`performance.now`): a step of the wall clock does not move it */
  readonly now?: () => number;
  /** Called on every state change of a model id's circuit, for logs and events. */
  readonly onStateChange?: (state: CircuitState, modelId: string) => void;
}

/** A model behind a circuit breaker; `state` is read live (the circuit of the model's own id). */
export type CircuitBreakerModel = LanguageModel & { readonly state: CircuitState };

// Circuits kept for the model ids calls name; past it the least recently used is dropped
// (forgetting a circuit only lets calls to that id through again).
const MAX_CIRCUITS = 256;

/**
 * Wraps `model` in a circuit breaker. Only retryable `ModelCallError`s count as failures:
 * a bad request or a bad answer says nothing about whether the provider is up. While open,
 * calls throw a retryable `ModelCallError` whose `retryAfterMs` is the time until the trial.
 * Each model id a call names (`modelId`, else the model's own) has a circuit of its own, so
 * calls to one failing model never stop calls to another.
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
  const settings: CircuitSettings = {
    failureThreshold: requireCount('withCircuitBreaker', 'failureThreshold', options.failureThreshold) ?? 5,
    resetMs: requireTimerMs('withCircuitBreaker', 'resetMs', options.resetMs, 1) ?? 30_000,
    now: options.now ?? monotonicNow,
    onStateChange: options.onStateChange,
  };
  const circuits = new Map<string, Circuit>();
  const circuitOf = (modelId: string): Circuit => {
    let circuit = circuits.get(modelId);
    if (circuit) {
      circuits.delete(modelId);
    } else {
      circuit = new Circuit(model.provider, modelId, settings);
      if (circuits.size >= MAX_CIRCUITS) circuits.delete(circuits.keys().next().value as string);
    }
    circuits.set(modelId, circuit);
    return circuit;
  };

  return {
    specificationVersion: 'v1',
    provider: model.provider,
    modelId: model.modelId,
    doGenerate: (callOptions) =>
      circuitOf(callOptions.modelId ?? model.modelId).call(() => model.doGenerate(callOptions), callOptions),
    get state(): CircuitState {
      return circuits.get(model.modelId)?.state ?? 'closed';
    },
  };
}

/** What every circuit of one breaker shares. */
interface CircuitSettings {
  readonly failureThreshold: number;
  readonly resetMs: number;
  readonly now: () => number;
  readonly onStateChange: ((state: CircuitState, modelId: string) => void) | undefined;
}

/** One model id's circuit. */
class Circuit {
  #state: CircuitState = 'closed';
  #failures = 0;
  #openedAt = 0;
  #trialInFlight = false;

  readonly #provider: string;
  readonly #modelId: string;
  readonly #settings: CircuitSettings;

  constructor(provider: string, modelId: string, settings: CircuitSettings) {
    this.#provider = provider;
    this.#modelId = modelId;
    this.#settings = settings;
  }

  get state(): CircuitState {
    return this.#state === 'open' && !this.#resetWaiting() ? 'half-open' : this.#state;
  }

  /**
   * Whether the open circuit still waits for `resetMs`. A clock of the caller's that went back
   * before the opening counts as the wait being over, not as a wait of the step's length.
   */
  #resetWaiting(): boolean {
    const elapsed = this.#settings.now() - this.#openedAt;
    return elapsed >= 0 && elapsed < this.#settings.resetMs;
  }

  async call(
    work: () => Promise<LanguageModelResult>,
    callOptions: LanguageModelCallOptions,
  ): Promise<LanguageModelResult> {
    const observed = this.state;
    if (observed === 'open' || (observed === 'half-open' && this.#trialInFlight)) throw this.#failFast();
    const trial = observed === 'half-open';
    if (trial) {
      this.#moveTo('half-open');
      this.#trialInFlight = true;
    }
    try {
      const result = await work();
      this.#failures = 0;
      this.#moveTo('closed');
      return result;
    } catch (error) {
      // A call its caller cancelled says nothing about the provider; one its caller's deadline
      // stopped (the operation's lease ran out while the provider hung) is a timeout, and counts.
      const cancelled = callOptions.abortSignal?.aborted === true && !isDeadlineAbort(callOptions.abortSignal);
      if (isModelCallError(error) && error.isRetryable && !cancelled) {
        this.#failures += 1;
        if (trial || this.#failures >= this.#settings.failureThreshold) {
          this.#openedAt = this.#settings.now();
          this.#moveTo('open');
        }
      }
      throw error;
    } finally {
      if (trial) this.#trialInFlight = false;
    }
  }

  #moveTo(next: CircuitState): void {
    if (next === this.#state) return;
    this.#state = next;
    this.#settings.onStateChange?.(next, this.#modelId);
  }

  #failFast(): ModelCallError {
    const { resetMs, now } = this.#settings;
    // The clock measures durations only (monotonic by default): the time of day is the wall clock's.
    const retryAfterMs = Math.ceil(Math.max(0, this.#openedAt + resetMs - now()));
    const when = this.#trialInFlight
      ? 'after the trial call in flight'
      : `at ${new Date(Date.now() + retryAfterMs).toISOString()} (in ${retryAfterMs} ms)`;
    return new ModelCallError({
      message:
        `The circuit for ${this.#provider}/${this.#modelId} is open after ${this.#failures} consecutive ` +
        `failures; calls fail fast and it will try again ${when}.`,
      retryable: true,
      retryAfterMs,
      notSent: true,
    });
  }
}
