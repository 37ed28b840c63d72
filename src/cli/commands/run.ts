/**
 * `harness run "<prompt>"`: one run in this process, streamed to the terminal.
 * @module
 */
import type { Command } from 'commander';
import { MAX_RUN_STEPS } from '../../agent/agent-runner.js';
import { TERMINAL_EVENT_TYPES } from '../../storage/event-hub.js';
import { HarnessMemoryError } from '../../core/errors.js';
import type { Harness } from '../../server/create-harness.js';
import type { RunEvent, RunRecord } from '../../storage/run-store.js';
import { stopRequested } from '../context.js';
import type { CliContext, CommandResult } from '../context.js';
import { createEventView } from '../event-view.js';
import type { EventView } from '../event-view.js';
import { EXIT_FAILURE, EXIT_OK, UsageError } from '../exit-codes.js';
import { openHarness, warnMemoryModelMissing } from '../open-harness.js';
import { nonBlankId, positiveInteger } from '../scope-options.js';

interface RunOptions {
  readonly tenant?: string;
  readonly conversation?: string;
  readonly agent?: string;
  readonly system?: string;
  readonly maxSteps?: number;
  readonly model?: string;
  readonly json?: boolean;
}

/** Registers `run`. */
export function registerRunCommand(program: Command, context: CliContext, result: CommandResult): void {
  program
    .command('run')
    .description('run the agent once, in this process, streaming its answer, tool calls and memory events')
    .argument('<prompt>', 'what to ask the agent')
    .option('--tenant <id>', 'tenant id (default: default)', nonBlankId('--tenant'))
    .option('--conversation <id>', 'conversation id; reuse it to continue a conversation (default: the run id)')
    .option('--agent <id>', 'agent id (default: default)', nonBlankId('--agent'))
    .option('--system <prompt>', 'system prompt')
    .option(
      '--max-steps <n>',
      `most model turns (1 to ${MAX_RUN_STEPS}, default 10)`,
      positiveInteger('--max-steps', MAX_RUN_STEPS),
    )
    .option('--model <id>', 'agent model id for this run (default: HARNESS_MODEL or [model] name)')
    .option(
      '--json',
      'print one JSON event per line ({id, run_id, type, timestamp, payload}) and nothing else on stdout',
    )
    .addHelpText('after', '\nExit code 0 when the run completes, 1 when it fails or is cancelled (Ctrl-C cancels it).')
    .action(async (prompt: string, options: RunOptions) => {
      result.exitCode = await run(context, prompt, options);
    });
}

async function run(context: CliContext, prompt: string, options: RunOptions): Promise<number> {
  if (prompt.trim() === '') throw new UsageError('<prompt> must not be empty: say what to ask the agent');
  // As `serve` does: the answer needs the agent model (exit 78 without one); memory's model
  // only memory, so a mistake in its settings is a warning (none with memory off).
  const harness = await openHarness(context, {
    startWorker: true,
    memoryModelOptional: true,
    onModelMissing: (_role, error) => void warnMemoryModelMissing(context, error),
  });
  const view = createEventView(context, { json: options.json === true });
  try {
    const end = runEnd();
    const started = await start(harness, prompt, options, end.onEvent);
    const stop = stopRequested(context, () => void harness.runner.cancel(started.runId).catch(() => {}));
    try {
      const last = await follow(harness, started.runId, view, end);
      return last === 'run.completed' ? EXIT_OK : EXIT_FAILURE;
    } finally {
      stop.dispose();
    }
  } finally {
    view.close();
    await harness.dispose();
  }
}

/** The argument or option that sets each field a refused run request names first. */
const REQUEST_FIELD_FLAGS: ReadonlyMap<string, string> = new Map([
  ['prompt', '<prompt>'],
  ['model', '--model'],
  ['max_steps', '--max-steps'],
]);

/** Starts the run; a request the runner refuses names the argument or option to fix. */
async function start(
  harness: Harness,
  prompt: string,
  options: RunOptions,
  onEvent: (event: RunEvent) => void,
): Promise<RunRecord> {
  try {
    return await harness.runner.start(
      {
        prompt,
        ...definedOnly({
          tenantId: options.tenant,
          conversationId: options.conversation,
          agentId: options.agent,
          systemPrompt: options.system,
          maxSteps: options.maxSteps,
          model: options.model,
        }),
      },
      { onEvent },
    );
  } catch (error) {
    if (!HarnessMemoryError.isInstance(error) || error.code !== 'REQUEST_INVALID') throw error;
    const flag = REQUEST_FIELD_FLAGS.get(/^\w+/.exec(error.detail)?.[0] ?? '');
    if (flag === undefined) throw error;
    throw new HarnessMemoryError({
      code: 'REQUEST_INVALID',
      component: 'cli',
      message: `${flag}: ${error.detail}`,
      cause: error,
    });
  }
}

/** The run's terminal event as the runner hands it over, and a wake-up for {@link follow}. */
interface RunEnd {
  readonly onEvent: (event: RunEvent) => void;
  /** The terminal event given, once the run has ended. */
  given(): RunEvent | undefined;
  /** Called when the terminal event is given. */
  onEnd?: () => void;
}

function runEnd(): RunEnd {
  let terminal: RunEvent | undefined;
  const end: RunEnd = {
    onEvent(event) {
      if (!TERMINAL_EVENT_TYPES.has(event.type)) return;
      terminal = event;
      end.onEnd?.();
    },
    given: () => terminal,
  };
  return end;
}

/**
 * Shows the run's events until a terminal one. The store is the source of truth (an event
 * may be stored before we subscribe); the hub only wakes us up. A run whose conversation was
 * forgotten while it ran stores nothing more, not even its end: its terminal event is then the
 * one the runner gave (`run.failed`, `SCOPE_FORGOTTEN`).
 */
async function follow(harness: Harness, runId: string, view: EventView, end: RunEnd): Promise<string> {
  let after = -1;
  let pending = false;
  let wake: (() => void) | undefined;
  const unsubscribe = harness.hub.subscribe(runId, () => {
    pending = true;
    wake?.();
  });
  end.onEnd = () => {
    pending = true;
    wake?.();
  };
  try {
    for (;;) {
      pending = false;
      // Read before the listing: an end the runner gave was stored before it was given, if at all.
      const given = end.given();
      for (const event of await harness.runStore.listEvents(runId, after)) {
        after = event.seq;
        view.show(event);
        if (TERMINAL_EVENT_TYPES.has(event.type)) return event.type;
      }
      if (given) {
        view.show(given);
        return given.type;
      }
      if (pending) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 500);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  } finally {
    unsubscribe();
  }
}

function definedOnly<T extends Record<string, unknown>>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, item]) => item !== undefined)) as Partial<T>;
}
