import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { startSelfSignedServer } from '../../test/support/tls-servers.js';
import type { MockReply } from '../../test/support/mock-language-model.js';
import { HarnessMemoryError, ModelCallError } from '../core/errors.js';
import { withCircuitBreaker } from '../llm/circuit-breaker.js';
import type { LanguageModel, LanguageModelCallOptions } from '../llm/language-model.js';
import { createOpenAICompatibleModel } from '../llm/openai-compatible.js';
import { withRetries } from '../llm/retrying-model.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { parseEvalDataset } from './eval-dataset.js';
import type { EvalDataset } from './eval-dataset.js';
import type { EvalResultLine } from './eval-results.js';
import { runEval } from './eval-runner.js';
import type { EvalRunOptions } from './eval-runner.js';

/** Two LoCoMo conversations: three questions, then one. */
function dataset(): EvalDataset {
  const conversation = (text: string) => ({
    speaker_a: 'Ana',
    speaker_b: 'Ben',
    session_1_date_time: '9:00 am on 2 May, 2023',
    session_1: [{ speaker: 'Ana', dia_id: 'D1:1', text }],
  });
  return parseEvalDataset([
    {
      sample_id: 'walk-1',
      conversation: conversation('I walked to Porto last week.'),
      qa: [
        { question: 'Where did Ana walk to?', answer: 'Porto', evidence: ['D1:1'], category: 4 },
        { question: 'When did Ana walk?', answer: 'last week', evidence: ['D1:1'], category: 2 },
        { question: 'Who walked?', answer: 'Ana', evidence: ['D1:1'], category: 1 },
      ],
    },
    {
      sample_id: 'walk-2',
      conversation: conversation('I keep bees.'),
      qa: [{ question: 'What does Ana keep?', answer: 'bees', evidence: ['D1:1'], category: 1 }],
    },
  ]);
}

const OBSERVATION = 'IMPORTANCE:0.9\nAna walked.';
const MEMORY_SETTING = 'HARNESS_MEMORY_LLM_BASE_URL (test)';

let closedUrl: string;
/** What the openai-compatible model throws when its server refuses the connection. */
let refused: Error;

beforeAll(async () => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  closedUrl = `http://127.0.0.1:${port}/v1`;
  refused = await closedPortModel()
    .doGenerate({ messages: [{ role: 'user', content: 'hello' }] })
    .then(
      () => new Error('the closed port answered'),
      (error: unknown) => error as Error,
    );
  expect(refused.message).toContain('Could not reach');
});

function closedPortModel(): LanguageModel {
  return createOpenAICompatibleModel({ baseURL: closedUrl, modelId: 'memory', apiKey: 'test' });
}

/** `model` counted, as the eval's memory model is built: no retries of its own, behind a circuit breaker. */
function asMemoryModel(model: LanguageModel): LanguageModel & { calls: number } {
  const breaker = withCircuitBreaker(withRetries(model, { maxAttempts: 1 }), { failureThreshold: 2, resetMs: 1 });
  const counted = {
    specificationVersion: 'v1' as const,
    provider: model.provider,
    modelId: 'memory',
    calls: 0,
    doGenerate(options: LanguageModelCallOptions) {
      counted.calls++;
      return breaker.doGenerate(options);
    },
  };
  return counted;
}

function run(memoryModel: LanguageModel, overrides: Partial<EvalRunOptions> = {}) {
  const lines: EvalResultLine[] = [];
  const answer = createMockLanguageModel((options) =>
    options.messages[0]?.content.startsWith('You grade answers') ? 'Verdict: yes' : 'Porto',
  );
  const options: EvalRunOptions = {
    dataset: dataset(),
    baseline: 'memory',
    answerModel: answer,
    models: { memory: 'test/memory', answer: 'test/answer', judge: 'test/answer' },
    modelSettings: { memory: MEMORY_SETTING, answer: 'OPENAI_BASE_URL (test)' },
    // Every wait of the retries as short as it can be: a run that retries ends soon too.
    memory: { model: memoryModel, store: createInMemoryStore(), thresholds: { observeMinTokens: 1 }, retryDelayMs: 0 },
    onResult: (line) => void lines.push(line),
    runTag: 'test',
    ...overrides,
  };
  return { options, lines, answer };
}

async function stopped(promise: Promise<unknown>): Promise<HarnessMemoryError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!HarnessMemoryError.isInstance(error)) throw new Error(`expected the run to stop, got ${String(error)}`);
  return error;
}

/** A mock memory model: each reply in turn, then `after` for every later call. */
function scripted(replies: MockReply[], after: MockReply): LanguageModel {
  const model = createMockLanguageModel(after);
  model.enqueue(...replies);
  return model;
}

describe('eval runner: a model whose server cannot be reached', () => {
  it('stops the run at the first refused call of the memory model: no question asked, its address and setting named', async () => {
    const memory = asMemoryModel(closedPortModel());
    const { options, lines, answer } = run(memory);
    const error = await stopped(runEval(options));
    expect(error.code).toBe('MODEL_CALL_FAILED');
    expect(error.detail).toContain(
      'the memory model test/memory cannot be reached (ECONNREFUSED), so the eval stopped before any question ' +
        `was answered: Could not reach ${closedUrl}/chat/completions`,
    );
    expect(error.detail).toContain(`Its server is set by ${MEMORY_SETTING}.`);
    // One call, not the operation worker's retries, each waiting for the circuit.
    expect(memory.calls).toBe(1);
    expect(lines).toEqual([]);
    expect(answer.calls).toEqual([]);
  });

  it('stops as well at a port fetch never connects to (9, as in OPENAI_BASE_URL=http://127.0.0.1:9/v1)', async () => {
    const blocked = createOpenAICompatibleModel({
      baseURL: 'http://127.0.0.1:9/v1',
      modelId: 'memory',
      apiKey: 'test',
    });
    const memory = asMemoryModel(blocked);
    const { options, lines } = run(memory);
    const error = await stopped(runEval(options));
    expect(error.detail).toContain('the memory model test/memory cannot be reached (blocked port)');
    expect(memory.calls).toBe(1);
    expect(lines).toEqual([]);
  });

  it('stops as well at a memory model whose certificate this machine refuses (self-signed)', async () => {
    const trap = await startSelfSignedServer();
    try {
      const memory = asMemoryModel(
        createOpenAICompatibleModel({ baseURL: trap.url, modelId: 'memory', apiKey: 'test' }),
      );
      const { options, lines } = run(memory);
      const error = await stopped(runEval(options));
      expect(error.detail).toContain('the memory model test/memory cannot be reached (DEPTH_ZERO_SELF_SIGNED_CERT)');
      expect(error.detail).toContain('NODE_EXTRA_CA_CERTS');
      expect(memory.calls).toBe(1);
      expect(lines).toEqual([]);
    } finally {
      await trap.close();
    }
  });

  it('still retries a connection failure of a memory model that answered before, as a 5xx', async () => {
    const memory = asMemoryModel(scripted([OBSERVATION, refused, OBSERVATION], OBSERVATION));
    const { options, lines } = run(memory);
    const outcome = await runEval(options);
    expect(outcome.interrupted).toBe(false);
    expect(lines.map((line) => line.error)).toEqual([undefined, undefined, undefined, undefined]);
    expect(memory.calls).toBe(3);
  });

  it('still retries a 503 of a memory model that has not answered yet', async () => {
    const unavailable = new ModelCallError({ message: 'HTTP 503: overloaded', statusCode: 503 });
    const memory = asMemoryModel(scripted([unavailable], OBSERVATION));
    const { options, lines } = run(memory);
    await runEval(options);
    expect(lines.map((line) => line.error)).toEqual([undefined, undefined, undefined, undefined]);
    expect(memory.calls).toBe(3);
  });

  it('stops before the next conversation when a memory model that answered before stays unreachable through its retries', async () => {
    // Its circuit opens after two failures: the calls it fails fast count as the refusal that opened it.
    const memory = asMemoryModel(scripted([OBSERVATION], refused));
    const { options, lines } = run(memory);
    const error = await stopped(runEval(options));
    expect(error.detail).toContain(
      'the memory model test/memory cannot be reached (ECONNREFUSED), so the eval stopped after 3 question(s) ' +
        'were answered in this run',
    );
    expect(lines.map((line) => line.question_id)).toEqual(['walk-1:q1', 'walk-1:q2', 'walk-1:q3']);
  });

  it('stops the run when the answer model cannot be reached after its retries, without recording the question', async () => {
    const answer = createMockLanguageModel(refused);
    const { options, lines } = run(asMemoryModel(scripted([], OBSERVATION)), { answerModel: answer, baseline: 'none' });
    const error = await stopped(runEval(options));
    expect(error.detail).toContain('the answer model test/answer cannot be reached (ECONNREFUSED)');
    expect(error.detail).toContain('Its server is set by OPENAI_BASE_URL (test).');
    expect(answer.calls).toHaveLength(1);
    expect(lines).toEqual([]);
  });

  it('is an interruption, not this error, when the caller stopped the run', async () => {
    const controller = new AbortController();
    const memory = asMemoryModel(
      createMockLanguageModel(() => {
        controller.abort();
        return refused;
      }),
    );
    const { options } = run(memory, { signal: controller.signal });
    const outcome = await runEval(options);
    expect(outcome.interrupted).toBe(true);
  });
});
