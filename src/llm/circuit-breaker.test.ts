import { describe, expect, it } from 'vitest';
import { useScriptedOpenAIServer } from '../../test/support/use-scripted-openai-server.js';
import { withCircuitBreaker, type CircuitState } from './circuit-breaker.js';
import { createOpenAICompatibleModel } from './openai-compatible.js';

const server = useScriptedOpenAIServer();

const call = { messages: [{ role: 'user' as const, content: 'x' }] };
const unavailable = { status: 503, body: { error: { message: 'down' } } };

function breaker(options: { failureThreshold?: number } = {}) {
  let clock = 1_000_000;
  const states: CircuitState[] = [];
  const model = withCircuitBreaker(
    createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm', provider: 'local' }),
    {
      failureThreshold: options.failureThreshold ?? 3,
      resetMs: 30_000,
      now: () => clock,
      onStateChange: (state) => states.push(state),
    },
  );
  return { model, states, advance: (ms: number) => void (clock += ms) };
}

async function failTimes(
  model: { doGenerate: (options: typeof call) => Promise<unknown> },
  times: number,
): Promise<void> {
  for (let index = 0; index < times; index += 1) await model.doGenerate(call).catch(() => undefined);
}

describe('circuit breaker: opening', () => {
  it('opens after the threshold of consecutive retryable failures and then fails fast without a request', async () => {
    const { model } = breaker();
    server.enqueue(unavailable, unavailable, unavailable);
    await failTimes(model, 3);
    expect(model.state).toBe('open');
    expect(server.requests).toHaveLength(3);
    const error = await model.doGenerate(call).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({
      code: 'MODEL_CALL_FAILED',
      isRetryable: true,
      retryAfterMs: 30_000,
      message: expect.stringMatching(
        /circuit for local\/m is open after 3 consecutive failures.*will try again at .* \(in 30000 ms\)/,
      ),
    });
    expect(server.requests).toHaveLength(3);
  });

  it('says when it tries again by the wall clock, in whole milliseconds, on its default monotonic clock', async () => {
    const model = withCircuitBreaker(
      createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm', provider: 'local' }),
      { failureThreshold: 1, resetMs: 30_000 },
    );
    server.enqueue(unavailable);
    await failTimes(model, 1);
    const before = Date.now();
    const error = (await model.doGenerate(call).catch((thrown: unknown) => thrown)) as Error & { retryAfterMs: number };
    expect(Number.isInteger(error.retryAfterMs)).toBe(true);
    const when = Date.parse(/will try again at (\S+)/.exec(error.message)?.[1] ?? '');
    expect(when).toBeGreaterThanOrEqual(before + error.retryAfterMs - 1_000);
    expect(when).toBeLessThanOrEqual(Date.now() + 30_000);
  });

  it('counts only consecutive failures: a success resets the count', async () => {
    const { model } = breaker();
    server.enqueue(unavailable, unavailable, { text: 'fine' }, unavailable, unavailable);
    await failTimes(model, 5);
    expect(model.state).toBe('closed');
  });

  it('does not count non-retryable errors such as a bad request', async () => {
    const { model } = breaker();
    server.setDefaultReply({ status: 400, body: { error: { message: 'bad request' } } });
    await failTimes(model, 6);
    expect(model.state).toBe('closed');
    expect(server.requests).toHaveLength(6);
  });

  it('opens after 5 failures by default', async () => {
    const model = withCircuitBreaker(createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm' }));
    server.setDefaultReply(unavailable);
    await failTimes(model, 4);
    expect(model.state).toBe('closed');
    await failTimes(model, 1);
    expect(model.state).toBe('open');
  });
});

describe('circuit breaker: a clock that steps back', () => {
  it('lets a trial call through after resetMs, not after the step plus resetMs', async () => {
    const { model, advance } = breaker({ failureThreshold: 1 });
    server.enqueue(unavailable);
    await failTimes(model, 1);
    expect(model.state).toBe('open');
    advance(-3_600_000);
    expect(model.state).toBe('half-open');
    expect(await model.doGenerate(call)).toMatchObject({ text: 'ok' });
    expect(model.state).toBe('closed');
  });
});

describe('circuit breaker: one circuit per model id', () => {
  it("keeps calls to another model id going while one model id's circuit is open", async () => {
    const { model } = breaker();
    const flaky = { ...call, modelId: 'flaky' };
    server.enqueue(unavailable, unavailable, unavailable);
    for (let index = 0; index < 3; index += 1) await model.doGenerate(flaky).catch(() => undefined);
    const error = await model.doGenerate(flaky).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ message: expect.stringContaining('circuit for local/flaky is open') });
    expect(server.requests).toHaveLength(3);
    // The model's own id, and any other, still reach the provider.
    await expect(model.doGenerate(call)).resolves.toMatchObject({ text: 'ok' });
    await expect(model.doGenerate({ ...call, modelId: 'other' })).resolves.toMatchObject({ text: 'ok' });
    expect(server.requests).toHaveLength(5);
    expect(model.state).toBe('closed');
  });

  it('names the model id whose circuit changed', async () => {
    const changes: Array<[CircuitState, string]> = [];
    const model = withCircuitBreaker(
      createOpenAICompatibleModel({ baseURL: server.url, modelId: 'm', provider: 'local' }),
      { failureThreshold: 1, onStateChange: (state, modelId) => changes.push([state, modelId]) },
    );
    server.enqueue(unavailable);
    await model.doGenerate({ ...call, modelId: 'flaky' }).catch(() => undefined);
    expect(changes).toEqual([['open', 'flaky']]);
  });

  it("reports the state of the model's own id", async () => {
    const { model } = breaker();
    server.enqueue(unavailable, unavailable, unavailable);
    await failTimes(model, 3);
    expect(model.state).toBe('open');
  });
});

describe('circuit breaker: recovery', () => {
  it('lets one trial through after resetMs and closes on success', async () => {
    const { model, states, advance } = breaker();
    server.enqueue(unavailable, unavailable, unavailable);
    await failTimes(model, 3);
    advance(10_000);
    await expect(model.doGenerate(call)).rejects.toMatchObject({ retryAfterMs: 20_000 });
    advance(20_000);
    expect(model.state).toBe('half-open');
    expect((await model.doGenerate(call)) as { text: string }).toMatchObject({ text: 'ok' });
    expect(model.state).toBe('closed');
    expect(server.requests).toHaveLength(4);
    expect(states).toEqual(['open', 'half-open', 'closed']);
  });

  it('re-opens when the trial fails', async () => {
    const { model, advance } = breaker();
    server.enqueue(unavailable, unavailable, unavailable, unavailable);
    await failTimes(model, 3);
    advance(30_000);
    await failTimes(model, 1);
    expect(model.state).toBe('open');
    expect(server.requests).toHaveLength(4);
    await expect(model.doGenerate(call)).rejects.toMatchObject({ retryAfterMs: 30_000 });
    expect(server.requests).toHaveLength(4);
  });

  it('fails fast for other calls while the trial is in flight', async () => {
    const { model, advance } = breaker();
    server.enqueue(unavailable, unavailable, unavailable, { delayMs: 100, reply: { text: 'trial' } });
    await failTimes(model, 3);
    advance(30_000);
    const trial = model.doGenerate(call);
    await expect(model.doGenerate(call)).rejects.toMatchObject({
      message: expect.stringMatching(/after the trial call in flight/),
    });
    await expect(trial).resolves.toMatchObject({ text: 'trial' });
    expect(model.state).toBe('closed');
    expect(server.requests).toHaveLength(4);
  });
});
