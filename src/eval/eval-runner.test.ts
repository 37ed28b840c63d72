import { describe, expect, it } from 'vitest';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import type { MockLanguageModel } from '../../test/support/mock-language-model.js';
import type { LanguageModelCallOptions } from '../llm/language-model.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { parseEvalDataset } from './eval-dataset.js';
import type { EvalDataset } from './eval-dataset.js';
import type { EvalModels, EvalResultLine } from './eval-results.js';
import { evalScope, runEval } from './eval-runner.js';
import type { EvalRunOptions } from './eval-runner.js';

const MODELS: EvalModels = { memory: 'mock/memory', answer: 'mock/answer', judge: 'mock/judge' };

/** A LoCoMo conversation with three questions, and a second with one. */
function dataset(): EvalDataset {
  return parseEvalDataset([
    {
      sample_id: 'walk 1',
      conversation: {
        speaker_a: 'Ana',
        speaker_b: 'Ben',
        session_1_date_time: '9:00 am on 2 May, 2023',
        session_1: [
          { speaker: 'Ana', dia_id: 'D1:1', text: 'I walked to Porto last week.' },
          { speaker: 'Ben', dia_id: 'D1:2', text: 'That is a long walk.' },
        ],
      },
      qa: [
        { question: 'Where did Ana walk to?', answer: 'Porto', evidence: ['D1:1'], category: 4 },
        { question: 'When did Ana walk?', answer: 'last week', evidence: ['D1:1'], category: 2 },
        { question: 'What car does Ana drive?', evidence: ['D1:1'], category: 5, adversarial_answer: 'a Fiat' },
      ],
    },
    {
      sample_id: 'walk-2',
      conversation: {
        speaker_a: 'Cy',
        speaker_b: 'Di',
        session_1_date_time: '9:00 am on 3 May, 2023',
        session_1: [{ speaker: 'Cy', dia_id: 'D1:1', text: 'I keep bees.' }],
      },
      qa: [{ question: 'What does Cy keep?', answer: 'bees', evidence: ['D1:1'], category: 1 }],
    },
  ]);
}

const userPrompt = (options: LanguageModelCallOptions): string => options.messages.at(-1)?.content ?? '';

function models() {
  const memory = createMockLanguageModel((options) => ({
    text: `IMPORTANCE:0.9\n${/\[\d+\] user: ([^\n]*)\n(.*)/.exec(userPrompt(options))?.[2] ?? 'nothing'}`,
  }));
  const answer = createMockLanguageModel((options) =>
    options.messages.some((message) => message.content.includes('Porto')) ? 'Porto' : 'I do not know.',
  );
  const judge = createMockLanguageModel((options) =>
    userPrompt(options).includes('<response>\nPorto\n</response>') ? 'Verdict: yes' : 'Verdict: no',
  );
  return { memory, answer, judge };
}

function options(overrides: Partial<EvalRunOptions> = {}): EvalRunOptions & { lines: EvalResultLine[] } {
  const lines: EvalResultLine[] = [];
  const { memory, answer, judge } = models();
  return {
    dataset: dataset(),
    baseline: 'memory',
    answerModel: answer,
    judgeModel: judge,
    models: MODELS,
    memory: { model: memory, store: createInMemoryStore(), thresholds: { observeMinTokens: 1 } },
    onResult: (line) => void lines.push(line),
    runTag: 'test',
    lines,
    ...overrides,
  };
}

describe('eval runner', () => {
  it('remembers a conversation once for all its questions, and counts its memory tokens on the first', async () => {
    const run = options();
    const outcome = await runEval(run);
    expect(outcome).toMatchObject({ interrupted: false, tenantId: 'eval-test' });
    expect(run.lines.map((line) => [line.question_id, line.question_type, line.hypothesis, line.verdict])).toEqual([
      ['walk 1:q1', 'category-4', 'Porto', 'correct'],
      ['walk 1:q2', 'category-2', 'Porto', 'correct'],
      ['walk 1:q3', 'category-5', 'Porto', 'correct'],
      ['walk-2:q1', 'category-1', 'I do not know.', 'incorrect'],
    ]);
    // One observer call a conversation (one step each); the mock counts 10 and 5 tokens a call.
    expect(run.lines.map((line) => [line.memory_input_tokens, line.memory_output_tokens])).toEqual([
      [10, 5],
      [0, 0],
      [0, 0],
      [10, 5],
    ]);
    expect(run.lines[0]).toMatchObject({
      category: 4,
      abstention: false,
      baseline: 'memory',
      evidence_hit: true,
      answer_input_tokens: 10,
      models: MODELS,
    });
    expect(run.lines[2]).toMatchObject({ abstention: true, evidence_hit: null });
    expect(outcome.results).toEqual(run.lines);
  });

  it('skips the questions it is told to, and calls no model for a conversation left with none', async () => {
    const memory = models().memory;
    const run = options({
      skipQuestionIds: new Set(['walk 1:q1', 'walk 1:q2', 'walk 1:q3']),
      memory: { model: memory, store: createInMemoryStore(), thresholds: { observeMinTokens: 1 } },
    });
    await runEval(run);
    expect(run.lines.map((line) => line.question_id)).toEqual(['walk-2:q1']);
    expect((run.answerModel as MockLanguageModel).calls).toHaveLength(1);
    expect(memory.calls).toHaveLength(1);
  });

  it('redacts the secrets an answer or a judge quotes before the line is written, unless told not to', async () => {
    const secret = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
    const answer = createMockLanguageModel((call) =>
      call.messages[0]?.content.startsWith('You grade answers')
        ? `Verdict: no, the response gives the token ${secret}`
        : `The token is ${secret}`,
    );
    const redacted = options({ answerModel: answer, judgeModel: undefined, baseline: 'none' });
    await runEval(redacted);
    expect(redacted.lines.length).toBeGreaterThan(0);
    for (const line of redacted.lines) {
      expect(line.hypothesis).toBe('The token is [REDACTED:github_token]');
      expect(line.judge_reason).toContain('[REDACTED:github_token]');
      expect(JSON.stringify(line)).not.toContain(secret);
    }
    const kept = options({ answerModel: answer, judgeModel: undefined, baseline: 'none', redactSecrets: false });
    await runEval(kept);
    expect(kept.lines[0]?.hypothesis).toBe(`The token is ${secret}`);
  });

  it('asks the judge with --judge-model as the model id, and the answer model with its own', async () => {
    const answer = createMockLanguageModel('Porto');
    const run = options({ answerModel: answer, judgeModel: undefined, judgeModelId: 'judge-large', baseline: 'none' });
    await runEval(run);
    const judged = answer.calls.filter((call) => call.messages[0]?.content.startsWith('You grade answers'));
    expect(judged).toHaveLength(4);
    expect(judged.every((call) => call.modelId === 'judge-large')).toBe(true);
    expect(answer.calls.filter((call) => call.modelId === undefined)).toHaveLength(4);
  });

  it('stops when aborted: the question under way is not reported, and the run says it was interrupted', async () => {
    const controller = new AbortController();
    const run = options({ signal: controller.signal });
    const answer = createMockLanguageModel((call) => {
      if (call.messages.at(-1)?.content.includes('When did Ana walk?')) controller.abort();
      if (call.abortSignal?.aborted) throw new Error('aborted');
      return 'Porto';
    });
    const outcome = await runEval({ ...run, answerModel: answer });
    expect(outcome.interrupted).toBe(true);
    expect(run.lines.map((line) => line.question_id)).toEqual(['walk 1:q1']);
  });

  it('stops and rethrows when a result cannot be recorded', async () => {
    const run = options({
      onResult: () => {
        throw new Error('disk full');
      },
    });
    await expect(runEval(run)).rejects.toThrow('disk full');
  });

  it('needs the memory option for the memory baseline, and a run store to replay history', async () => {
    await expect(runEval(options({ memory: undefined }))).rejects.toThrow(
      'the memory baseline needs the memory option',
    );
    await expect(
      runEval(options({ memory: { model: models().memory, store: createInMemoryStore(), historyMaxTokens: 100 } })),
    ).rejects.toThrow('needs a runStore');
  });
});

describe('eval runner: scopes', () => {
  it("gives each conversation a valid scope of the run's tenant, its position keeping ids apart", () => {
    expect(evalScope('eval-x', { index: 0, id: 'walk 1/ä' })).toEqual({
      tenantId: 'eval-x',
      conversationId: '1-walk_1__',
      agentId: 'eval',
    });
    expect(evalScope('eval-x', { index: 1, id: 'walk 1/ä' }).conversationId).toBe('2-walk_1__');
    expect(evalScope('eval-x', { index: 0, id: 'x'.repeat(300) }).conversationId).toHaveLength(128);
  });
});
