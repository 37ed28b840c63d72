/**
 * The agent loop: memory snippets in every turn, tools run, transcript handed to
 * observational memory after each step, events on the run's stream.
 * @module
 */
import { createHash, randomUUID } from 'node:crypto';
import { invalidOption, requireObject, requireOptions, requireString } from '../core/require-option.js';
import { HarnessMemoryError } from '../core/errors.js';
import { IGNORE_FAULTS } from '../core/fault.js';
import type { FaultReporter } from '../core/fault.js';
import { memoryIdOf, resolveScope } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import { RUNE_TOKEN_ESTIMATOR, estimateMessageTokens } from '../core/token-estimator.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import type { LanguageModel } from '../llm/language-model.js';
import type { ObservationalMemory, ObservationalMemoryEvent } from '../memory/observational-memory.js';
import type { WorkingMemory } from '../memory/working-memory.js';
import { StoredMessageKeys } from '../memory/stored-message-keys.js';
import type { Tool } from '../tools/tool.js';
import { RunEventEmitter, createLocalEventHub } from './event-hub.js';
import type { EventHub } from './event-hub.js';
import { createTurnPreparer } from './prepare-turn.js';
import type { ConversationMessage, RunRecord, RunStore, RunUsage } from '../storage/run-store.js';

/** A run request, as `POST /v1/runs` takes it. */
export interface RunRequest {
  readonly prompt: string;
  readonly tenantId?: string;
  readonly conversationId?: string;
  readonly agentId?: string;
  readonly model?: string;
  readonly systemPrompt?: string;
  readonly maxSteps?: number;
}

/** Options of {@link createAgentRunner}. */
export interface AgentRunnerOptions {
  /** The agent's model. */
  model: LanguageModel;
  observationalMemory: ObservationalMemory;
  workingMemory: WorkingMemory;
  runStore: RunStore;
  /** @default an in-process hub */
  hub?: EventHub;
  /** Tools besides `working_memory` and `observational_memory`. */
  tools?: readonly Tool[];
  /** The memory tools (built by the composition root). */
  memoryTools: readonly Tool[];
  /** Folder that exports must stay inside. */
  workspace: string;
  /** @default 10 */
  defaultMaxSteps?: number;
  /** Tokens of earlier conversation history replayed into a run; older history is left to observational memory. @default 8000 */
  historyMaxTokens?: number;
  /**
   * How long the terminal event (`run.completed`, `run.failed`, `run.cancelled`) waits for
   * the run's memory work. An observation still running then is not waited for: its events
   * go to the observational-memory service's subscribers (on the scope), never after the
   * terminal event. @default 60000
   */
  settleTimeoutMs?: number;
  /** `[forensics]` settings. */
  forensics?: { captureRequestEnvelope?: boolean; snapshotMemorySnippet?: boolean };
  estimator?: TokenEstimator;
  /** @default `run_<uuid>` */
  generateRunId?: () => string;
  /** Told of faults the runner survives (a store write that failed as a run ended, …). @default ignored */
  onFault?: FaultReporter;
}

/** Runs agents and tracks their runs. */
export interface AgentRunner {
  readonly hub: EventHub;
  /** Creates a run and starts it in the background; resolves once the run is stored. */
  start(request: RunRequest, options?: { parentRunId?: string }): Promise<RunRecord>;
  /** A new run in the same scope as `runId`. */
  continue(runId: string, prompt: string): Promise<RunRecord>;
  cancel(runId: string): Promise<RunRecord>;
  /** Resolves when the run has ended. */
  wait(runId: string): Promise<RunRecord>;
  /** Resolves when every run started here has ended. */
  settle(): Promise<void>;
  /** True while the run executes in this process (only here can it be cancelled). */
  isLocal(runId: string): boolean;
  /**
   * Keeps runs honest across crashes: heartbeats this process's runs every `heartbeatMs`,
   * and at once and every `sweepMs` fails runs of any process that stopped heartbeating for
   * `abandonAfterSeconds` (`RUN_ABANDONED`, with a `run.failed` event so their streams end).
   */
  startMaintenance(options?: { heartbeatMs?: number; sweepMs?: number; abandonAfterSeconds?: number }): { stop(): Promise<void> };
}

const MAX_PROMPT_CHARS = 200_000;
const RUN_STORE_METHODS = ['createRun', 'getRun', 'updateRun', 'appendEvent', 'listEvents', 'appendMessages', 'recentMessages'];

/**
 * Creates the agent runner.
 * @example
 * const runner = createAgentRunner({ model, observationalMemory, workingMemory, runStore, memoryTools, workspace });
 * const run = await runner.start({ prompt: 'Hello', conversationId: 'c1' });
 * const done = await runner.wait(run.runId);
 */
export function createAgentRunner(options: AgentRunnerOptions): AgentRunner {
  const factory = 'createAgentRunner';
  requireOptions(factory, options, 'Pass { model, observationalMemory, workingMemory, runStore, memoryTools, workspace }.');
  requireObject(factory, 'model', options.model, ['doGenerate'], "Pass the agent's LanguageModel.");
  requireObject(factory, 'observationalMemory', options.observationalMemory, ['observe', 'snippet', 'status', 'subscribe'], 'Pass the service from createObservationalMemory.');
  requireObject(factory, 'workingMemory', options.workingMemory, ['snippet'], 'Pass the service from createWorkingMemory.');
  requireObject(factory, 'runStore', options.runStore, RUN_STORE_METHODS, 'Pass a RunStore, such as createInMemoryRunStore().');
  if (!Array.isArray(options.memoryTools)) throw invalidOption(factory, 'memoryTools', 'is required (an array of tools)', 'Pass [createWorkingMemoryTool(...), createObservationalMemoryTool(...)], or [] for none.');
  requireString(factory, 'workspace', options.workspace, 'Pass the folder tools may write in (exports go to its .harness/observational-memory/).');
  const hub = options.hub ?? createLocalEventHub();
  const events = new RunEventEmitter(options.runStore, hub);
  const estimator = options.estimator ?? RUNE_TOKEN_ESTIMATOR;
  const tools = [...options.memoryTools, ...(options.tools ?? [])];
  const toolsByName = new Map(tools.map((tool) => [tool.name, tool]));
  const active = new Map<string, { controller: AbortController; done: Promise<RunRecord> }>();
  const { runStore, observationalMemory: memory, workingMemory } = options;
  // Every model request of every run is built here.
  const preparer = createTurnPreparer({ observationalMemory: memory, workingMemory, runStore, historyMaxTokens: options.historyMaxTokens ?? 8000, estimator });
  const reportFault = options.onFault ?? IGNORE_FAULTS;

  const runLoop = async (run: RunRecord, signal: AbortSignal): Promise<RunRecord> => {
    const scope = run.scope;
    const memoryId = memoryIdOf(scope);
    let step = 0;
    // Set just before the terminal event: memory events after it are left to the scope's subscribers.
    let closed = false;
    const emit = (type: string, payload: Record<string, unknown> = {}) => events.emit(run.runId, type, payload, { conversationId: scope.conversationId, step });
    const emitMemory = async (type: string, payload: Record<string, unknown>, at: number): Promise<void> => {
      if (!closed) await events.emit(run.runId, type, payload, { conversationId: scope.conversationId, step: at });
    };
    const usage = { inputTokens: 0, outputTokens: 0 };
    let observing: Promise<void> = Promise.resolve();
    const forward = (type: string, payload: Record<string, unknown>): void => {
      emitMemory(type, payload, step).catch((error: unknown) => reportFault({ component: 'runner', message: `could not store the ${type} event`, error, runId: run.runId }));
    };
    const unsubscribe = memory.subscribe((event: ObservationalMemoryEvent) => {
      if (event.type === 'memory.reflection.completed' && event.runId === run.runId) {
        forward('memory.reflection.completed', { trigger: event.trigger, operation_id: event.operationId });
      } else if (event.type === 'memory.operation.dead' && event.runId === run.runId) {
        forward('memory.operation.dead', { operation_id: event.operationId, operation_type: event.operationType, error: event.error, attempts: event.attempts });
      }
    });
    const settle = async (): Promise<void> => {
      await settleWithin(observing, options.settleTimeoutMs ?? 60_000);
      closed = true;
    };
    try {
      await runStore.updateRun(run.runId, { status: 'running' });
      await emit('run.started', { prompt: run.prompt, model: run.model, tenant_id: scope.tenantId, agent_id: scope.agentId });
      // Read once: a forget after this point makes every later write of the run, and its next turn, refuse.
      const [generation, memoryGeneration] = await Promise.all([runStore.conversationGeneration(memoryId), memory.mode === 'off' ? Promise.resolve(0) : memory.generation(scope)]);
      // The run's own messages; earlier history is read afresh for every turn.
      const transcript: ConversationMessage[] = [];
      const append = async (message: Omit<ConversationMessage, 'tokenCount' | 'runId'>): Promise<void> => {
        const stored: ConversationMessage = { ...message, runId: run.runId, tokenCount: estimateMessageTokens(estimator, { content: message.content, toolCalls: message.toolCalls }) };
        await runStore.appendMessages(memoryId, [stored], { generation });
        transcript.push(stored);
      };
      await append({ messageId: `${run.runId}:user`, role: 'user', content: run.prompt });

      while (step < run.maxSteps) {
        if (signal.aborted) throw cancelled();
        step++;
        const turn = await preparer.prepareTurn(scope, { systemPrompt: run.systemPrompt, transcript, generation });
        for (const failure of turn.failures) await emit('memory.snippet.failed', { step, source: failure.source, error: errorJson(failure.error).message });
        if (options.forensics?.captureRequestEnvelope) {
          await emit('llm.request.snapshot', {
            prompt_hash: createHash('sha256').update(JSON.stringify(turn.messages)).digest('hex'),
            tool_names: tools.map((tool) => tool.name),
            ...(options.forensics.snapshotMemorySnippet ? { memory_snippet: turn.snippets.observationalMemory } : {}),
          });
        }
        const result = await options.model.doGenerate({
          messages: turn.messages,
          tools: tools.map((tool) => ({ name: tool.name, description: tool.description, parameters: tool.parameters })),
          ...(run.model !== '' ? { modelId: run.model } : {}),
          abortSignal: signal,
        });
        usage.inputTokens += result.usage.inputTokens;
        usage.outputTokens += result.usage.outputTokens;
        await append({ messageId: `${run.runId}:assistant:${step}`, role: 'assistant', content: result.text, ...(result.toolCalls.length > 0 ? { toolCalls: result.toolCalls } : {}) });
        const final = result.toolCalls.length === 0;
        await emit('assistant.message', { content: result.text, final, tool_calls: result.toolCalls.map((call) => ({ id: call.id, name: call.name })) });
        if (final) await runStore.updateRun(run.runId, { output: result.text, steps: step, usage });

        for (const call of result.toolCalls) {
          if (signal.aborted) throw cancelled();
          await emit('tool.call.started', { tool_call_id: call.id, name: call.name });
          const { content, ok } = await runTool(call.name, call.arguments, { runId: run.runId, toolCallId: call.id, scope });
          await append({ messageId: `${run.runId}:tool:${step}:${call.id}`, role: 'tool', content, toolCallId: call.id, name: call.name });
          await emit('tool.call.completed', { tool_call_id: call.id, name: call.name, ok });
        }

        const stepNumber = step;
        const snapshot = [...turn.history, ...transcript];
        // Observation runs beside the next turn, never in front of it; one at a time per run.
        observing = observing
          .then(() => observeStep(scope, run, stepNumber, snapshot, memoryGeneration, emitMemory))
          .catch((error: unknown) => reportFault({ component: 'runner', message: 'observing a step failed outside its own error handling', error, runId: run.runId }));
        await emit('run.step.completed', { step: stepNumber });
        if (final) {
          await settle();
          await runStore.updateRun(run.runId, { status: 'completed', output: result.text, steps: step, usage });
          await emit('run.completed', { output: result.text, steps: step, usage: usageJson(usage) });
          return (await runStore.getRun(run.runId)) as RunRecord;
        }
      }
      await settle();
      return await fail(run, { code: 'MAX_STEPS', message: `the run reached max_steps (${run.maxSteps}) without a final answer` }, step, usage, emit);
    } catch (error) {
      await settle();
      // A forget deletes the run with its conversation (SQLite, Postgres): nothing is left to record it on.
      const stored = await runStore.getRun(run.runId).catch(() => run);
      if (!stored) return Object.freeze({ ...run, status: 'failed' as const, error: forgottenError(run), steps: step, usage });
      if (signal.aborted) {
        await runStore.updateRun(run.runId, { status: 'cancelled', steps: step, usage });
        await emit('run.cancelled', {});
        return (await runStore.getRun(run.runId)) as RunRecord;
      }
      return await fail(run, errorJson(error), step, usage, emit);
    } finally {
      unsubscribe();
    }
  };

  const observesScope = async (scope: Scope): Promise<boolean> => {
    if (memory.isEnabled) return memory.isEnabled(scope);
    const status = await memory.status(scope);
    return status.mode !== 'off' && status.enabled;
  };

  // Message ids each conversation's memory has taken, by scope generation (see observeStep).
  const handedOver = new StoredMessageKeys();

  const observeStep = async (
    scope: Scope,
    run: RunRecord,
    step: number,
    transcript: readonly ConversationMessage[],
    generation: number,
    emit: (type: string, payload: Record<string, unknown>, step: number) => Promise<void>,
  ): Promise<void> => {
    try {
      // Disabled scopes make no memory events (the reference emitted them on every step).
      if (!(await observesScope(scope))) return;
      await emit('memory.observe.started', { step }, step);
      // The replayed history was handed over by earlier steps and runs: only what memory has
      // not taken yet is handed over again (all of it after a failure or a forget).
      const memoryId = memoryIdOf(scope);
      const known = handedOver.known(memoryId, generation);
      const fresh = known ? transcript.filter((message) => !known.has(message.messageId)) : transcript;
      const result = await memory.observe({
        scope,
        runId: run.runId,
        generation,
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
        handedOver.add(memoryId, generation, fresh.map((message) => message.messageId));
      }
      await emit('memory.observe.completed', { step, observed: result.observed, reflected: result.reflected, observation: result.observationCount }, step);
      if (result.reflectionError) await emit('memory.observe.failed', { step, error: result.reflectionError }, step);
    } catch (error) {
      await emit('memory.observe.failed', { step, error: errorJson(error).message }, step).catch(() => undefined);
    }
  };

  const runTool = async (name: string, args: string, context: { runId: string; toolCallId: string; scope: Scope }): Promise<{ content: string; ok: boolean }> => {
    const tool = toolsByName.get(name);
    if (!tool) return { content: JSON.stringify({ error: { code: 'TOOL_NOT_FOUND', message: `unknown tool "${name}"; available tools are ${[...toolsByName.keys()].join(', ')}` } }), ok: false };
    try {
      const parsed: unknown = args.trim() === '' ? {} : JSON.parse(args);
      const result = await tool.execute(parsed, {
        tenantId: context.scope.tenantId,
        conversationId: context.scope.conversationId,
        agentId: context.scope.agentId,
        runId: context.runId,
        toolCallId: context.toolCallId,
        workspace: options.workspace,
      });
      return { content: JSON.stringify(result), ok: true };
    } catch (error) {
      return { content: JSON.stringify({ error: errorJson(error) }), ok: false };
    }
  };

  const fail = async (run: RunRecord, error: { code: string; message: string }, steps: number, usage: RunUsage, emit: (type: string, payload: Record<string, unknown>) => Promise<unknown>): Promise<RunRecord> => {
    await runStore.updateRun(run.runId, { status: 'failed', error, steps, usage });
    await emit('run.failed', { error });
    return (await runStore.getRun(run.runId)) as RunRecord;
  };

  /**
   * A run whose own failure path failed (its store write or last event threw): the fault is
   * reported, the run's end is written once more if the store lets us, and a record comes
   * back either way, so nothing rejects in the background.
   */
  const endAfterFault = async (run: RunRecord, error: unknown, status: 'failed' | 'cancelled'): Promise<RunRecord> => {
    reportFault({ component: 'runner', message: 'the run could not record its end', error, runId: run.runId });
    const runError = status === 'failed' ? errorJson(error) : null;
    const context = { conversationId: run.scope.conversationId };
    try {
      const ended = await runStore.updateRun(run.runId, { status, ...(runError ? { error: runError } : {}) });
      await events.emit(run.runId, status === 'failed' ? 'run.failed' : 'run.cancelled', runError ? { error: runError } : {}, context);
      return ended;
    } catch (again) {
      // Left as it is, the run is failed as abandoned by the sweep once its heartbeats stop.
      reportFault({ component: 'runner', message: 'the run end could not be recorded a second time; the sweep will fail it as abandoned', error: again, runId: run.runId });
      return { ...run, status, error: runError, updatedAt: new Date().toISOString() };
    }
  };

  const launch = (run: RunRecord): void => {
    const controller = new AbortController();
    const done = runLoop(run, controller.signal)
      .catch((error: unknown) => endAfterFault(run, error, controller.signal.aborted ? 'cancelled' : 'failed'))
      .finally(() => active.delete(run.runId));
    active.set(run.runId, { controller, done });
  };

  const runner: AgentRunner = {
    hub,
    async start(request, startOptions = {}) {
      if (typeof request.prompt !== 'string' || request.prompt.trim() === '') throw invalidRequest('prompt is required');
      if (request.prompt.length > MAX_PROMPT_CHARS) throw invalidRequest(`prompt is longer than ${MAX_PROMPT_CHARS} characters`);
      const maxSteps = request.maxSteps ?? options.defaultMaxSteps ?? 10;
      if (!Number.isSafeInteger(maxSteps) || maxSteps < 1 || maxSteps > 100) throw invalidRequest('max_steps must be an integer from 1 to 100');
      const runId = options.generateRunId?.() ?? `run_${randomUUID()}`;
      const scope = resolveScope({ tenantId: request.tenantId, conversationId: request.conversationId, agentId: request.agentId, runId });
      const run = await runStore.createRun({
        runId,
        scope,
        status: 'queued',
        prompt: request.prompt,
        model: request.model ?? '',
        systemPrompt: request.systemPrompt ?? '',
        maxSteps,
        output: null,
        error: null,
        steps: 0,
        usage: { inputTokens: 0, outputTokens: 0 },
        parentRunId: startOptions.parentRunId ?? null,
      });
      launch(run);
      return run;
    },
    async continue(runId, prompt) {
      const previous = await runStore.getRun(runId);
      if (!previous) throw notFound(runId);
      if (previous.status === 'queued' || previous.status === 'running') {
        throw new HarnessMemoryError({ code: 'RUN_NOT_COMPLETED', component: 'runner', message: `run ${runId} has not finished; continue it once it has.`, data: { runId } });
      }
      return runner.start(
        { prompt, tenantId: previous.scope.tenantId, conversationId: previous.scope.conversationId, agentId: previous.scope.agentId, model: previous.model, systemPrompt: previous.systemPrompt, maxSteps: previous.maxSteps },
        { parentRunId: runId },
      );
    },
    async cancel(runId) {
      const entry = active.get(runId);
      if (entry) {
        entry.controller.abort();
        return entry.done;
      }
      const run = await runStore.getRun(runId);
      if (!run) throw notFound(runId);
      return run;
    },
    async wait(runId) {
      const entry = active.get(runId);
      if (entry) return entry.done;
      const run = await runStore.getRun(runId);
      if (!run) throw notFound(runId);
      return run;
    },
    async settle() {
      while (active.size > 0) await Promise.allSettled([...active.values()].map((entry) => entry.done));
    },
    isLocal(runId) {
      return active.has(runId);
    },
    startMaintenance(maintenanceOptions = {}) {
      const heartbeatMs = maintenanceOptions.heartbeatMs ?? 30_000;
      const sweepMs = maintenanceOptions.sweepMs ?? 60_000;
      const abandonAfterSeconds = maintenanceOptions.abandonAfterSeconds ?? 300;
      let chain: Promise<void> = Promise.resolve();
      // One maintenance task at a time; failures are retried on the next tick.
      const schedule = (task: () => Promise<void>): void => {
        chain = chain.then(task).catch((error: unknown) => reportFault({ component: 'maintenance', message: 'the stale-run sweep failed; it runs again at its next tick', error }));
      };
      const heartbeat = async (): Promise<void> => {
        for (const runId of active.keys()) {
          await runStore.updateRun(runId, {}).catch((error: unknown) => reportFault({ component: 'maintenance', message: 'a run heartbeat failed; the next one retries', error, runId }));
        }
      };
      const sweep = async (): Promise<void> => {
        for (const stale of await runStore.listStaleRuns(abandonAfterSeconds)) {
          if (active.has(stale.runId)) continue;
          const run = await runStore.getRun(stale.runId);
          if (!run || (run.status !== 'queued' && run.status !== 'running')) continue;
          const error = { code: 'RUN_ABANDONED', message: `the harness process running this run stopped before it finished (no heartbeat for ${abandonAfterSeconds} s)` };
          await runStore.updateRun(run.runId, { status: 'failed', error });
          await events.emit(run.runId, 'run.failed', { error }, { conversationId: run.scope.conversationId });
        }
      };
      schedule(sweep);
      const timers = [setInterval(() => schedule(heartbeat), heartbeatMs), setInterval(() => schedule(sweep), sweepMs)];
      for (const timer of timers) timer.unref?.();
      return {
        async stop() {
          for (const timer of timers) clearInterval(timer);
          await chain;
        },
      };
    },
  };
  return runner;
}

async function settleWithin(work: Promise<void>, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
  clearTimeout(timer);
}

function usageJson(usage: RunUsage): Record<string, number> {
  return { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens };
}

function errorJson(error: unknown): { code: string; message: string } {
  if (HarnessMemoryError.isInstance(error)) return { code: error.code, message: error.detail };
  if (error instanceof Error) return { code: 'INTERNAL', message: error.message };
  return { code: 'INTERNAL', message: String(error) };
}

function cancelled(): Error {
  return new Error('run cancelled');
}

function forgottenError(run: RunRecord): { code: string; message: string } {
  return { code: 'SCOPE_FORGOTTEN', message: `conversation ${run.scope.conversationId} was forgotten while run ${run.runId} was active; the run stopped and stored nothing more` };
}

function invalidRequest(message: string): HarnessMemoryError {
  return new HarnessMemoryError({ code: 'REQUEST_INVALID', component: 'runner', message: `${message}.` });
}

function notFound(runId: string): HarnessMemoryError {
  return new HarnessMemoryError({ code: 'RUN_NOT_FOUND', component: 'runner', message: `run ${runId} was not found.`, data: { runId } });
}
