/**
 * Faults: failures that happen outside any caller's request (a background promise, a run's
 * last store write, an SSE writer) and that the harness survives. They are reported to one
 * place, which logs and counts them; nothing else about the process changes.
 * @module
 */
import { redactAndCut } from './redact-secrets.js';

/** One fault the harness survived. */
export interface Fault {
  /** Where it happened: `runner`, `maintenance`, `memory-worker`, `sse`, `http`, `process`. */
  readonly component: string;
  /** What was being done, for the log: `run ended with a store error`, … */
  readonly message: string;
  readonly error?: unknown;
  readonly runId?: string;
  readonly operationId?: string;
}

/** Receives faults. Implementations must never throw. */
export type FaultReporter = (fault: Fault) => void;

/** A fault reporter that drops everything (the default where none is given). */
export const IGNORE_FAULTS: FaultReporter = () => {};

/**
 * The parts of an error worth logging: name, code, message (first 2,000 characters) and stack
 * (4,000), secrets redacted before they are cut (cut first, part of a secret could be left
 * that no rule finds, and the log's own redaction would miss it).
 */
export function describeError(error: unknown): { name: string; code?: string; message: string; stack?: string } {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      name: error.name,
      ...(typeof code === 'string' ? { code } : {}),
      message: redactAndCut(error.message, 2000),
      ...(error.stack ? { stack: redactAndCut(error.stack, 4000) } : {}),
    };
  }
  return { name: typeof error, message: redactAndCut(String(error), 2000) };
}
