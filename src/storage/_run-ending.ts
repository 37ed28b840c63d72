/**
 * What every run store holds about a run that ended, alike: it is not changed again, and only
 * one terminal event is appended to it. Private to `src/storage/`.
 * @module
 */
import { StoreError } from '../core/errors.js';
import { TERMINAL_EVENT_TYPES } from './event-hub.js';

/** The terminal event types as a SQL list: `'run.completed', 'run.failed', 'run.cancelled'`. */
export const TERMINAL_EVENT_TYPES_SQL: string = [...TERMINAL_EVENT_TYPES].map((type) => `'${type}'`).join(', ');

/**
 * The refusal of an event for a run that ended: anything but its first terminal event.
 * `STORE_CONFLICT`, as another process ended the run first (it swept the run as abandoned
 * while the process running it was paused).
 */
export function runEndedError(store: string, runId: string, status: string, type: string): StoreError {
  return new StoreError({
    store,
    code: 'STORE_CONFLICT',
    message: `Run ${runId} ended (${status}) before this ${type} event; nothing was appended.`,
    data: { runId, status },
  });
}
