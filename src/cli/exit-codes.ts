/**
 * Exit codes of the `harness` CLI, and how an error becomes one line on stderr.
 * @module
 */
import { CommanderError } from 'commander';
import { HarnessMemoryError } from '../core/errors.js';
import type { HarnessMemoryErrorCode } from '../core/errors.js';

/** Success. */
export const EXIT_OK = 0;
/** A runtime failure: a failed or cancelled run, a store or model error. */
export const EXIT_FAILURE = 1;
/**
 * Bad usage: an unknown command or option, a bad argument, an invalid scope id, a malformed eval dataset or
 * results file.
 */
export const EXIT_USAGE = 2;
/** A configuration error (`CONFIG_INVALID`), as sysexits' `EX_CONFIG`. */
export const EXIT_CONFIG = 78;

/** A mistake in the command line that the argument parser cannot see (`USAGE_INVALID`, exit code 2). */
export class UsageError extends HarnessMemoryError {
  static override readonly kind: string = 'UsageError';
  constructor(message: string) {
    super({ code: 'USAGE_INVALID', component: 'cli', message });
    this.name = 'UsageError';
  }
}

/** Codes that mean the caller's arguments (or the files they named) were wrong, so they exit 2. */
const USAGE_CODES: ReadonlySet<HarnessMemoryErrorCode> = new Set([
  'SCOPE_INVALID',
  'REQUEST_INVALID',
  'WORKING_MEMORY_INVALID',
  'EXPORT_INVALID',
  'OPERATION_NOT_FOUND',
  'OPERATION_NOT_DEAD',
  'EVAL_DATASET_INVALID',
  'EVAL_RESULTS_INVALID',
  'USAGE_INVALID',
  'OBSERVATION_NOT_FOUND',
  'OBSERVATION_INVALID',
]);

/** Scope fields and the options that set them, so errors name what to fix. */
const SCOPE_FLAGS: Readonly<Record<string, string>> = {
  tenant_id: '--tenant',
  conversation_id: '--conversation',
  agent_id: '--agent',
};

/** The exit code for an error. */
export function exitCodeOf(error: unknown): number {
  if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
  if (error instanceof UsageError) return EXIT_USAGE;
  if (HarnessMemoryError.isInstance(error)) {
    if (error.code === 'CONFIG_INVALID') return EXIT_CONFIG;
    if (USAGE_CODES.has(error.code)) return EXIT_USAGE;
  }
  return EXIT_FAILURE;
}

/** One line describing the error, without the `harness: ` prefix. */
export function errorMessageOf(error: unknown): string {
  let message: string;
  if (error instanceof CommanderError) message = error.message.replace(/^error: /, '');
  else if (HarnessMemoryError.isInstance(error)) {
    message = error.detail;
    const flag = error.code === 'SCOPE_INVALID' ? SCOPE_FLAGS[String(error.data['field'])] : undefined;
    if (flag !== undefined) message = `${flag}: ${message}`;
    if (error.code === 'CONFIG_INVALID') message = `configuration: ${message}`;
  } else if (error instanceof Error) message = error.message;
  else message = String(error);
  return message.replace(/\s*\n\s*/g, ' ').trim();
}
