import { afterEach, describe, expect, it, vi } from 'vitest';
import { ModelCallError } from '../core/errors.js';
import type { LanguageModel, LanguageModelCallOptions, LanguageModelResult } from './language-model.js';
import { DEFAULT_RETRY_POLICY, withoutRetries, withRetries, type RetryPolicy } from './retrying-model.js';

const OK: LanguageModelResult = {
  text: 'ok',
  toolCalls: [],
  finishReason: 'stop',
  usage: { inputTokens: 0, outputTokens: 0 },
};
const call = { messages: [{ role: 'user' as const, content: 'x' }] };

/** A model that throws the scripted errors in turn, then answers OK. */
function failingModel(...errors: unknown[]): LanguageModel & { calls: LanguageModelCallOptions[] } {
  const calls: LanguageModelCallOptions[] = [];
  return {
    specificationVersion: 'v1',
    provider: 'stub',
    modelId: 'stub-model',
    calls,
    async doGenerate(options) {
      calls.push(options);
      if (calls.length <= errors.length) throw errors[calls.length - 1];
      return OK;
    },
  };
}

const retryable = (retryAfterMs?: number) =>
  new ModelCallError({ message: 'busy', statusCode: 503, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });

/** A fake clock that sleeping advances, and a record of the waits. */
function fakeTime(random = 1): { waits: number[]; policy: Required<Pick<RetryPolicy, 'sleep' | 'now' | 'random'>> } {
  let clock = 0;
  const waits: number[] = [];
  return {
    waits,
    policy: {
      now: () => clock,
      random: () => random,
      sleep: async (ms) => {
        waits.push(ms);
        clock += ms;
      },
    },
  };
}

describe('retrying model: backoff', () => {
  it('backs off exponentially from 500 ms with full jitter', async () => {
    const time = fakeTime(1);
    const model = failingModel(retryable(), retryable(), retryable());
    expect(await withRetries(model, time.policy).doGenerate(call)).toEqual(OK);
    expect(time.waits).toEqual([500, 1_000, 2_000]);
    const half = fakeTime(0.5);
    await withRetries(failingModel(retryable(), retryable()), half.policy).doGenerate(call);
    expect(half.waits).toEqual([250, 500]);
  });

  it('caps each backoff wait at 10 s', async () => {
    const time = fakeTime(0.999);
    const model = failingModel(retryable(), retryable(), retryable(), retryable(), retryable(), retryable());
    await withRetries(model, { ...time.policy, maxAttempts: 7 }).doGenerate(call);
    expect(time.waits.map(Math.round)).toEqual([500, 999, 1_998, 3_996, 7_992, 9_990]);
  });

  it('never waits less than retryAfterMs', async () => {
    const time = fakeTime(0);
    await withRetries(failingModel(retryable(3_000)), time.policy).doGenerate(call);
    expect(time.waits).toEqual([3_000]);
  });

  it('gives up at once when retryAfterMs is more than the remaining budget', async () => {
    const time = fakeTime(1);
    const error = retryable(200_000);
    const model = failingModel(error);
    await expect(withRetries(model, time.policy).doGenerate(call)).rejects.toBe(error);
    expect(model.calls).toHaveLength(1);
    expect(time.waits).toEqual([]);
  });

  it('reports each retry to onRetry', async () => {
    const time = fakeTime(1);
    const events: number[] = [];
    await withRetries(failingModel(retryable()), {
      ...time.policy,
      onRetry: (event) => events.push(event.attempt),
    }).doGenerate(call);
    expect(events).toEqual([1]);
  });
});

describe('retrying model: limits', () => {
  it('stops at maxAttempts and throws the last error', async () => {
    const time = fakeTime(1);
    const last = retryable();
    const model = failingModel(retryable(), retryable(), retryable(), last, retryable());
    await expect(withRetries(model, time.policy).doGenerate(call)).rejects.toBe(last);
    expect(model.calls).toHaveLength(DEFAULT_RETRY_POLICY.maxAttempts);
  });

  it('stops when the next wait would overrun maxTotalMs', async () => {
    const time = fakeTime(1);
    const model = failingModel(retryable(), retryable(), retryable(), retryable());
    await expect(withRetries(model, { ...time.policy, maxTotalMs: 1_200 }).doGenerate(call)).rejects.toBeInstanceOf(
      ModelCallError,
    );
    expect(time.waits).toEqual([500]);
    expect(model.calls).toHaveLength(2);
  });

  it('aborts a call still running when the total budget runs out', async () => {
    const hanging: LanguageModel = {
      specificationVersion: 'v1',
      provider: 'stub',
      modelId: 'm',
      doGenerate: (options) =>
        new Promise((_, reject) => {
          options.abortSignal?.addEventListener('abort', () =>
            reject(new ModelCallError({ message: 'aborted', retryable: false })),
          );
        }),
    };
    // The model never answers by itself: only the budget's abort can end the call.
    await expect(withRetries(hanging, { maxTotalMs: 100 }).doGenerate(call)).rejects.toMatchObject({
      isRetryable: true,
      message: expect.stringMatching(/100 ms retry budget/),
    });
  });

  it('keeps its default total budget below the 300 s operation lease', () => {
    expect(DEFAULT_RETRY_POLICY).toEqual({
      maxAttempts: 4,
      maxTotalMs: 120_000,
      baseDelayMs: 500,
      factor: 2,
      maxDelayMs: 10_000,
    });
    expect(DEFAULT_RETRY_POLICY.maxTotalMs).toBeLessThan(300_000);
  });
});

describe('retrying model: what is not retried', () => {
  it('throws non-retryable and foreign errors at once', async () => {
    const time = fakeTime(1);
    const badRequest = new ModelCallError({ message: 'bad', statusCode: 400 });
    const bad = failingModel(badRequest);
    await expect(withRetries(bad, time.policy).doGenerate(call)).rejects.toBe(badRequest);
    const plain = failingModel(new TypeError('bug'));
    await expect(withRetries(plain, time.policy).doGenerate(call)).rejects.toThrow('bug');
    expect(bad.calls.length + plain.calls.length).toBe(2);
  });

  it('does not retry once the caller aborted', async () => {
    const controller = new AbortController();
    const model = failingModel(retryable(), retryable());
    const policy = { ...fakeTime(1).policy, sleep: async () => controller.abort() };
    await expect(
      withRetries(model, policy).doGenerate({ ...call, abortSignal: controller.signal }),
    ).rejects.toBeInstanceOf(ModelCallError);
    expect(model.calls).toHaveLength(1);
    const already = failingModel(retryable());
    await expect(
      withRetries(already, fakeTime(1).policy).doGenerate({ ...call, abortSignal: AbortSignal.abort() }),
    ).rejects.toBeInstanceOf(ModelCallError);
    expect(already.calls).toHaveLength(1);
  });

  it('replaces an inner retry layer instead of stacking a second one', async () => {
    const model = failingModel(...Array.from({ length: 20 }, () => retryable()));
    const time = fakeTime(1);
    const inner = withRetries(model, { ...time.policy, maxAttempts: 3 });
    const outer = withRetries(inner, { ...time.policy, maxAttempts: 2 });
    await expect(outer.doGenerate(call)).rejects.toBeInstanceOf(ModelCallError);
    expect(model.calls).toHaveLength(2);
    expect(withoutRetries(outer)).toBe(model);
    expect(outer.modelId).toBe('stub-model');
  });
});

describe('retrying model: the wall clock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('still retries when the wall clock steps forward past the budget during a call', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const model = failingModel(retryable());
    const inner = model.doGenerate.bind(model);
    model.doGenerate = async (options) => {
      vi.setSystemTime(Date.now() + 2 * DEFAULT_RETRY_POLICY.maxTotalMs);
      return inner(options);
    };
    const result = await withRetries(model, { sleep: async () => undefined, random: () => 0 }).doGenerate(call);
    expect(result).toEqual(OK);
    expect(model.calls).toHaveLength(2);
  });
});
