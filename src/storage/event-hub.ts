/**
 * The event-hub port: live delivery of stored run events to subscribers, in this process
 * ({@link createLocalEventHub}) or across replicas (the Postgres adapter's hub).
 * @module
 */
import type { RunEvent } from './run-store.js';

/** Live delivery of run events to subscribers (in this process, or across replicas). */
export interface EventHub {
  /** Delivers a stored event to the run's live subscribers. */
  publish(event: RunEvent): void;
  /** Subscribes to a run's live events; returns the unsubscribe function. */
  subscribe(runId: string, listener: (event: RunEvent) => void): () => void;
}

/** Terminal event types: a run's stream closes after one of these. */
export const TERMINAL_EVENT_TYPES: ReadonlySet<string> = new Set(['run.completed', 'run.failed', 'run.cancelled']);
