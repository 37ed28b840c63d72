/**
 * The run loop: for each step, a turn prepared with both memories, the model called, tools
 * dispatched, the transcript stored and handed to observational memory beside the next
 * turn; the run's events on its stream, the terminal event last.
 * @module
 */
import { createHash } from 'node:crypto';
import type { FaultReporter } from '../core/fault.js';
import { redactSecrets } from '../core/redact-secrets.js';
import { memoryIdOf } from '../core/scope.js';
import { untilStopped, waitAtMost } from '../core/until-stopped.js';
import type { Scope } from '../core/scope.js';
import { estimateMessageTokens, wholeTokenCount } from '../core/token-estimator.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import type { FinishReason, LanguageModel } from '../llm/language-model.js';
import type { ObservationalMemory, ObservationalMemoryEvent } from '../memory/observational-memory.js';
import type { WorkingMemory, WorkingMemoryEvent } from '../memory/working-memory.js';
import { StoredMessageKeys } from '../memory/stored-message-keys.js';
import { isRunOpen } from '../storage/run-store.js';
import type { ConversationMessage, RunPatch, RunRecord, RunStore } from '../storage/run-store.js';
import { cancelled, forgottenError, isRunEndedConflict, shownErrorJson, terminalEventOf } from './_run-errors.js';
import type { RunErrorJson } from './_run-errors.js';
import type { TurnPreparer } from './prepare-turn.js';
import type { RunEventEmitter } from './run-event-emitter.js';
import type { ToolDispatcher } from './tool-dispatch.js';

/** What the loop works with; the runner builds it once. */
export interface RunLoopOptions {
  readonly model: LanguageModel;
  readonly memory: ObservationalMemory;
  /** Its sets and deletes made by the run's own tool calls go on the run's stream. */
  readonly workingMemory?: Pick<WorkingMemory, 'subscribe'>;
  readonly runStore: RunStore;
  readonly events: RunEventEmitter;
  readonly preparer: TurnPreparer;
  readonly tools: ToolDispatcher;
  readonly estimator: TokenEstimator;
  readonly settleTimeoutMs: number;
  /** When the runner is shutting down, the time (`performance.now()` ms) past which no run waits for its memory work. */
  readonly shutdownDeadline: () => number | undefined;
  /**
   * The runs' observations: the `signal` of their observe calls, aborted only when the runner
   * stops observing at shutdown (never by a run's cancel, whose observation goes on), and
   * `track`, told of each step's observation so the runner can wait for it to end.
   */
  readonly observes: { readonly signal: AbortSignal; readonly track: (observing: Promise<unknown>) => void };
  readonly forensics?: { readonly captureRequestEnvelope?: boolean; readonly snapshotMemorySnippet?: boolean };
  readonly reportFault: FaultReporter;
  /** Server failures reach the run's stream and record by their code only (see `AgentRunnerOptions`). */
  readonly hideServerFailures: boolean;
}

/** Runs one run to its end and resolves with its final record. */
export type RunLoop = (run: RunRecord, signal: AbortSignal) => Promise<RunRecord>;

type Emit = (type: string, payload?: Record<string, unknown>) => Promise<unknown>;
type EmitAt = (type: string, payload: Record<string, unknown>, step: number) => Promise<void>;

/** The state of one run as the loop goes. */
interface RunState {
  readonly run: RunRecord;
  readonly scope: Scope;
  readonly memoryId: string;
  readonly signal: AbortSignal;
  readonly usage: { inputTokens: number; outputTokens: number };
  /** The run's own messages; earlier history is read afresh for every turn. */
  readonly transcript: ConversationMessage[];
  step: number;
  /** Set just before the terminal event: memory events after it are left to the scope's subscribers. */
  closed: boolean;
  /** Observations of earlier steps, one at a time per run. */
  observing: Promise<void>;
  /** The conversation's generation (run store), read once at the start. */
  generation: number;
  /** The scope's memory generation, read once at the start. */
  memoryGeneration: number;
  /**
   * While a step is observed: the memory service's events for this run that its observation
   * caused, put on the stream after its `memory.observe.completed` (or `failed`) with its step.
   */
  heldMemoryEvents: HeldMemoryEvent[] | undefined;
  readonly emit: Emit;
  readonly emitMemory: EmitAt;
}

/** A memory event waiting for the end of the observation that caused it. */
interface HeldMemoryEvent {
  readonly type: string;
  readonly payload: Record<string, unknown>;
}

/** The loop over `options`. */
export function createRunLoop(options: RunLoopOptions): RunLoop {
  const { runStore, events, memory } = options;
  // Message ids each conversation's memory has taken, by scope generation (see observeStep).
  const handedOver = new StoredMessageKeys();

  return async function runLoop(run, signal) {
    const state = newRunState(events, run, signal);
    const unsubscribeMemory = forwardRunMemoryEvents(memory, state, options.reportFault);
    const unsubscribeWorking = forwardRunWorkingMemoryEvents(options.workingMemory, state, options.reportFault);
    const unsubscribe = (): void => {
      unsubscribeMemory();
      unsubscribeWorking();
    };
    try {
      await runStore.updateRun(run.runId, { status: 'running' });
      await state.emit('run.started', {
        prompt: run.prompt,
        model: run.model,
        tenant_id: state.scope.tenantId,
        agent_id: state.scope.agentId,
      });
      // Read once: a forget after this point makes every later write of the run, and its next turn, refuse.
      [state.generation, state.memoryGeneration] = await Promise.all([
        runStore.conversationGeneration(state.memoryId),
        memory.mode === 'off' ? Promise.resolve(0) : memory.generation(state.scope),
      ]);
      await append(options, state, { messageId: `${run.runId}:user`, role: 'user', content: run.prompt });
      while (state.step < run.maxSteps) {
        if (signal.aborted) throw cancelled();
        state.step++;
        const answer = await takeStep(options, handedOver, state);
        if (answer !== undefined) {
          await settle(options, state);
          if (cancelledByCaller(signal)) throw cancelled();
          const cut = cutAnswerError(answer.finishReason);
          // The partial answer stays the run's output; the run says it is not whole.
          if (cut) return await fail(options, state, cut);
          return await endRun(options, state, {
            status: 'completed',
            output: answer.text,
            steps: state.step,
            usage: state.usage,
          });
        }
      }
      await settle(options, state);
      if (cancelledByCaller(signal)) throw cancelled();
      return await fail(options, state, {
        code: 'MAX_STEPS',
        message: `the run reached max_steps (${run.maxSteps}) without a final answer`,
      });
    } catch (error) {
      return await endAfterError(options, state, error);
    } finally {
      unsubscribe();
    }
  };
}

/** Stores a message of the run in its conversation and its transcript. */
async function append(
  options: RunLoopOptions,
  state: RunState,
  message: Omit<ConversationMessage, 'tokenCount' | 'runId'>,
): Promise<void> {
  const tokenCount = estimateMessageTokens(options.estimator, {
    content: message.content,
    toolCalls: message.toolCalls,
  });
  const stored: ConversationMessage = { ...message, runId: state.run.runId, tokenCount };
  await options.runStore.appendMessages(state.memoryId, [stored], { generation: state.generation });
  state.transcript.push(stored);
}

/**
 * Waits for the run's observations (within the settle timeout), then closes its memory events.
 * A cancel stops the wait at once, and the run ends `cancelled`: its observation goes on, its
 * events left to the scope's subscribers.
 */
async function settle(options: RunLoopOptions, state: RunState): Promise<void> {
  const deadline = options.shutdownDeadline();
  const timeoutMs =
    deadline === undefined
      ? options.settleTimeoutMs
      : Math.min(options.settleTimeoutMs, Math.max(0, deadline - performance.now()));
  await waitAtMost(state.observing, timeoutMs, state.signal);
  state.closed = true;
}

/**
 * The reason a runner's timed `settle` aborts the runs still open at its deadline. A run whose
 * answer is in and that only waits for its memory work then ends as its answer says: the abort
 * ends the wait, not the run.
 */
export const SHUTDOWN_ABORT: DOMException = new DOMException('the runner is shutting down', 'AbortError');

function cancelledByCaller(signal: AbortSignal): boolean {
  return signal.aborted && signal.reason !== SHUTDOWN_ABORT;
}

/** Records the run as failed with `error`. */
function fail(options: RunLoopOptions, state: RunState, error: RunErrorJson): Promise<RunRecord> {
  return endRun(options, state, { status: 'failed', error, steps: state.step, usage: state.usage });
}

/**
 * Writes the run's end, then its terminal event. A run another process ended first (it swept
 * the run as abandoned while this one was paused) is not changed by the store, and its
 * terminal event stands: nothing more is appended, and the run comes back as that one ended it.
 */
async function endRun(
  options: RunLoopOptions,
  state: RunState,
  patch: RunPatch & { readonly status: 'completed' | 'failed' | 'cancelled' },
): Promise<RunRecord> {
  const ended = await options.runStore.updateRun(state.run.runId, patch);
  return recordEnd(options, state, ended);
}

/** Appends the terminal event of the run as `ended` holds it, unless one is stored already. */
async function recordEnd(options: RunLoopOptions, state: RunState, ended: RunRecord): Promise<RunRecord> {
  const terminal = terminalEventOf(ended);
  try {
    await state.emit(terminal.type, terminal.payload);
  } catch (error) {
    if (!isRunEndedConflict(error)) throw error;
  }
  return (await options.runStore.getRun(state.run.runId)) ?? ended;
}

/** One step: a turn, the model's answer, its tool calls. Resolves with the final text, if the answer was final. */
async function takeStep(
  options: RunLoopOptions,
  handedOver: StoredMessageKeys,
  state: RunState,
): Promise<{ readonly text: string; readonly finishReason: FinishReason } | undefined> {
  const { runStore } = options;
  const { run, scope, signal, usage, emit } = state;
  const step = state.step;
  const turn = await options.preparer.prepareTurn(scope, {
    systemPrompt: run.systemPrompt,
    transcript: state.transcript,
    generation: state.generation,
  });
  for (const failure of turn.failures) {
    const error = snippetFailureText(
      failure.error,
      options.hideServerFailures,
      reportTo(options, state, `the ${failure.source} snippet could not be built; the run goes on without it`),
    );
    await emit('memory.snippet.failed', { step, source: failure.source, error });
  }
  if (options.forensics?.captureRequestEnvelope) {
    await emit('llm.request.snapshot', {
      prompt_hash: createHash('sha256').update(JSON.stringify(turn.messages)).digest('hex'),
      tool_names: options.tools.names,
      ...(options.forensics.snapshotMemorySnippet ? { memory_snippet: turn.snippets.observationalMemory } : {}),
    });
  }
  // A model of the caller's may ignore the signal: a cancel does not wait for its answer.
  const result = await untilStopped(
    options.model.doGenerate({
      messages: turn.messages,
      tools: options.tools.definitions,
      ...(run.model !== '' ? { modelId: run.model } : {}),
      abortSignal: signal,
    }),
    signal,
  );
  // A model of the caller's may report any number: the run keeps whole counts.
  usage.inputTokens += wholeTokenCount(result.usage.inputTokens);
  usage.outputTokens += wholeTokenCount(result.usage.outputTokens);
  await append(options, state, {
    messageId: `${run.runId}:assistant:${step}`,
    role: 'assistant',
    content: result.text,
    ...(result.toolCalls.length > 0 ? { toolCalls: result.toolCalls } : {}),
  });
  const final = result.toolCalls.length === 0;
  await emit('assistant.message', {
    content: result.text,
    final,
    tool_calls: result.toolCalls.map((call) => ({ id: call.id, name: call.name })),
  });
  if (final) await runStore.updateRun(run.runId, { output: result.text, steps: step, usage });

  await runToolCalls(options, state, result.toolCalls);

  const snapshot = [...turn.history, ...state.transcript];
  // Observation runs beside the next turn, never in front of it; one at a time per run.
  state.observing = state.observing
    .then(() => observeStep(options, handedOver, state, step, snapshot))
    .catch((error: unknown) =>
      options.reportFault({
        component: 'runner',
        message: 'observing a step failed outside its own error handling',
        error,
        runId: run.runId,
      }),
    );
  options.observes.track(state.observing);
  await emit('run.step.completed', { step });
  return final ? { text: result.text, finishReason: result.finishReason } : undefined;
}

/**
 * Why a final answer is not a whole one: the model stopped at its output limit, or the
 * provider's filter stopped it. Undefined for an answer that ended as the model meant (a
 * refusal included: its text is the answer).
 */
function cutAnswerError(finishReason: FinishReason): RunErrorJson | undefined {
  if (finishReason === 'length')
    return {
      code: 'OUTPUT_TRUNCATED',
      message:
        "the model's answer was cut off at its output limit (finish_reason length); the run's output is the " +
        "part it gave. Raise the model's output limit or ask for a shorter answer",
    };
  if (finishReason === 'content-filter')
    return {
      code: 'OUTPUT_FILTERED',
      message: "the model provider's content filter stopped the answer (finish_reason content_filter)",
    };
  return undefined;
}

/** Runs the answer's tool calls in order, each stored in the transcript with its result. */
async function runToolCalls(
  options: RunLoopOptions,
  state: RunState,
  calls: Awaited<ReturnType<RunLoopOptions['model']['doGenerate']>>['toolCalls'],
): Promise<void> {
  const { run, scope, signal, emit } = state;
  const step = state.step;
  // A provider may repeat a call id within an answer: each result is still a message of its own.
  const seen = new Map<string, number>();
  for (const call of calls) {
    const repeat = seen.get(call.id) ?? 0;
    seen.set(call.id, repeat + 1);
    if (signal.aborted) throw cancelled();
    await emit('tool.call.started', { tool_call_id: call.id, name: call.name });
    const { content, ok } = await options.tools.dispatch(call.name, call.arguments, {
      runId: run.runId,
      toolCallId: call.id,
      scope,
      signal,
    });
    // Cancelled while the tool ran: its result, if any, is not the run's any more.
    if (signal.aborted) throw cancelled();
    await append(options, state, {
      messageId: `${run.runId}:tool:${step}:${callIdPart(call.id)}${repeat === 0 ? '' : `#${repeat + 1}`}`,
      role: 'tool',
      content,
      toolCallId: call.id,
      name: call.name,
    });
    await emit('tool.call.completed', { tool_call_id: call.id, name: call.name, ok });
  }
}

/** How much of a provider's tool call id a message id holds as it is. */
const CALL_ID_KEPT = 64;

/**
 * The call id as a part of a message id: as it is up to {@link CALL_ID_KEPT} characters,
 * else its start and a hash of the whole, so that a provider's long id (some send kilobytes)
 * keeps message ids within what memory and the stores accept.
 */
function callIdPart(callId: string): string {
  if (callId.length <= CALL_ID_KEPT) return callId;
  let start = callId.slice(0, 40);
  // Never the first half of a surrogate pair.
  if (/[\uD800-\uDBFF]$/.test(start)) start = start.slice(0, -1);
  return `${start}~${createHash('sha256').update(callId).digest('hex').slice(0, 23)}`;
}

/** The end of a run that threw: cancelled, forgotten, or failed. */
async function endAfterError(options: RunLoopOptions, state: RunState, error: unknown): Promise<RunRecord> {
  const { runStore } = options;
  await settle(options, state);
  const { run } = state;
  // A forget deletes the run with its conversation (SQLite, Postgres): nothing is left to record it on.
  const stored = await runStore.getRun(run.runId).catch(() => run);
  if (!stored)
    return Object.freeze({
      ...run,
      status: 'failed' as const,
      error: forgottenError(run),
      steps: state.step,
      usage: state.usage,
    });
  // Ended already: by this run just before the error (its terminal event failed to store), or
  // by another process that swept it as abandoned while this one was paused.
  if (!isRunOpen(stored.status)) return recordEnd(options, state, stored);
  if (state.signal.aborted)
    return endRun(options, state, { status: 'cancelled', steps: state.step, usage: state.usage });
  const shown = shownErrorJson(error, options.hideServerFailures, reportTo(options, state, 'the run failed'));
  return fail(options, state, shown);
}

/** Reports an error of the run as a fault; `message` says what failed. */
function reportTo(options: RunLoopOptions, state: RunState, message: string): (error: unknown) => void {
  return (error) => options.reportFault({ component: 'runner', message, error, runId: state.run.runId });
}

/**
 * What is shown of a snippet that could not be built, in the run's `memory.snippet.failed`
 * event and in MCP `memory_context`: its text as the HTTP API says it (redacted, no model
 * server address); with `hideServerFailures`, a server failure (a store's, a bug) only by its
 * code, `internal error (STORE_FAILED); see the server log`, its detail given to `report`.
 */
export function snippetFailureText(
  error: unknown,
  hideServerFailures: boolean,
  report: (error: unknown) => void,
): string {
  // Redacted, a failure shown as it is reads as tenantErrorText(error) says it.
  return redactSecrets(shownErrorJson(error, hideServerFailures, report).message).text;
}

function newRunState(events: RunEventEmitter, run: RunRecord, signal: AbortSignal): RunState {
  const scope = run.scope;
  const state: RunState = {
    run,
    scope,
    memoryId: memoryIdOf(scope),
    signal,
    usage: { inputTokens: 0, outputTokens: 0 },
    transcript: [],
    step: 0,
    closed: false,
    observing: Promise.resolve(),
    generation: 0,
    memoryGeneration: 0,
    heldMemoryEvents: undefined,
    emit: (type, payload = {}) =>
      events.emit(run.runId, type, payload, { conversationId: scope.conversationId, step: state.step }),
    emitMemory: async (type, payload, at) => {
      if (!state.closed)
        await events.emit(run.runId, type, payload, { conversationId: scope.conversationId, step: at });
    },
  };
  return state;
}

/** Puts the memory service's events about this run on the run's stream; returns the unsubscribe function. */
function forwardRunMemoryEvents(memory: ObservationalMemory, state: RunState, reportFault: FaultReporter): () => void {
  const { runId } = state.run;
  const forward = (type: string, payload: Record<string, unknown>): void => {
    if (state.heldMemoryEvents) {
      state.heldMemoryEvents.push({ type, payload });
      return;
    }
    state
      .emitMemory(type, payload, state.step)
      .catch((error: unknown) =>
        reportFault({ component: 'runner', message: `could not store the ${type} event`, error, runId }),
      );
  };
  return memory.subscribe((event: ObservationalMemoryEvent) => {
    if (event.type === 'memory.reflection.completed' && event.runId === runId) {
      forward('memory.reflection.completed', { trigger: event.trigger, operation_id: event.operationId });
    } else if (event.type === 'memory.operation.dead' && event.runId === runId) {
      forward('memory.operation.dead', {
        operation_id: event.operationId,
        operation_type: event.operationType,
        error: event.error,
        attempts: event.attempts,
      });
    } else if (event.type === 'memory.message.skipped' && event.runId === runId) {
      forward('memory.message.skipped', {
        operation_id: event.operationId,
        message_seq: event.messageSeq,
        message_key: event.messageKey,
        error: event.error,
      });
    }
  });
}

/**
 * Puts the working-memory sets and deletes of this run's tool calls on the run's stream, in
 * order with its tool events (each is stored before the tool call's result); returns the
 * unsubscribe function.
 */
function forwardRunWorkingMemoryEvents(
  workingMemory: Pick<WorkingMemory, 'subscribe'> | undefined,
  state: RunState,
  reportFault: FaultReporter,
): () => void {
  const { runId } = state.run;
  if (typeof workingMemory?.subscribe !== 'function') return () => undefined;
  return workingMemory.subscribe((event: WorkingMemoryEvent) => {
    if (event.runId !== runId) return;
    const payload =
      event.type !== 'memory.working_memory.set'
        ? { key: event.key }
        : event.expiresAt === undefined
          ? { key: event.key, bytes: event.bytes }
          : { key: event.key, bytes: event.bytes, expires_at: event.expiresAt };
    state
      .emitMemory(event.type, payload, state.step)
      .catch((error: unknown) =>
        reportFault({ component: 'runner', message: `could not store the ${event.type} event`, error, runId }),
      );
  });
}

/** Hands a step's transcript to observational memory and reports how it went on the run's stream. */
async function observeStep(
  options: RunLoopOptions,
  handedOver: StoredMessageKeys,
  state: RunState,
  step: number,
  transcript: readonly ConversationMessage[],
): Promise<void> {
  const { memory } = options;
  const emit = state.emitMemory;
  const generation = state.memoryGeneration;
  let started: Promise<void> | undefined;
  const held: HeldMemoryEvent[] = [];
  state.heldMemoryEvents = held;
  try {
    // Disabled scopes make no memory events (the reference emitted them on every step).
    if (!(await observesScope(memory, state.scope))) return;
    // Stored while memory works (the emitter keeps the run's order): on a networked store
    // that is one round trip and commit fewer in front of the observation. An event that
    // cannot be stored still fails the step's report below, after the observation.
    started = emit('memory.observe.started', { step }, step);
    started.catch(() => undefined);
    // The replayed history was handed over by earlier steps and runs: only what memory has
    // not taken yet is handed over again (all of it after a failure or a forget).
    const fresh = handedOver.unknown(state.memoryId, generation, transcript, (message) => message.messageId);
    const result = await memory.observe({
      signal: options.observes.signal,
      scope: state.scope,
      runId: state.run.runId,
      generation,
      ...(state.run.model === '' ? {} : { modelId: state.run.model }),
      messages: fresh.map((message) => ({
        id: message.messageId,
        role: message.role,
        content: message.content,
        ...(message.name ? { name: message.name } : {}),
        ...(message.toolCallId ? { toolCallId: message.toolCallId } : {}),
        ...(message.toolCalls ? { toolCalls: message.toolCalls } : {}),
      })),
    });
    if (result.status !== 'skipped' || result.reason === 'below_threshold' || result.reason === 'no_messages') {
      handedOver.add(
        state.memoryId,
        generation,
        fresh.map((message) => message.messageId),
      );
    }
    await started;
    await emit(
      'memory.observe.completed',
      { step, observed: result.observed, reflected: result.reflected, observation: result.observationCount },
      step,
    );
    if (result.reflectionError) await emit('memory.observe.failed', { step, error: result.reflectionError }, step);
  } catch (error) {
    const report = reportTo(options, state, `observing step ${step} failed`);
    const shown = shownErrorJson(error, options.hideServerFailures, report).message;
    await emit('memory.observe.failed', { step, error: shown }, step).catch(() => undefined);
  } finally {
    // What the observation caused (its reflection, an operation given up) follows its outcome,
    // as in the reference: started, completed or failed, then the reflection.
    state.heldMemoryEvents = undefined;
    for (const event of held) {
      await emit(event.type, event.payload, step).catch((error: unknown) =>
        options.reportFault({
          component: 'runner',
          message: `could not store the ${event.type} event`,
          error,
          runId: state.run.runId,
        }),
      );
    }
  }
}

async function observesScope(memory: ObservationalMemory, scope: Scope): Promise<boolean> {
  if (memory.isEnabled) return memory.isEnabled(scope);
  const status = await memory.status(scope);
  return status.mode !== 'off' && status.enabled;
}
