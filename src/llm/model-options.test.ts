/**
 * The model layer's numeric options are checked at the call that gives them: NaN, a string,
 * 0 attempts or a time a timer cannot wait made every later call fail at once, as a
 * retryable timeout.
 */
import { describe, expect, it } from 'vitest';
import { withCircuitBreaker } from './circuit-breaker.js';
import { createOpenAICompatibleModel } from './openai-compatible.js';
import { withRetries } from './retrying-model.js';

const base = () => createOpenAICompatibleModel({ baseURL: 'http://127.0.0.1:9', modelId: 'm' });
const BAD_TIMES = [Number.NaN, -1, 0, '5', 2 ** 31, Number.POSITIVE_INFINITY];

describe('model options', () => {
  it('refuses a timeout a timer cannot wait, naming the option', () => {
    for (const timeout of BAD_TIMES) {
      expect(() =>
        createOpenAICompatibleModel({ baseURL: 'http://127.0.0.1:9', modelId: 'm', timeout: timeout as number }),
      ).toThrow(
        expect.objectContaining({
          code: 'OPTION_INVALID',
          data: { factory: 'createOpenAICompatibleModel', option: 'timeout' },
        }),
      );
    }
  });

  it('refuses retry budgets and counts that cannot work', () => {
    for (const maxTotalMs of BAD_TIMES)
      expect(() => withRetries(base(), { maxTotalMs: maxTotalMs as number })).toThrow(/option maxTotalMs must be/);
    for (const maxAttempts of [0, 1.5, Number.NaN])
      expect(() => withRetries(base(), { maxAttempts })).toThrow(/option maxAttempts must be a whole number/);
    expect(() => withRetries(base(), { baseDelayMs: -5 })).toThrow(/option baseDelayMs/);
    expect(() => withRetries(base(), { maxAttempts: 1, maxTotalMs: 1, baseDelayMs: 0 })).not.toThrow();
  });

  it('refuses a circuit breaker that would open at once or never wait', () => {
    expect(() => withCircuitBreaker(base(), { failureThreshold: 0 })).toThrow(/option failureThreshold/);
    expect(() => withCircuitBreaker(base(), { resetMs: Number.POSITIVE_INFINITY })).toThrow(/option resetMs/);
    expect(() => withCircuitBreaker(base(), { failureThreshold: 1, resetMs: 1 })).not.toThrow();
  });
});

describe('model options: what the refusal shows', () => {
  it('shows NaN as NaN and a bigint without failing on it', () => {
    expect(() => withRetries(base(), { maxTotalMs: Number.NaN })).toThrow(/\(got NaN\)/);
    expect(() => withRetries(base(), { maxAttempts: 3n as unknown as number })).toThrow(
      expect.objectContaining({ code: 'OPTION_INVALID', message: expect.stringContaining('(got 3)') }),
    );
  });
});
