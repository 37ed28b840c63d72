/**
 * The `{code, message}` shapes a run ends with, and the runner's own thrown errors.
 * Private to the agent folder.
 * @module
 */
import { HarnessMemoryError } from '../core/errors.js';
import { failureCode, hiddenFailureText, isServerFailure, publicErrorText } from '../core/public-error-text.js';
import type { RunRecord, RunUsage } from '../storage/run-store.js';

/** A run's error as stored and streamed. */
export interface RunErrorJson {
  readonly code: string;
  readonly message: string;
}

/**
 * Any thrown value as a run error: its code when it is ours, else `INTERNAL`. A model call's
 * error names the model server instead of showing its address: a run's error goes to the
 * tenant that started it, who has no business learning where the operator's models run.
 */
export function errorJson(error: unknown): RunErrorJson {
  return { code: failureCode(error), message: publicErrorText(error) };
}

/**
 * {@link errorJson}, except that with `hide` a server failure ({@link isServerFailure}) is
 * named by its code only, `internal error (STORE_FAILED); see the server log`: the tenant has
 * no business learning where the operator's database runs. The hidden failure goes to
 * `report`, so the operator still sees its detail as a fault.
 */
export function shownErrorJson(error: unknown, hide: boolean, report?: (error: unknown) => void): RunErrorJson {
  const hidden = hiddenFailureText(error, hide);
  if (hidden === undefined) return errorJson(error);
  report?.(error);
  return { code: failureCode(error), message: hidden };
}

/**
 * Whether a tool's failure is the server's to hide: a store's or another server code. A tool
 * that throws a plain `Error` is not: its message is the tool's answer to the model.
 */
export function isServerFailureOfTool(error: unknown): boolean {
  return HarnessMemoryError.isInstance(error) && isServerFailure(error);
}

/** Token usage as the events and the API show it. */
export function usageJson(usage: RunUsage): Record<string, number> {
  return { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens };
}

/** Thrown inside the loop when the run's signal was aborted. */
export function cancelled(): Error {
  return new Error('run cancelled');
}

/** The end of a run whose conversation was forgotten while it ran. */
export function forgottenError(run: RunRecord): RunErrorJson {
  return {
    code: 'SCOPE_FORGOTTEN',
    message:
      `conversation ${run.scope.conversationId} was forgotten while run ${run.runId} was active; the ` +
      `run stopped and stored nothing more`,
  };
}

/** A run request the runner refuses. */
export function invalidRequest(message: string): HarnessMemoryError {
  return new HarnessMemoryError({ code: 'REQUEST_INVALID', component: 'runner', message: `${message}.` });
}

/** No such run. */
export function notFound(runId: string): HarnessMemoryError {
  return new HarnessMemoryError({
    code: 'RUN_NOT_FOUND',
    component: 'runner',
    message: `run ${runId} was not found.`,
    data: { runId },
  });
}

/**
 * Whether `error` is a run store's refusal of an event for a run that ended: another process
 * ended it first (it swept the run as abandoned while this one was paused), or its terminal
 * event is stored already.
 */
export function isRunEndedConflict(error: unknown): boolean {
  return HarnessMemoryError.isInstance(error) && error.code === 'STORE_CONFLICT' && 'runId' in error.data;
}

/** The terminal event of an ended run, as the run stands: `run.completed`, `run.failed` or `run.cancelled`. */
export function terminalEventOf(ended: RunRecord): { type: string; payload: Record<string, unknown> } {
  if (ended.status === 'completed')
    return {
      type: 'run.completed',
      payload: { output: ended.output, steps: ended.steps, usage: usageJson(ended.usage) },
    };
  if (ended.status === 'failed') return { type: 'run.failed', payload: { error: ended.error } };
  return { type: 'run.cancelled', payload: {} };
}
