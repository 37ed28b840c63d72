/** A valid results-file line for tests of the eval, with any field overridden. */
import type { EvalResultLine } from '../../src/eval/eval-results.js';

/** One finished question: correct, memory baseline, every count filled in. */
export function resultLine(overrides: Partial<EvalResultLine> = {}): EvalResultLine {
  return {
    question_id: 'q1',
    question_type: 'single-session-user',
    abstention: false,
    baseline: 'memory',
    hypothesis: 'Your cat is Miso.',
    verdict: 'correct',
    judge_reason: 'It names Miso.',
    snippet_tokens: 120,
    memory_input_tokens: 3000,
    memory_output_tokens: 200,
    answer_input_tokens: 400,
    evidence_hit: true,
    started_at: '2026-01-05T10:00:00.000Z',
    duration_ms: 1500,
    models: { memory: 'openai/gpt-5-mini', answer: 'openai/gpt-5-mini', judge: 'openai/gpt-5-mini' },
    ...overrides,
  };
}
