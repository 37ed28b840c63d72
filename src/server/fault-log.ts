/**
 * The server's logger port and its fault log: faults are written as JSON lines (secrets
 * redacted) and counted, and `/healthz` shows the count.
 * @module
 */
import { describeError } from '../core/fault.js';
import { requireObject } from '../core/require-option.js';
import type { Fault, FaultReporter } from '../core/fault.js';
import { redactSecrets } from '../core/redact-secrets.js';

/** One structured log record; written as one JSON line. */
export type LogRecord = Readonly<Record<string, unknown>> & {
  readonly level: 'error' | 'warn' | 'info';
  readonly event: string;
};

/** Where the server writes its log. */
export interface Logger {
  log(record: LogRecord): void;
}

/**
 * A logger writing one JSON object per line, with `time` added and secrets redacted.
 * @example
 * const logger = createJsonLogger(process.stderr);
 * logger.log({ level: 'error', event: 'fault', component: 'runner', message: 'boom' });
 */
export function createJsonLogger(stream: { write(chunk: string): unknown } = process.stderr): Logger {
  return {
    log(record) {
      try {
        stream.write(`${redactSecrets(JSON.stringify({ time: new Date().toISOString(), ...record })).text}\n`);
      } catch {
        // Logging must never become a fault of its own.
      }
    },
  };
}

/** Logs and counts faults. */
export interface FaultLog {
  readonly report: FaultReporter;
  /** Faults reported since start. */
  count(): number;
  /** The count per component. */
  countsByComponent(): Readonly<Record<string, number>>;
}

/** Creates a fault log writing to `logger`. */
export function createFaultLog(logger: Logger): FaultLog {
  requireObject(
    'createFaultLog',
    'logger',
    logger,
    ['log'],
    'Pass a Logger, such as createJsonLogger(process.stderr).',
  );
  const counts = new Map<string, number>();
  let total = 0;
  return {
    report(fault: Fault) {
      total++;
      counts.set(fault.component, (counts.get(fault.component) ?? 0) + 1);
      logger.log({
        level: 'error',
        event: 'fault',
        component: fault.component,
        message: fault.message,
        ...(fault.runId === undefined ? {} : { run_id: fault.runId }),
        ...(fault.operationId === undefined ? {} : { operation_id: fault.operationId }),
        ...(fault.error === undefined ? {} : { error: describeError(fault.error) }),
      });
    },
    count: () => total,
    countsByComponent: () => Object.fromEntries(counts),
  };
}
