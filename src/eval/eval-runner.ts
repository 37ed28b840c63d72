/**
 * The eval runner: each conversation of a dataset given to the answer model as its baseline
 * says (remembered through observational memory, whole, or not at all), then each of its
 * questions answered and judged, one result line per question.
 *
 * Every baseline takes the same path: a {@link ConversationMemory} says what goes between the
 * answer model's system message and the question, and everything else (the prompt, the
 * answer, the judge, the counts) is shared.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { ModelCallError } from '../core/errors.js';
import { DEFAULT_OBSERVATION_CONFIG } from '../core/observation.js';
import type { ObservationConfig } from '../core/observation.js';
import { resolveScope } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import { RUNE_TOKEN_ESTIMATOR } from '../core/token-estimator.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import type { LanguageModel } from '../llm/language-model.js';
import { createWorkingMemory } from '../memory/working-memory.js';
import type { RunStore } from '../storage/run-store.js';
import type { MemoryStore } from '../storage/store.js';
import { runConcurrently } from './_concurrent-pool.js';
import { fullContextMemory, noMemory, rememberConversation } from './_conversation-memory.js';
import type { ConversationMemory, MemoryBaselineSettings } from './_conversation-memory.js';
import { askQuestion } from './_question-pass.js';
import { unreachableCode, watchReachability } from './_reachability-watch.js';
import type { EvalConversation, EvalDataset } from './eval-dataset.js';
import type { EvalBaseline, EvalMemorySettings, EvalModels, EvalResultLine, EvalStage } from './eval-results.js';

/** The `memory` baseline's setup. */
export interface EvalMemoryOptions {
  /**
   * The observer and reflector model. As in the harness, the operation worker retries its
   * failures: give it without a retry layer of its own (`selectMemoryModel` with
   * `retry: { maxAttempts: 1 }`).
   */
  readonly model: LanguageModel;
  /** Where the eval's memories live: a store of its own, never the user's state. */
  readonly store: MemoryStore;
  /** Where the conversation's messages are kept for the replayed history; needed when `historyMaxTokens` > 0. */
  readonly runStore?: RunStore;
  /** Thresholds, from the loaded configuration. @default DEFAULT_OBSERVATION_CONFIG */
  readonly thresholds?: Partial<ObservationConfig>;
  /**
   * Tokens of stored conversation history put before the question, as the agent runner's
   * `historyMaxTokens` (which is 8000 in the harness). 0 measures the memory alone.
   * @default 0
   */
  readonly historyMaxTokens?: number;
  /** @default true */
  readonly redactSecrets?: boolean;
  /** @default 0.6 */
  readonly toolImportanceCap?: number;
  /**
   * The operation lease; draining a conversation may take three of them (retries waiting for their backoff).
   * @default 300000
   */
  readonly leaseMs?: number;
  /** Base of the operation worker's retry backoff. @default 1000 */
  readonly retryDelayMs?: number;
  /**
   * Keep each conversation's memory once its questions are done (for inspection). @default false: forgotten, so
   * memory use stays flat over a long run
   */
  readonly keep?: boolean;
}

/** Options of {@link runEval}. */
export interface EvalRunOptions {
  /** The dataset, already narrowed (`selectQuestions`). */
  readonly dataset: EvalDataset;
  readonly baseline: EvalBaseline;
  /** The agent model, with its retry layer (`withRetries`). */
  readonly answerModel: LanguageModel;
  /** The judge, with its retry layer. @default answerModel */
  readonly judgeModel?: LanguageModel;
  /** The model id the judge is asked with (`--judge-model`), when not its own. */
  readonly judgeModelId?: string;
  /** The model names written on every result line. */
  readonly models: EvalModels;
  /**
   * Where each model's server is set (such as `OPENAI_BASE_URL`), named by the error that stops
   * the run when that model cannot be reached.
   */
  readonly modelSettings?: Partial<Readonly<Record<EvalStage, string>>>;
  /** Required by the `memory` baseline. */
  readonly memory?: EvalMemoryOptions;
  /**
   * Whether the result lines' free text (hypothesis, judge reason, error message) is redacted
   * like memory (an answer may quote a secret of the conversation).
   * @default memory.redactSecrets, else true
   */
  readonly redactSecrets?: boolean;
  /** Questions not to ask (those already in the results file, when resuming). */
  readonly skipQuestionIds?: ReadonlySet<string>;
  /** Conversations evaluated at once. @default 1 */
  readonly concurrency?: number;
  /** Stops the run: model calls under way are aborted, and their questions are not reported (a resume asks them). */
  readonly signal?: AbortSignal;
  /** Told of each finished question, in the order they finish; the run waits for it. A throw stops the run. */
  readonly onResult: (result: EvalResultLine) => void | Promise<void>;
  /**
   * In every scope of the run (tenant `eval-<tag>`), so that no two runs share a scope. @default a time and
   * random hex
   */
  readonly runTag?: string;
  /** @default RUNE_TOKEN_ESTIMATOR */
  readonly estimator?: TokenEstimator;
  /** @default Date.now */
  readonly now?: () => number;
}

/** What a run came to. */
export interface EvalRunOutcome {
  /** The questions this run finished (answered, or recorded as errors), in the order they finished. */
  readonly results: readonly EvalResultLine[];
  /** True when the signal stopped the run before every question was asked. */
  readonly interrupted: boolean;
  readonly wallTimeMs: number;
  /** The tenant of every scope of the run. */
  readonly tenantId: string;
}

/** What every conversation of a run shares. */
interface RunContext {
  readonly options: EvalRunOptions;
  /** The caller's signal, or a model that cannot be reached: either stops the run. */
  readonly signal: AbortSignal;
  readonly tenantId: string;
  readonly memory: MemoryBaselineSettings | undefined;
  readonly answerModel: LanguageModel;
  readonly judgeModel: LanguageModel;
  readonly estimator: TokenEstimator;
  readonly now: () => number;
  readonly results: EvalResultLine[];
}

/**
 * Runs an eval: per conversation (`concurrency` at a time) a fresh scope of a tenant unique
 * to the run; for the `memory` baseline its sessions are observed in date order through the
 * real memory pipeline, then each question gets the memory `prepareTurn` builds, the answer
 * model's response and the judge's verdict. A model call that still fails after its retries
 * makes the question an error of its stage, not a wrong answer; but a model whose server cannot
 * be reached (connection refused, no such host, no route) stops the run: at its first such
 * failure when it has not answered yet in the run, else once its retries are used up. The
 * questions under way are then not reported (a resume asks them).
 * @throws an error of `onResult` (such as a failed write), after the conversations under way end.
 * @throws ModelCallError (`MODEL_CALL_FAILED`) naming the model and its address when a model
 * cannot be reached.
 * @example
 * const outcome = await runEval({
 *   dataset,
 *   baseline: 'memory',
 *   answerModel,
 *   models,
 *   memory: { model: memoryModel, store: createInMemoryStore() },
 *   onResult: (line) => writer.append(line),
 * });
 */
export async function runEval(options: EvalRunOptions): Promise<EvalRunOutcome> {
  const now = options.now ?? Date.now;
  const started = now();
  const estimator = options.estimator ?? RUNE_TOKEN_ESTIMATOR;
  const tenantId = `eval-${options.runTag ?? defaultRunTag(started)}`;
  const unreachable = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, unreachable.signal]) : unreachable.signal;
  const results: EvalResultLine[] = [];
  const stopFor =
    (stage: EvalStage) =>
    (error: Error): void => {
      if (!unreachable.signal.aborted) unreachable.abort(unreachableError(options, stage, error, results.length));
    };
  const answer = watchReachability(options.answerModel, stopFor('answer'), { retriesInside: true });
  const judge = watchReachability(options.judgeModel ?? options.answerModel, stopFor('judge'), {
    retriesInside: true,
  });
  const context: RunContext = {
    options,
    signal,
    tenantId,
    memory: options.baseline === 'memory' ? memorySettings(options, estimator, signal, stopFor('memory')) : undefined,
    answerModel: answer.model,
    judgeModel: judge.model,
    estimator,
    now,
    results,
  };
  const conversations = options.dataset.conversations;
  await runConcurrently(
    conversations,
    options.concurrency ?? 1,
    async (conversation) => {
      try {
        await evaluateConversation(context, conversation);
      } catch (error) {
        // An interrupted conversation reports nothing; the run then stops quietly.
        if (!signal.aborted) throw error;
      }
    },
    () => signal.aborted,
  );
  if (unreachable.signal.aborted && options.signal?.aborted !== true) throw unreachable.signal.reason;
  const skip = options.skipQuestionIds ?? new Set<string>();
  const asked = conversations.reduce(
    (count, conversation) => count + conversation.questions.filter((question) => !skip.has(question.questionId)).length,
    0,
  );
  return {
    results: context.results,
    interrupted: context.results.length < asked,
    wallTimeMs: now() - started,
    tenantId,
  };
}

/**
 * The settings of the `memory` baseline as a run with `memory` applies them, defaults filled in: written on each
 * result line, and compared by a resume.
 */
export function evalMemorySettings(
  memory: Pick<EvalMemoryOptions, 'historyMaxTokens' | 'thresholds'>,
): EvalMemorySettings {
  return {
    history_tokens: memory.historyMaxTokens ?? 0,
    observe_min_tokens: { ...DEFAULT_OBSERVATION_CONFIG, ...memory.thresholds }.observeMinTokens,
  };
}

function memorySettings(
  options: EvalRunOptions,
  estimator: TokenEstimator,
  signal: AbortSignal,
  onUnreachable: (error: Error) => void,
): MemoryBaselineSettings {
  const memory = options.memory;
  if (memory === undefined)
    throw new TypeError('runEval: the memory baseline needs the memory option (its model and store)');
  const historyMaxTokens = memory.historyMaxTokens ?? 0;
  if (!Number.isSafeInteger(historyMaxTokens) || historyMaxTokens < 0)
    throw new RangeError(`historyMaxTokens must be a whole number of tokens, 0 or more; got ${historyMaxTokens}`);
  if (historyMaxTokens > 0 && memory.runStore === undefined)
    throw new TypeError('runEval: historyMaxTokens > 0 needs a runStore to keep the history in');
  // The operation worker retries the memory model's calls: a server that cannot be reached
  // stops the run at once while it never answered, else when an operation gives up on it.
  const watched = watchReachability(memory.model, (error) => {
    if (!signal.aborted) onUnreachable(error);
  });
  return {
    model: watched.model,
    onOperationGaveUp: () => watched.gaveUp(),
    store: memory.store,
    workingMemory: createWorkingMemory({ store: memory.store }),
    runStore: historyMaxTokens > 0 ? memory.runStore : undefined,
    historyMaxTokens,
    thresholds: { ...DEFAULT_OBSERVATION_CONFIG, ...memory.thresholds },
    redactSecrets: memory.redactSecrets ?? true,
    toolImportanceCap: memory.toolImportanceCap,
    leaseMs: memory.leaseMs ?? 300_000,
    retryDelayMs: memory.retryDelayMs,
    keep: memory.keep ?? false,
    estimator,
  };
}

async function evaluateConversation(context: RunContext, conversation: EvalConversation): Promise<void> {
  const { options } = context;
  const questions = conversation.questions.filter((question) => !options.skipQuestionIds?.has(question.questionId));
  if (questions.length === 0) return;
  const startedAt = context.now();
  const memory = await conversationMemory(context, conversation);
  try {
    for (const [position, question] of questions.entries()) {
      context.signal.throwIfAborted();
      // The memory was built for the first question; its tokens and time are counted there.
      const first = position === 0;
      const result = await askQuestion(
        {
          answerModel: context.answerModel,
          judgeModel: context.judgeModel,
          judgeModelId: options.judgeModelId,
          baseline: options.baseline,
          models: options.models,
          memorySettings:
            options.baseline === 'memory' && options.memory !== undefined ? evalMemorySettings(options.memory) : null,
          estimator: context.estimator,
          now: context.now,
          signal: context.signal,
          redactSecrets: options.redactSecrets ?? options.memory?.redactSecrets ?? true,
        },
        question,
        memory,
        {
          startedAt: first ? startedAt : context.now(),
          memoryUsage: first ? memory.usage : { inputTokens: 0, outputTokens: 0 },
          conversationDigest: conversation.sessionsDigest,
        },
      );
      await options.onResult(result);
      context.results.push(result);
    }
  } finally {
    await memory.dispose();
  }
}

async function conversationMemory(context: RunContext, listed: EvalConversation): Promise<ConversationMemory> {
  if (context.options.baseline === 'none') return noMemory();
  const conversation = await withSessions(context.options.dataset, listed);
  if (context.memory !== undefined)
    return rememberConversation(
      context.memory,
      evalScope(context.tenantId, conversation),
      conversation,
      context.signal,
    );
  return fullContextMemory(conversation);
}

/** The conversation with its sessions, read from the dataset's file when it left them there. */
async function withSessions(dataset: EvalDataset, conversation: EvalConversation): Promise<EvalConversation> {
  if (conversation.lazy !== true) return conversation;
  if (dataset.loadSessions === undefined)
    throw new TypeError(
      `runEval: conversation ${JSON.stringify(conversation.id)} is lazy, but the dataset has no loadSessions`,
    );
  return { ...conversation, sessions: await dataset.loadSessions(conversation), lazy: false };
}

const SCOPE_ID_UNSAFE = /[^A-Za-z0-9._:@-]/g;

/** The conversation's scope: the run's tenant, the conversation's position and (made safe) id, agent `eval`. */
export function evalScope(tenantId: string, conversation: Pick<EvalConversation, 'index' | 'id'>): Scope {
  const conversationId = `${conversation.index + 1}-${conversation.id.replace(SCOPE_ID_UNSAFE, '_')}`.slice(0, 128);
  return resolveScope({ tenantId, conversationId, agentId: 'eval' });
}

function defaultRunTag(now: number): string {
  const time = new Date(now).toISOString().replace(/[-:]/g, '').slice(0, 15);
  return `${time}-${randomBytes(3).toString('hex')}`;
}

/** The error that stops a run when a model's server cannot be reached: the model, its address, and what to set. */
function unreachableError(options: EvalRunOptions, stage: EvalStage, cause: Error, finished: number): ModelCallError {
  const name = options.models[stage] ?? stage;
  const code = unreachableCode(cause);
  const detail = ModelCallError.isInstance(cause) ? cause.detail : cause.message;
  const when =
    finished === 0 ? 'before any question was answered' : `after ${finished} question(s) were answered in this run`;
  const setting = options.modelSettings?.[stage];
  return new ModelCallError({
    message:
      `the ${stage} model ${name} cannot be reached${code === undefined ? '' : ` (${code})`}, so the eval ` +
      `stopped ${when}: ${detail}${setting === undefined ? '' : ` Its server is set by ${setting}.`}`,
    ...(ModelCallError.isInstance(cause) && cause.url !== undefined ? { url: cause.url } : {}),
    retryable: false,
    cause,
  });
}
