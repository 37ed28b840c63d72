/**
 * One question of the eval: the memory a baseline gives, the answer model's response and the
 * judge's verdict, as one result line. A step that fails ends the question as an error of
 * that step.
 */
import { evidenceText } from './_evidence-text.js';
import { redactSecrets } from '../core/redact-secrets.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import type { LanguageModel, LanguageModelMessage } from '../llm/language-model.js';
import { failureOf } from './_conversation-memory.js';
import type { ConversationMemory, Injection, StageFailure } from './_conversation-memory.js';
import { inputTokensOf } from './_usage-counter.js';
import type { TokenUsage } from './_usage-counter.js';
import { buildAnswerPrompt } from './eval-answer-prompt.js';
import type { EvalQuestion } from './eval-dataset.js';
import { buildJudgePrompt, parseJudgeReply } from './eval-judge.js';
import type { JudgeReply } from './eval-judge.js';
import { evidenceHit } from './eval-normalize.js';
import type { EvalBaseline, EvalMemorySettings, EvalModels, EvalResultLine, EvalStage } from './eval-results.js';
import { questionDigest } from './eval-results.js';

/** What every question of a run shares. */
export interface QuestionPassSettings {
  readonly answerModel: LanguageModel;
  readonly judgeModel: LanguageModel;
  /** Asks the judge with this model id instead of its own. */
  readonly judgeModelId: string | undefined;
  readonly baseline: EvalBaseline;
  readonly models: EvalModels;
  /** `null` for the baselines without memory. */
  readonly memorySettings: EvalMemorySettings | null;
  readonly estimator: TokenEstimator;
  readonly now: () => number;
  readonly signal: AbortSignal | undefined;
  /** Whether the line's free text (hypothesis, judge reason, error) is redacted before it is written. */
  readonly redactSecrets: boolean;
}

/** What is particular to one question: its start, its conversation's digest and its share of the memory model's tokens. */
export interface QuestionStart {
  readonly startedAt: number;
  /** The memory model's tokens to put on this question's line. */
  readonly memoryUsage: Readonly<TokenUsage>;
  /** The digest of the question's conversation, when the dataset reader took one. */
  readonly conversationDigest: string | undefined;
}

/** The outcome of the steps after the memory was built. */
interface Measured {
  readonly snippetTokens: number;
  readonly evidenceHit: boolean | null;
  readonly hypothesis: string | null;
  readonly answerInputTokens: number;
  readonly reply: JudgeReply | null;
  readonly error?: { readonly stage: EvalStage } & StageFailure;
}

/**
 * Asks one question: the baseline's memory, then the answer model (system message, memory,
 * question with its date), then the judge.
 * @throws the signal's reason when it aborts: an interrupted question is not reported.
 */
export async function askQuestion(
  settings: QuestionPassSettings,
  question: EvalQuestion,
  memory: ConversationMemory,
  start: QuestionStart,
): Promise<EvalResultLine> {
  let injection: Injection;
  try {
    injection = await memory.inject();
  } catch (error) {
    injection = { failure: failureOf(error, 'the memory could not be read: ') };
  }
  settings.signal?.throwIfAborted();
  const measured: Measured =
    'failure' in injection
      ? {
          snippetTokens: 0,
          evidenceHit: null,
          hypothesis: null,
          answerInputTokens: 0,
          reply: null,
          error: { stage: 'memory', ...injection.failure },
        }
      : await answerAndJudge(settings, question, injection.messages);
  return resultLine(settings, question, start, measured);
}

async function answerAndJudge(
  settings: QuestionPassSettings,
  question: EvalQuestion,
  memoryMessages: readonly LanguageModelMessage[],
): Promise<Measured> {
  const base = {
    snippetTokens: memoryMessages.reduce((sum, message) => sum + settings.estimator.estimate(message.content), 0),
    evidenceHit: evidenceHit(question, evidenceText(memoryMessages)),
  };
  const prompt = buildAnswerPrompt(question);
  const messages: LanguageModelMessage[] = [
    { role: 'system', content: prompt.system },
    ...memoryMessages,
    { role: 'user', content: prompt.user },
  ];
  let hypothesis: string;
  let answerInputTokens: number;
  try {
    const answer = await settings.answerModel.doGenerate({ messages, ...abortOption(settings.signal) });
    hypothesis = answer.text.trim() === '' ? (answer.refusal ?? '').trim() : answer.text.trim();
    answerInputTokens = inputTokensOf(answer, messages, settings.estimator);
  } catch (error) {
    settings.signal?.throwIfAborted();
    return {
      ...base,
      hypothesis: null,
      answerInputTokens: 0,
      reply: null,
      error: { stage: 'answer', ...failureOf(error) },
    };
  }
  try {
    const judgePrompt = buildJudgePrompt(question, hypothesis);
    const judged = await settings.judgeModel.doGenerate({
      messages: [
        { role: 'system', content: judgePrompt.system },
        { role: 'user', content: judgePrompt.user },
      ],
      ...(settings.judgeModelId === undefined ? {} : { modelId: settings.judgeModelId }),
      ...abortOption(settings.signal),
    });
    return { ...base, hypothesis, answerInputTokens, reply: parseJudgeReply(judged.text) };
  } catch (error) {
    settings.signal?.throwIfAborted();
    return { ...base, hypothesis, answerInputTokens, reply: null, error: { stage: 'judge', ...failureOf(error) } };
  }
}

function abortOption(signal: AbortSignal | undefined): { abortSignal?: AbortSignal } {
  return signal === undefined ? {} : { abortSignal: signal };
}

/** The line, its fields in the documented order. */
function resultLine(
  settings: QuestionPassSettings,
  question: EvalQuestion,
  start: QuestionStart,
  measured: Measured,
): EvalResultLine {
  const { error } = measured;
  // NOTE: the judge saw the answer as given; only what is written is redacted (the answer model
  // may quote a secret of the haystack, which the full-context baseline shows it whole).
  const clean = (text: string): string => (settings.redactSecrets ? redactSecrets(text).text : text);
  return {
    question_id: question.questionId,
    question_digest: questionDigest(question),
    ...(start.conversationDigest === undefined ? {} : { conversation_digest: start.conversationDigest }),
    question_type: question.questionType,
    ...(question.category === undefined ? {} : { category: question.category }),
    abstention: question.abstention,
    baseline: settings.baseline,
    hypothesis: measured.hypothesis === null ? null : clean(measured.hypothesis),
    verdict: error === undefined ? (measured.reply?.verdict ?? null) : null,
    judge_reason: clean(measured.reply?.reason ?? ''),
    ...(error === undefined
      ? {}
      : {
          error: {
            stage: error.stage,
            message: clean(error.message),
            ...(error.code === undefined ? {} : { code: error.code }),
          },
        }),
    snippet_tokens: measured.snippetTokens,
    memory_input_tokens: start.memoryUsage.inputTokens,
    memory_output_tokens: start.memoryUsage.outputTokens,
    answer_input_tokens: measured.answerInputTokens,
    evidence_hit: measured.evidenceHit,
    started_at: new Date(start.startedAt).toISOString(),
    duration_ms: Math.max(0, settings.now() - start.startedAt),
    models: settings.models,
    memory_settings: settings.memorySettings,
  };
}
