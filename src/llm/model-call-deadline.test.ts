/**
 * A call its caller's deadline stopped (a signal aborted with a `TimeoutError`: the operation
 * worker's cut-off at 80% of its lease, `AbortSignal.timeout`) timed out: retryable, and counted
 * by the circuit breaker. A call its caller cancelled is neither.
 */
import { describe, expect, it } from 'vitest';
import { useScriptedOpenAIServer } from '../../test/support/use-scripted-openai-server.js';
import { ModelCallError } from '../core/errors.js';
import { isDeadlineAbort, toModelCallError } from './_model-call-errors.js';
import { withCircuitBreaker } from './circuit-breaker.js';
import type { LanguageModel } from './language-model.js';
import { createOpenAICompatibleModel } from './openai-compatible.js';

const url = 'http://127.0.0.1:1/v1/chat/completions';
const deadline = () => new DOMException('The model call outlasted the lease.', 'TimeoutError');
const call = { messages: [{ role: 'user' as const, content: 'x' }] };

describe('toModelCallError: the caller stopped the call', () => {
  const context = { url, timeoutMs: 90_000, timedOut: false };

  it('is a retryable timeout when the reason is a deadline, naming it', () => {
    const error = toModelCallError(new Error('aborted'), { ...context, aborted: true, abortReason: deadline() });
    expect(error.isRetryable).toBe(true);
    expect(error.message).toMatch(/ran past the caller's deadline: The model call outlasted the lease\./);
  });

  it('stays a non-retryable cancellation for any other reason', () => {
    for (const abortReason of [undefined, new DOMException('stop', 'AbortError'), new Error('forgotten')]) {
      const error = toModelCallError(new Error('aborted'), { ...context, aborted: true, abortReason });
      expect(error.isRetryable).toBe(false);
      expect(error.message).toMatch(/aborted by the caller/);
    }
  });

  it('isDeadlineAbort tells the two apart', () => {
    const cancelled = new AbortController();
    cancelled.abort();
    const stopped = new AbortController();
    stopped.abort(deadline());
    expect([isDeadlineAbort(undefined), isDeadlineAbort(cancelled.signal), isDeadlineAbort(stopped.signal)]).toEqual([
      false,
      false,
      true,
    ]);
    expect(isDeadlineAbort(new AbortController().signal)).toBe(false);
  });
});

describe('circuit breaker: calls stopped by their caller', () => {
  // A model that fails every call as a timeout once its caller's signal fired.
  const failing: LanguageModel = {
    specificationVersion: 'v1',
    provider: 'local',
    modelId: 'm',
    doGenerate: async () => {
      throw new ModelCallError({ message: 'timed out', retryable: true });
    },
  };
  const aborted = (reason?: unknown) => {
    const controller = new AbortController();
    controller.abort(reason);
    return controller.signal;
  };

  it('counts calls a deadline stopped, and opens', async () => {
    const model = withCircuitBreaker(failing, { failureThreshold: 2 });
    for (let index = 0; index < 2; index++)
      await model.doGenerate({ ...call, abortSignal: aborted(deadline()) }).catch(() => undefined);
    expect(model.state).toBe('open');
  });

  it('does not count calls their caller cancelled', async () => {
    const model = withCircuitBreaker(failing, { failureThreshold: 2 });
    for (let index = 0; index < 3; index++)
      await model.doGenerate({ ...call, abortSignal: aborted() }).catch(() => undefined);
    expect(model.state).toBe('closed');
  });
});

describe('an OpenAI-compatible call whose caller stops it while the server hangs', () => {
  const server = useScriptedOpenAIServer({ delayMs: 600_000, reply: { text: 'late' } });

  it('at a deadline: a retryable timeout; cancelled: not retryable', async () => {
    const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' });
    const stop = async (reason?: unknown) => {
      const controller = new AbortController();
      const pending = model.doGenerate({ ...call, abortSignal: controller.signal }).catch((error: unknown) => error);
      // Once the request reached the server.
      while (server.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 2));
      server.requests.length = 0;
      controller.abort(reason);
      return (await pending) as ModelCallError;
    };
    const timedOut = await stop(deadline());
    expect(timedOut).toMatchObject({ isRetryable: true, message: expect.stringMatching(/caller's deadline/) });
    const cancelled = await stop();
    expect(cancelled).toMatchObject({ isRetryable: false, message: expect.stringMatching(/aborted by the caller/) });
  });
});
