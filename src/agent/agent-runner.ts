/**
 * The agent runner: starts, continues, cancels and waits for runs. The loop of one run is
 * `run-loop.ts`, tool calls go through `tool-dispatch.ts`, and heartbeats and the
 * abandoned-run sweep are `run-maintenance.ts`.
 * @module
 */
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import {
  invalidOption,
  requireEstimator,
  requireFunction,
  requireObject,
  requireOptions,
  requireString,
  requireTimerMs,
} from '../core/require-option.js';
import { HarnessMemoryError } from '../core/errors.js';
import { waitAtMost } from '../core/until-stopped.js';
import { WORKER_RELEASE_GRACE_MS } from '../memory/worker-loop.js';
import { redactSecrets } from '../core/redact-secrets.js';
import { needsStripping } from '../core/sanitize-text.js';
import { IGNORE_FAULTS } from '../core/fault.js';
import type { FaultReporter } from '../core/fault.js';
import { resolveScope } from '../core/scope.js';
import { RUNE_TOKEN_ESTIMATOR } from '../core/token-estimator.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import type { LanguageModel } from '../llm/language-model.js';
import type { ObservationalMemory } from '../memory/observational-memory.js';
import { MAX_MODEL_ID_LENGTH } from '../core/observation.js';
import type { WorkingMemory } from '../memory/working-memory.js';
import type { Tool } from '../tools/tool.js';
import { createModelReviewer, createObservationalMemoryTool } from '../tools/observational-memory-tool.js';
import { createWorkingMemoryTool } from '../tools/working-memory-tool.js';
import { createLocalEventHub } from '../storage/local-event-hub.js';
import type { EventHub } from '../storage/event-hub.js';
import type { RunEvent, RunRecord, RunStore } from '../storage/run-store.js';
import { TERMINAL_EVENT_TYPES } from '../storage/event-hub.js';
import {
  invalidRequest,
  isRunEndedConflict,
  isServerFailureOfTool,
  notFound,
  shownErrorJson,
  terminalEventOf,
} from './_run-errors.js';
import { createTurnPreparer } from './prepare-turn.js';
import { RunEventEmitter } from './run-event-emitter.js';
import { createRunLoop, SHUTDOWN_ABORT } from './run-loop.js';
import { startRunMaintenance, type RunMaintenance, type RunMaintenanceOptions } from './run-maintenance.js';
import { createToolDispatcher } from './tool-dispatch.js';

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
  /**
   * The memory tools offered to the model; `[]` offers none.
   * @default the `working_memory` and `observational_memory` tools over the two services
   */
  memoryTools?: readonly Tool[];
  /** Folder that exports must stay inside. */
  workspace: string;
  /** @default 10 */
  defaultMaxSteps?: number;
  /**
   * The model ids a run may name; empty or left out: any. A run that names none uses the
   * agent's model, always allowed. A tenant's run naming another is refused
   * (`REQUEST_INVALID`), so it cannot send the operator's account to any model it likes.
   */
  allowedModels?: readonly string[];
  /**
   * Tokens of earlier conversation history replayed into a run; older history is left to observational memory.
   * @default 8000
   */
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
  /**
   * Show a failure that is the server's own (a store's `STORE_FAILED`, a bug's `INTERNAL`) to
   * the run's tenant by its code only: the run's error, its `memory.snippet.failed` and
   * `memory.observe.failed` events and the model's tool results say `internal error
   * (STORE_FAILED); see the server log`, and the detail (which names database files, schemas,
   * addresses) goes to `onFault`. For a server whose tenants are not its operator; the harness
   * server turns it on. A tool that throws a plain `Error` is not hidden: its message is the
   * tool's answer to the model. @default false: in your own process the run's error keeps its
   * detail
   */
  hideServerFailures?: boolean;
}

/** Runs agents and tracks their runs. */
export interface AgentRunner {
  readonly hub: EventHub;
  /**
   * Creates a run and starts it in the background; resolves once the run is stored.
   * `onEvent` sees every event of the run as it is stored, in order, the terminal one
   * (`run.completed`, `run.failed`, `run.cancelled`) last, without subscribing to the hub. A
   * callback that throws is reported as a fault and never breaks the run. When the run's
   * conversation is forgotten while it runs, nothing more is stored, and the last event is a
   * `run.failed` (`SCOPE_FORGOTTEN`) given to `onEvent` only.
   */
  start(
    request: RunRequest,
    options?: { parentRunId?: string; onEvent?: (event: RunEvent) => void },
  ): Promise<RunRecord>;
  /**
   * A new run in the same scope as `runId`, with its model, system prompt and step limit. The
   * system prompt is the one `runId` was given when it was started by this runner (among its
   * last 256 runs); otherwise the stored one, which is redacted when the run store redacts.
   * `RUN_NOT_COMPLETED` until `runId` has answered; a run whose answer is stored may be
   * continued while its memory work settles.
   */
  continue(runId: string, prompt: string): Promise<RunRecord>;
  cancel(runId: string): Promise<RunRecord>;
  /** Resolves when the run has ended. */
  wait(runId: string): Promise<RunRecord>;
  /**
   * Resolves when every run started here has ended. With `timeoutMs`, the runs still going
   * then are cancelled (each ends `cancelled`, its stream told) and waited for.
   */
  settle(options?: { readonly timeoutMs?: number }): Promise<void>;
  /**
   * For a shutdown, once `settle` has returned: waits up to `timeoutMs` (default 0) for the
   * observations of runs started here still going (a run whose answer was in ended `completed`
   * and left its observation to go on), then aborts them. Each one's model call is aborted and
   * its operation put back in the queue as a cancelled observe's is (`queued`, available at
   * once, its attempt not counted), for the next process to run at once rather than after
   * its lease. Resolves once they have ended, or at most 2 s after the abort (a store that does
   * not answer). Observations asked for later are cancelled before they store anything (their
   * messages stay in the conversation, for its next run to hand over). A run's `cancel` never
   * does this: a cancelled run's observation goes on.
   */
  stopObserving(options?: { readonly timeoutMs?: number }): Promise<void>;
  /** True while the run executes in this process (only here can it be cancelled). */
  isLocal(runId: string): boolean;
  /**
   * Keeps runs honest across crashes: heartbeats this process's runs every `heartbeatMs`,
   * and at once and every `sweepMs` fails runs of any process that stopped heartbeating for
   * `abandonAfterSeconds` (`RUN_ABANDONED`, with a `run.failed` event so their streams end),
   * then deletes runs that ended more than `runRetentionSeconds` ago and settled memory
   * operations not written for `operationRetentionSeconds` (through the observational memory's
   * `deleteSettledOperations`), each when set.
   */
  startMaintenance(options?: RunMaintenanceOptions): RunMaintenance;
}

const MAX_PROMPT_CHARS = 200_000;
const RUN_STORE_METHODS = [
  'createRun',
  'getRun',
  'updateRun',
  'appendEvent',
  'listEvents',
  'appendMessages',
  'recentMessages',
];

/**
 * Creates the agent runner.
 * @example
 * const runner = createAgentRunner({ model, observationalMemory, workingMemory, runStore, workspace });
 * const run = await runner.start({ prompt: 'Hello', conversationId: 'c1' });
 * const done = await runner.wait(run.runId);
 */
export function createAgentRunner(options: AgentRunnerOptions): AgentRunner {
  validateRunnerOptions(options);
  const hub = options.hub ?? createLocalEventHub();
  const reportFault = options.onFault ?? IGNORE_FAULTS;
  const callbacks = new Map<string, RunCallback>();
  // The system prompts of runs started here, as given: the stored one is redacted (with
  // redact_transcripts), and a continued run must get the prompt its parent was given.
  const givenSystemPrompts = new Map<string, string>();
  const events = new RunEventEmitter(options.runStore, hub, (event) => deliverEvent(callbacks, event, reportFault));
  const estimator = options.estimator ?? RUNE_TOKEN_ESTIMATOR;
  const active = new Map<string, { controller: AbortController; done: Promise<RunRecord> }>();
  const { runStore } = options;
  const allowed = new Set(options.allowedModels ?? []);
  let shutdownDeadline: number | undefined;
  const observes = new RunObserves();
  const runLoop = runLoopOf(options, events, estimator, reportFault, () => shutdownDeadline, observes);

  const launch = (run: RunRecord): void => {
    const controller = new AbortController();
    const done = runLoop(run, controller.signal)
      .catch((error: unknown) =>
        endAfterFault(
          { runStore, events, reportFault, hideServerFailures: options.hideServerFailures === true },
          run,
          error,
          controller.signal.aborted ? 'cancelled' : 'failed',
        ),
      )
      .then((record) => {
        closeCallback(callbacks, record, reportFault);
        return record;
      })
      .finally(() => {
        active.delete(run.runId);
        callbacks.delete(run.runId);
      });
    active.set(run.runId, { controller, done });
  };

  /** The stored run; `RUN_NOT_FOUND` when there is none. */
  const recordOf = async (runId: string): Promise<RunRecord> => {
    const run = await runStore.getRun(runId);
    if (!run) throw notFound(runId);
    return run;
  };

  const runner: AgentRunner = {
    hub,
    async start(request, startOptions = {}) {
      const maxSteps = checkStart(request, startOptions, options.defaultMaxSteps ?? 10);
      const model = modelIdOf(request.model);
      if (allowed.size > 0 && model !== '' && !allowed.has(model))
        throw invalidRequest(
          `model ${JSON.stringify(model)} is not allowed on this server; allowed: ${[...allowed].join(', ')} ` +
            '(or leave model out for the default)',
        );
      const runId = options.generateRunId?.() ?? `run_${randomUUID()}`;
      const scope = resolveScope({
        tenantId: request.tenantId,
        conversationId: request.conversationId,
        agentId: request.agentId,
        runId,
      });
      const run = await runStore.createRun({
        runId,
        scope,
        status: 'queued',
        prompt: request.prompt,
        model,
        systemPrompt: request.systemPrompt ?? '',
        maxSteps,
        output: null,
        error: null,
        steps: 0,
        usage: { inputTokens: 0, outputTokens: 0 },
        parentRunId: startOptions.parentRunId ?? null,
      });
      if (startOptions.onEvent) callbacks.set(runId, { onEvent: startOptions.onEvent, lastSeq: 0 });
      keepNewest(givenSystemPrompts, runId, request.systemPrompt ?? '', GIVEN_SYSTEM_PROMPTS_KEPT);
      launch(run);
      return run;
    },
    async continue(runId, prompt) {
      const previous = await runStore.getRun(runId);
      if (!previous) throw notFound(runId);
      // A run whose final answer is stored only waits for its memory work (up to the settle
      // timeout): the user's next turn need not wait for the observer too.
      const answered = previous.status === 'running' && previous.output !== null;
      if (previous.status === 'queued' || (previous.status === 'running' && !answered)) {
        throw new HarnessMemoryError({
          code: 'RUN_NOT_COMPLETED',
          component: 'runner',
          message: `run ${runId} has not answered yet; continue it once it has.`,
          data: { runId },
        });
      }
      return runner.start(
        {
          prompt,
          tenantId: previous.scope.tenantId,
          conversationId: previous.scope.conversationId,
          agentId: previous.scope.agentId,
          model: previous.model,
          systemPrompt: givenSystemPrompts.get(runId) ?? previous.systemPrompt,
          maxSteps: previous.maxSteps,
        },
        { parentRunId: runId },
      );
    },
    async cancel(runId) {
      const entry = active.get(runId);
      if (!entry) return recordOf(runId);
      entry.controller.abort();
      return entry.done;
    },
    async wait(runId) {
      return active.get(runId)?.done ?? recordOf(runId);
    },
    async settle(settleOptions = {}) {
      const timeoutMs = requireTimerMs('AgentRunner.settle', 'timeoutMs', settleOptions.timeoutMs, 0);
      const deadline = timeoutMs === undefined ? undefined : performance.now() + timeoutMs;
      // From now on no run waits for its memory work past the deadline (runs started later too).
      if (deadline !== undefined) shutdownDeadline = Math.min(shutdownDeadline ?? deadline, deadline);
      while (active.size > 0) {
        const ended = Promise.allSettled([...active.values()].map((entry) => entry.done));
        const left = deadline === undefined ? undefined : deadline - performance.now();
        if (left !== undefined && left <= 0) {
          for (const entry of active.values()) entry.controller.abort(SHUTDOWN_ABORT);
          await ended;
          continue;
        }
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          ended,
          ...(left === undefined ? [] : [new Promise<void>((resolve) => (timer = setTimeout(resolve, left)))]),
        ]);
        clearTimeout(timer);
      }
    },
    async stopObserving(stopOptions = {}) {
      const timeoutMs = requireTimerMs('AgentRunner.stopObserving', 'timeoutMs', stopOptions.timeoutMs, 0) ?? 0;
      await observes.stop(timeoutMs);
    },
    isLocal(runId) {
      return active.has(runId);
    },
    startMaintenance(maintenanceOptions = {}) {
      const deleteSettledOperations = options.observationalMemory.deleteSettledOperations?.bind(
        options.observationalMemory,
      );
      return startRunMaintenance(
        {
          runStore,
          events,
          activeRunIds: () => active.keys(),
          isActive: (runId) => active.has(runId),
          endedElsewhere: (runId) => active.get(runId)?.controller.abort(),
          reportFault,
          ...(deleteSettledOperations ? { deleteSettledOperations } : {}),
        },
        {
          // Expired working-memory rows are deleted by the sweep unless the caller says otherwise.
          ...(options.workingMemory.purgeExpired
            ? { purgeExpiredWorkingMemory: options.workingMemory.purgeExpired.bind(options.workingMemory) }
            : {}),
          ...maintenanceOptions,
        },
      );
    },
  };
  return runner;
}

/** The reason {@link AgentRunner.stopObserving} aborts the runs' observe calls with. */
const OBSERVING_STOPPED = new DOMException('the runner stopped observing: it is shutting down', 'AbortError');

/** The observe calls of the runner's runs: one signal for all of them, and the calls still going. */
class RunObserves {
  readonly #stop = new AbortController();
  readonly #going = new Set<Promise<unknown>>();

  constructor() {
    // Every observe in flight listens to it (many runs at once): not a leak to warn about.
    setMaxListeners(0, this.#stop.signal);
  }

  get signal(): AbortSignal {
    return this.#stop.signal;
  }

  readonly track = (observing: Promise<unknown>): void => {
    this.#going.add(observing);
    const done = (): void => void this.#going.delete(observing);
    observing.then(done, done);
  };

  /** Waits up to `timeoutMs` for the calls going, aborts them, and waits for them a little more. */
  async stop(timeoutMs: number): Promise<void> {
    const ended = () => Promise.allSettled(this.#going);
    if (timeoutMs > 0 && this.#going.size > 0) await waitAtMost(ended(), timeoutMs);
    this.#stop.abort(OBSERVING_STOPPED);
    if (this.#going.size > 0) await waitAtMost(ended(), WORKER_RELEASE_GRACE_MS);
  }
}

/** The most model turns a run may take (`max_steps`). */
export const MAX_RUN_STEPS = 100;

/** Both memory tools over the runner's services. */
function defaultMemoryTools(options: AgentRunnerOptions): Tool[] {
  return [
    createWorkingMemoryTool(options.workingMemory),
    createObservationalMemoryTool({
      memory: options.observationalMemory,
      reviewer: createModelReviewer(options.model),
    }),
  ];
}

/** How many runs' system prompts a runner keeps as given, for `continue`. */
const GIVEN_SYSTEM_PROMPTS_KEPT = 256;

/** Sets `key`, dropping the oldest entries past `limit`; an empty value is not kept. */
function keepNewest(map: Map<string, string>, key: string, value: string, limit: number): void {
  if (value === '') return;
  map.set(key, value);
  for (const oldest of map.keys()) {
    if (map.size <= limit) break;
    map.delete(oldest);
  }
}

/** A run's `onEvent`, and the seq of the last event it was given. */
interface RunCallback {
  readonly onEvent: (event: RunEvent) => void;
  lastSeq: number;
}

/**
 * The end of a run whose callback got no terminal event: its conversation was forgotten while
 * it ran, so nothing more could be stored. The callback still gets the run's end, as a
 * `run.failed` that is not stored, so "the terminal event last" holds.
 */
function closeCallback(callbacks: Map<string, RunCallback>, record: RunRecord, reportFault: FaultReporter): void {
  const callback = callbacks.get(record.runId);
  if (!callback || (record.status !== 'failed' && record.status !== 'cancelled' && record.status !== 'completed'))
    return;
  const seq = callback.lastSeq + 1;
  deliverEvent(
    callbacks,
    {
      id: `${record.runId}:${seq}`,
      runId: record.runId,
      seq,
      type: `run.${record.status}`,
      timestamp: new Date().toISOString(),
      // As the emitter enriches every stored event's payload.
      payload: {
        ...(record.error ? { error: record.error } : {}),
        schema_version: '1',
        conversation_id: record.scope.conversationId,
      },
    },
    reportFault,
  );
}

/**
 * Hands a run's event to its `onEvent` callback (dropped after the run's last event); a throwing
 * callback is a fault.
 */
function deliverEvent(callbacks: Map<string, RunCallback>, event: RunEvent, reportFault: FaultReporter): void {
  const callback = callbacks.get(event.runId);
  if (!callback) return;
  if (TERMINAL_EVENT_TYPES.has(event.type)) callbacks.delete(event.runId);
  callback.lastSeq = Math.max(callback.lastSeq, event.seq);
  try {
    callback.onEvent(event);
  } catch (error) {
    reportFault({
      component: 'runner',
      message: `the onEvent callback threw on ${event.type}`,
      error,
      runId: event.runId,
    });
  }
}

/** The run loop over the runner's options: one turn preparer builds every model request of every run. */
function runLoopOf(
  options: AgentRunnerOptions,
  events: RunEventEmitter,
  estimator: TokenEstimator,
  reportFault: FaultReporter,
  shutdownDeadline: () => number | undefined,
  observes: RunObserves,
): ReturnType<typeof createRunLoop> {
  const { runStore, observationalMemory: memory, workingMemory } = options;
  const hideServerFailures = options.hideServerFailures === true;
  return createRunLoop({
    model: options.model,
    memory,
    workingMemory,
    runStore,
    events,
    preparer: createTurnPreparer({
      observationalMemory: memory,
      workingMemory,
      runStore,
      historyMaxTokens: options.historyMaxTokens ?? 8000,
      estimator,
    }),
    tools: createToolDispatcher({
      tools: [...(options.memoryTools ?? defaultMemoryTools(options)), ...(options.tools ?? [])],
      workspace: options.workspace,
      shownError: (error, target) =>
        shownErrorJson(error, hideServerFailures && isServerFailureOfTool(error), (detail) =>
          reportFault({ component: 'runner', message: 'a tool failed', error: detail, runId: target.runId }),
        ),
    }),
    estimator,
    settleTimeoutMs: options.settleTimeoutMs ?? 60_000,
    shutdownDeadline,
    observes,
    ...(options.forensics ? { forensics: options.forensics } : {}),
    reportFault,
    hideServerFailures,
  });
}

/** Checks a start request; returns its step limit. */
function checkStart(
  request: Parameters<AgentRunner['start']>[0],
  startOptions: NonNullable<Parameters<AgentRunner['start']>[1]>,
  defaultMaxSteps: number,
): number {
  if (typeof request.prompt !== 'string' || request.prompt.trim() === '') throw invalidRequest('prompt is required');
  if (request.prompt.length > MAX_PROMPT_CHARS)
    throw invalidRequest(`prompt is longer than ${MAX_PROMPT_CHARS} characters`);
  const maxSteps = request.maxSteps ?? defaultMaxSteps;
  if (!Number.isSafeInteger(maxSteps) || maxSteps < 1 || maxSteps > MAX_RUN_STEPS)
    throw invalidRequest(`max_steps must be an integer from 1 to ${MAX_RUN_STEPS}`);
  if (startOptions.onEvent !== undefined && typeof startOptions.onEvent !== 'function')
    throw invalidRequest('onEvent must be a function');
  return maxSteps;
}

/**
 * A run's model id, trimmed (blank means the agent's default). It is stored with the run, sent
 * on its events and kept by memory's operations as it is, so it must be a plain id: never a key
 * pasted into the wrong field.
 */
function modelIdOf(given: unknown): string {
  if (given === undefined) return '';
  if (typeof given !== 'string') throw invalidRequest('model must be a string');
  const model = given.trim();
  if (model.length > MAX_MODEL_ID_LENGTH)
    throw invalidRequest(`model is ${model.length} characters long; at most ${MAX_MODEL_ID_LENGTH} are allowed`);
  if (/[\n\t]/.test(model) || needsStripping(model))
    throw invalidRequest('model must not contain control characters, new lines or invisible characters');
  const kinds = Object.keys(redactSecrets(model).counts);
  if (kinds.length > 0) {
    throw invalidRequest(
      `model looks like a secret (${kinds.join(', ')}); pass a model id such as gpt-4.1-mini, and give the key ` +
        "through the provider's API key variable",
    );
  }
  return model;
}

/**
 * A run whose own failure path failed (its store write or last event threw): the fault is
 * reported, the run's end is written once more if the store lets us, and a record comes
 * back either way, so nothing rejects in the background.
 */
async function endAfterFault(
  dependencies: {
    readonly runStore: RunStore;
    readonly events: RunEventEmitter;
    readonly reportFault: FaultReporter;
    readonly hideServerFailures: boolean;
  },
  run: RunRecord,
  error: unknown,
  status: 'failed' | 'cancelled',
): Promise<RunRecord> {
  const { runStore, events, reportFault } = dependencies;
  reportFault({ component: 'runner', message: 'the run could not record its end', error, runId: run.runId });
  const runError = status === 'failed' ? shownErrorJson(error, dependencies.hideServerFailures) : null;
  const context = { conversationId: run.scope.conversationId };
  try {
    // A run that ended already (its own end was stored before its terminal event failed, or
    // another process ended it) comes back as it stands: its end is the one streamed.
    const ended = await runStore.updateRun(run.runId, { status, ...(runError ? { error: runError } : {}) });
    const terminal = terminalEventOf(ended);
    await events.emit(run.runId, terminal.type, terminal.payload, context).catch((error: unknown) => {
      // Its terminal event is stored already.
      if (!isRunEndedConflict(error)) throw error;
    });
    return ended;
  } catch (again) {
    // Left open, the run is failed as abandoned by the sweep once its heartbeats stop.
    reportFault({
      component: 'runner',
      message:
        'the run end could not be recorded a second time; a run left open is failed as abandoned once its ' +
        'heartbeats stop',
      error: again,
      runId: run.runId,
    });
    return { ...run, status, error: runError, updatedAt: new Date().toISOString() };
  }
}

function validateRunnerOptions(options: AgentRunnerOptions): void {
  const factory = 'createAgentRunner';
  requireOptions(factory, options, 'Pass { model, observationalMemory, workingMemory, runStore, workspace }.');
  requireObject(factory, 'model', options.model, ['doGenerate'], "Pass the agent's LanguageModel.");
  requireObject(
    factory,
    'observationalMemory',
    options.observationalMemory,
    ['observe', 'snippet', 'status', 'subscribe'],
    'Pass the service from createObservationalMemory.',
  );
  requireObject(
    factory,
    'workingMemory',
    options.workingMemory,
    ['snippet'],
    'Pass the service from createWorkingMemory.',
  );
  requireObject(
    factory,
    'runStore',
    options.runStore,
    RUN_STORE_METHODS,
    'Pass a RunStore, such as createInMemoryRunStore().',
  );
  if (
    options.allowedModels !== undefined &&
    options.allowedModels !== null &&
    (!Array.isArray(options.allowedModels) ||
      options.allowedModels.some((model) => typeof model !== 'string' || model.trim() === ''))
  )
    throw invalidOption(
      factory,
      'allowedModels',
      'must be an array of model ids',
      'Pass ["gpt-5-mini", …], or leave it out to allow any.',
    );
  if (options.memoryTools !== undefined && !Array.isArray(options.memoryTools))
    throw invalidOption(
      factory,
      'memoryTools',
      'must be an array of tools',
      'Pass [createWorkingMemoryTool(...), createObservationalMemoryTool(...)], [] for none, or leave it out for both.',
    );
  requireString(
    factory,
    'workspace',
    options.workspace,
    'Pass the folder tools may write in (exports go to its .harness/observational-memory/).',
  );
  requireEstimator(factory, options.estimator);
  for (const option of ['generateRunId', 'onFault'] as const) requireFunction(factory, option, options[option]);
}
