import { describe, expect, it } from 'vitest';
import { resultLine } from '../../test/support/eval-result-lines.js';
import { formatEvalTable, percentile, summarizeEvalResults } from './eval-report.js';
import type { EvalResultLine } from './eval-results.js';

const models = { memory: 'openai/gpt-5-mini', answer: 'openai/gpt-5-mini', judge: 'openai/gpt-4o' };

function failed(stage: 'memory' | 'answer' | 'judge', overrides: Partial<EvalResultLine>): EvalResultLine {
  return resultLine({
    verdict: null,
    hypothesis: stage === 'judge' ? 'x' : null,
    error: { stage, message: 'HTTP 503' },
    ...overrides,
  });
}

describe('eval report: percentile', () => {
  it.each([
    [[1, 2, 3, 4], 0.5, 2.5],
    [[4, 1, 3, 2], 0.5, 2.5],
    [[7], 0.95, 7],
    [[5, 1, 9], 0, 1],
    [[5, 1, 9], 1, 9],
    [Array.from({ length: 100 }, (_unused, index) => index + 1), 0.95, 95.05],
  ])('percentile(%j, %s) is %s', (values, fraction, expected) => {
    expect(percentile(values, fraction)).toBeCloseTo(expected, 10);
  });

  it('is null for no values and leaves its input unsorted', () => {
    expect(percentile([], 0.5)).toBeNull();
    const values = [3, 1, 2];
    percentile(values, 0.5);
    expect(values).toEqual([3, 1, 2]);
  });

  it.each([-0.1, 1.5, Number.NaN])('refuses the fraction %s', (fraction) => {
    expect(() => percentile([1], fraction)).toThrow(RangeError);
  });
});

describe('eval report: LongMemEval summary', () => {
  const results: EvalResultLine[] = [
    resultLine({
      question_id: 'u1',
      snippet_tokens: 100,
      memory_input_tokens: 1000,
      memory_output_tokens: 100,
      answer_input_tokens: 300,
    }),
    resultLine({
      question_id: 'u2',
      verdict: 'incorrect',
      evidence_hit: false,
      snippet_tokens: 300,
      memory_input_tokens: 2000,
      memory_output_tokens: 200,
      answer_input_tokens: 500,
    }),
    resultLine({ question_id: 'u3', verdict: 'unparsable', snippet_tokens: 200 }),
    failed('memory', {
      question_id: 'u4',
      evidence_hit: null,
      snippet_tokens: 0,
      memory_input_tokens: 500,
      memory_output_tokens: 0,
      answer_input_tokens: 0,
    }),
    resultLine({ question_id: 't1', question_type: 'temporal-reasoning', evidence_hit: false, snippet_tokens: 400 }),
    failed('judge', {
      question_id: 't2',
      question_type: 'temporal-reasoning',
      evidence_hit: true,
      snippet_tokens: 500,
    }),
    resultLine({
      question_id: 't3_abs',
      question_type: 'temporal-reasoning',
      abstention: true,
      evidence_hit: null,
      snippet_tokens: 600,
    }),
    resultLine({
      question_id: 'p1',
      question_type: 'single-session-preference',
      evidence_hit: null,
      snippet_tokens: 700,
    }),
  ];
  const summary = summarizeEvalResults(results, {
    format: 'longmemeval',
    baseline: 'memory',
    models,
    wallTimeMs: 3_725_400,
  });

  it('counts accuracy over judged questions, errors apart, an unparsable verdict as not correct', () => {
    expect(summary.questions).toBe(8);
    expect(summary.accuracy).toMatchObject({
      overall: 4 / 6,
      correct: 4,
      judged: 6,
      errors: 2,
      excluded_from_overall: [],
    });
    expect(summary.accuracy.by_type).toEqual({
      'single-session-user': { accuracy: 1 / 3, correct: 1, judged: 3, errors: 1, unparsable: 1 },
      'single-session-preference': { accuracy: 1, correct: 1, judged: 1, errors: 0, unparsable: 0 },
      'temporal-reasoning': { accuracy: 1, correct: 2, judged: 2, errors: 1, unparsable: 0 },
    });
    expect(Object.keys(summary.accuracy.by_type)).toEqual([
      'single-session-user',
      'single-session-preference',
      'temporal-reasoning',
    ]);
    expect(summary.accuracy.abstention).toEqual({ accuracy: 1, correct: 1, judged: 1, errors: 0, unparsable: 0 });
    expect(summary.errors).toEqual({ total: 2, memory: 1, answer: 0, judge: 1 });
    expect(summary.unparsable).toBe(1);
    expect(summary.by_category).toBeUndefined();
  });

  it('counts evidence recall over the questions whose answer can appear in memory', () => {
    expect(summary.evidence_recall).toMatchObject({ recall: 3 / 5, hits: 3, counted: 5 });
    expect(summary.evidence_recall.by_type['temporal-reasoning']).toEqual({ recall: 0.5, hits: 1, counted: 2 });
    expect(summary.evidence_recall.by_type['single-session-preference']).toEqual({ recall: null, hits: 0, counted: 0 });
  });

  it('takes snippet tokens over the questions whose memory was built, and totals every token spent', () => {
    expect(summary.snippet_tokens.median).toBe(400);
    expect(summary.snippet_tokens.p95).toBeCloseTo(670, 9);
    expect(summary.memory_input_tokens).toEqual({ total: 1000 + 2000 + 500 + 3000 * 5, per_question: 18_500 / 8 });
    expect(summary.memory_output_tokens.total).toBe(100 + 200 + 0 + 200 * 5);
    expect(summary.answer_input_tokens).toEqual({ total: 300 + 500 + 0 + 400 * 5, per_question: 2800 / 8 });
    expect(summary).toMatchObject({ wall_time_ms: 3_725_400, baseline: 'memory', models, format: 'longmemeval' });
  });

  it('prints a table by question type with the costs, the models and the baseline', () => {
    expect(formatEvalTable(summary)).toBe(
      [
        'type                       questions  correct  accuracy  errors  evidence recall',
        'single-session-user                4        1     33.3%       1      66.7% (2/3)',
        'single-session-preference          1        1    100.0%       0                -',
        'temporal-reasoning                 3        2    100.0%       1      50.0% (1/2)',
        'overall                            8        4     66.7%       2      60.0% (3/5)',
        'abstention                         1        1    100.0%       0                -',
        '',
        'snippet tokens: median 400, p95 670',
        'memory model: 18,500 input, 1,300 output tokens (2,313 / 163 per question)',
        'answer model: 2,800 input tokens (350 per question)',
        'errors: 2 (memory 1, answer 0, judge 1); unparsable verdicts: 1',
        'wall time: 1h 2m 5s',
        'baseline: memory; models: memory openai/gpt-5-mini, answer openai/gpt-5-mini, judge openai/gpt-4o',
      ].join('\n'),
    );
  });

  it('shows dashes for a run with no results', () => {
    const empty = summarizeEvalResults([], {
      format: 'longmemeval',
      baseline: 'none',
      models: { ...models, memory: null },
      wallTimeMs: 999,
    });
    expect(empty.accuracy.overall).toBeNull();
    expect(empty.snippet_tokens).toEqual({ median: null, p95: null });
    const table = formatEvalTable(empty);
    expect(table).toContain('overall             0        0         -       0                -');
    expect(table).toContain('snippet tokens: median -, p95 -');
    expect(table).toContain('wall time: 1s');
    expect(table).toContain('baseline: none; models: memory -,');
  });
});

describe('eval report: LoCoMo summary', () => {
  const results: EvalResultLine[] = [
    resultLine({ question_id: 'c:q1', question_type: 'category-1', category: 1 }),
    resultLine({
      question_id: 'c:q2',
      question_type: 'category-2',
      category: 2,
      verdict: 'incorrect',
      evidence_hit: false,
    }),
    resultLine({ question_id: 'c:q3', question_type: 'category-10', category: 5, verdict: 'incorrect' }),
    resultLine({
      question_id: 'c:q4',
      question_type: 'category-5',
      category: 5,
      abstention: true,
      evidence_hit: null,
      verdict: 'incorrect',
    }),
    resultLine({ question_id: 'c:q5', question_type: 'category-5', category: 5, abstention: true, evidence_hit: null }),
  ];
  const summary = summarizeEvalResults(results, {
    format: 'locomo',
    baseline: 'full-context',
    models,
    wallTimeMs: 59_600,
  });

  it('leaves category 5 out of the overall figure and shows it on its own', () => {
    expect(summary.accuracy).toMatchObject({
      overall: 1 / 3,
      correct: 1,
      judged: 3,
      excluded_from_overall: ['category-5'],
    });
    expect(summary.accuracy.abstention).toEqual({ accuracy: 0.5, correct: 1, judged: 2, errors: 0, unparsable: 0 });
    expect(summary.by_category?.['5']).toEqual({ accuracy: 1 / 3, correct: 1, judged: 3, errors: 0, unparsable: 0 });
    expect(Object.keys(summary.accuracy.by_type)).toEqual(['category-1', 'category-2', 'category-5', 'category-10']);
    expect(summary.evidence_recall).toMatchObject({ recall: 2 / 3, hits: 2, counted: 3 });
  });

  it('marks category 5 in the table', () => {
    const table = formatEvalTable(summary);
    expect(table).toContain('category-5 (not in overall)');
    expect(table).toContain('adversarial (category 5)');
    expect(table).toContain('wall time: 1m 0s');
  });
});
