/**
 * What the answer model is given about a conversation, one implementation per baseline, all
 * used the same way by the runner. For `memory`, the conversation is first replayed through
 * observational memory as the agent runner hands it a conversation; at each question
 * `prepareTurn` builds what the runner would inject.
 */
import { createTurnPreparer } from '../agent/prepare-turn.js';
import { HarnessMemoryError } from '../core/errors.js';
import type { ObservationConfig } from '../core/observation.js';
import { memoryIdOf } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import type { LanguageModel, LanguageModelMessage } from '../llm/language-model.js';
import { createObservationalMemory } from '../memory/observational-memory.js';
import type { ObservationalMemory } from '../memory/observational-memory.js';
import type { WorkingMemory } from '../memory/working-memory.js';
import type { ConversationMessage, RunStore } from '../storage/run-store.js';
import type { MemoryStore } from '../storage/store.js';
import { untilStopped } from '../core/until-stopped.js';
import { withStopSignal } from './_stop-signal.js';
import { withUsageCounter } from './_usage-counter.js';
import type { TokenUsage } from './_usage-counter.js';
import { formatConversationHistory } from './eval-answer-prompt.js';
import type { EvalConversation, EvalMessage, EvalSession } from './eval-dataset.js';

/** Why a question could not be asked: the step that failed, and its error. */
export interface StageFailure {
  readonly message: string;
  readonly code?: string;
}

/** The memory messages put between the answer model's system message and the question, or why there are none. */
export type Injection = { readonly messages: readonly LanguageModelMessage[] } | { readonly failure: StageFailure };

/** A conversation as one baseline gives it to the answer model. */
export interface ConversationMemory {
  /** Tokens the memory model used remembering the conversation (0 for the other baselines). */
  readonly usage: Readonly<TokenUsage>;
  /** What goes before a question. */
  inject(): Promise<Injection>;
  /** Frees what the conversation holds. */
  dispose(): Promise<void>;
}

/** `full-context`: the whole haystack, as one system message. */
export function fullContextMemory(conversation: EvalConversation): ConversationMemory {
  const messages: LanguageModelMessage[] = [
    { role: 'system', content: formatConversationHistory(conversation.sessions) },
  ];
  return staticMemory(messages);
}

/** `none`: nothing. */
export function noMemory(): ConversationMemory {
  return staticMemory([]);
}

function staticMemory(messages: readonly LanguageModelMessage[]): ConversationMemory {
  return {
    usage: { inputTokens: 0, outputTokens: 0 },
    inject: () => Promise.resolve({ messages }),
    dispose: () => Promise.resolve(),
  };
}

/** What {@link rememberConversation} shares across conversations. */
export interface MemoryBaselineSettings {
  readonly model: LanguageModel;
  readonly store: MemoryStore;
  readonly workingMemory: WorkingMemory;
  /** Set when stored history is replayed before the question. */
  readonly runStore: RunStore | undefined;
  readonly historyMaxTokens: number;
  readonly thresholds: Partial<ObservationConfig>;
  readonly redactSecrets: boolean;
  readonly toolImportanceCap: number | undefined;
  readonly leaseMs: number;
  readonly retryDelayMs: number | undefined;
  readonly keep: boolean;
  readonly estimator: TokenEstimator;
  /** Told when a memory operation failed after its last retry (the conversation's memory then fails). */
  readonly onOperationGaveUp?: () => void;
}

/**
 * `memory`: replays the conversation's sessions, in date order, through a fresh
 * observational memory of `scope` (its own counter of the memory model's tokens), observing
 * after each step as the runner does, then drains the scope's pending work. A memory
 * operation that still fails after its retries, or a store error, makes every question of
 * the conversation a memory-stage error.
 * @throws the signal's reason when it aborts, at once (the memory model's call in flight is
 * aborted, and not waited for); nothing of the conversation is then reported.
 */
export async function rememberConversation(
  settings: MemoryBaselineSettings,
  scope: Scope,
  conversation: EvalConversation,
  signal?: AbortSignal,
): Promise<ConversationMemory> {
  const usage: TokenUsage = { inputTokens: 0, outputTokens: 0 };
  const memory = createObservationalMemory({
    store: settings.store,
    model: withUsageCounter(withStopSignal(settings.model, signal), usage, settings.estimator),
    defaultEnabled: true,
    defaults: settings.thresholds,
    estimator: settings.estimator,
    redactSecrets: settings.redactSecrets,
    leaseMs: settings.leaseMs,
    ...(settings.toolImportanceCap === undefined ? {} : { toolImportanceCap: settings.toolImportanceCap }),
    ...(settings.retryDelayMs === undefined ? {} : { retryDelayMs: settings.retryDelayMs }),
  });
  const dispose = async (): Promise<void> => {
    if (settings.keep) return;
    await memory.forget(scope);
    await settings.runStore?.forgetConversation(memoryIdOf(scope));
  };
  let failure: StageFailure | null;
  try {
    // A kept scope is enabled, with the eval's thresholds, in its own record: read later with the
    // harness's settings (`harness memory show`, where new scopes start disabled and take the
    // configured thresholds) it is the memory the eval used.
    if (settings.keep) await memory.setEnabled(scope, true, settings.thresholds);
    failure = await replaySessions(settings, memory, scope, conversation.sessions, signal);
  } catch (error) {
    await dispose().catch(() => undefined);
    throw error;
  }
  const preparer = createTurnPreparer({
    observationalMemory: memory,
    workingMemory: settings.workingMemory,
    historyMaxTokens: settings.historyMaxTokens,
    estimator: settings.estimator,
    ...(settings.runStore ? { runStore: settings.runStore } : {}),
  });
  return {
    usage,
    async inject() {
      if (failure !== null) return { failure };
      const turn = await preparer.prepareTurn(scope);
      const snippetFailure = turn.failures[0];
      if (snippetFailure !== undefined)
        return {
          failure: failureOf(snippetFailure.error, `the ${snippetFailure.source} snippet could not be built: `),
        };
      return { messages: turn.messages };
    },
    dispose,
  };
}

/**
 * The first line of every remembered message: observer batches follow token counts, not sessions, so each
 * message carries its session's date.
 */
export const SESSION_DATE_LINE_PREFIX = '(session date: ';

/**
 * A message as the eval stores and observes it: `(session date: <date>)` on a first line, when the session has a
 * date.
 */
export function datedContent(session: Pick<EvalSession, 'date'>, message: Pick<EvalMessage, 'content'>): string {
  return session.date === null ? message.content : `${SESSION_DATE_LINE_PREFIX}${session.date})\n${message.content}`;
}

/** A session's messages as the runner's steps: a step starts at each user message and holds the replies after it. */
export function stepsOf(messages: readonly EvalMessage[]): EvalMessage[][] {
  const steps: EvalMessage[][] = [];
  for (const message of messages) {
    const current = steps[steps.length - 1];
    if (current === undefined || (message.role === 'user' && current.length > 0)) steps.push([message]);
    else current.push(message);
  }
  return steps;
}

async function replaySessions(
  settings: MemoryBaselineSettings,
  memory: ObservationalMemory,
  scope: Scope,
  sessions: readonly EvalSession[],
  signal: AbortSignal | undefined,
): Promise<StageFailure | null> {
  const memoryId = memoryIdOf(scope);
  const operations: { failure: StageFailure | null } = { failure: null };
  // An observe call throws the error of its own operation after reporting it here; the
  // operation worker retries it, and only a failure after the last attempt counts.
  const reported = new Set<string>();
  const unsubscribe = memory.subscribe((event) => {
    if (event.type !== 'memory.operation.failed') return;
    reported.add(event.error);
    // Events carry the error's whole message; its `[harness-memory] [component]` prefix says nothing to a reader
    // of the results.
    const detail = event.error.replace(/^\[harness-memory\] \[[^\]]*\] /, '');
    if (event.willRetry) return;
    operations.failure ??= {
      message: `the memory model's ${event.operationType} operation failed after its retries: ${detail}`,
    };
    settings.onOperationGaveUp?.();
  });
  try {
    for (const [sessionIndex, session] of sessions.entries()) {
      const runId = `eval-session-${sessionIndex + 1}`;
      for (const step of stepsOf(session.messages)) {
        signal?.throwIfAborted();
        if (operations.failure !== null) return operations.failure;
        const messages = step.map((message) => ({
          id: message.id,
          role: message.role,
          content: datedContent(session, message),
        }));
        if (settings.runStore)
          await settings.runStore.appendMessages(
            memoryId,
            messages.map((message) => historyMessage(message, runId, settings.estimator)),
          );
        try {
          await untilStopped(memory.observe({ scope, runId, messages }), signal);
        } catch (error) {
          if (!(error instanceof Error && reported.has(error.message))) throw error;
        }
      }
    }
    signal?.throwIfAborted();
    if (operations.failure === null) await drainScope(memory, scope, settings.leaseMs * 3, signal);
    return operations.failure;
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    return operations.failure ?? failureOf(error, 'remembering the conversation failed: ');
  } finally {
    unsubscribe();
  }
}

const DRAIN_SLICE_MS = 1000;

/**
 * Drains the scope's pending work (retries waiting for their backoff included) for up to
 * `totalMs`, a second at a time, so that a drain a stop abandons leaves no long timer behind;
 * the stop itself ends the wait at once.
 */
async function drainScope(
  memory: ObservationalMemory,
  scope: Scope,
  totalMs: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  const deadline = performance.now() + totalMs;
  for (;;) {
    try {
      const timeoutMs = Math.max(1, Math.min(DRAIN_SLICE_MS, deadline - performance.now()));
      await untilStopped(memory.drain(scope, { timeoutMs }), signal);
      return;
    } catch (error) {
      const timedOut = HarnessMemoryError.isInstance(error) && error.code === 'DRAIN_TIMEOUT';
      if (!timedOut || performance.now() >= deadline) throw error;
      signal?.throwIfAborted();
    }
  }
}

function historyMessage(
  message: { id: string; role: EvalMessage['role']; content: string },
  runId: string,
  estimator: TokenEstimator,
): ConversationMessage {
  return {
    messageId: message.id,
    runId,
    role: message.role,
    content: message.content,
    tokenCount: estimator.estimate(message.content),
  };
}

/** An error as a result line's `error` (without the stage). */
export function failureOf(error: unknown, prefix = ''): StageFailure {
  if (HarnessMemoryError.isInstance(error)) return { message: `${prefix}${error.detail}`, code: error.code };
  return { message: `${prefix}${error instanceof Error ? error.message : String(error)}` };
}
