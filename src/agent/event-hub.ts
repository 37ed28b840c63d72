import { KeyedLock } from '../memory/scope-lock.js';
import type { RunEvent, RunStore } from '../storage/run-store.js';

/** Live delivery of run events to subscribers (in this process, or across replicas). */
export interface EventHub {
  /** Delivers a stored event to the run's live subscribers. */
  publish(event: RunEvent): void;
  /** Subscribes to a run's live events; returns the unsubscribe function. */
  subscribe(runId: string, listener: (event: RunEvent) => void): () => void;
}

/** An in-process hub, also the local fan-out of cross-process hubs. */
export interface LocalEventHub extends EventHub {
  /** Runs that have live subscribers. */
  subscribedRunIds(): string[];
  /** Drops every subscriber. */
  clear(): void;
}

/** An event hub for one process. */
export function createLocalEventHub(): LocalEventHub {
  const listeners = new Map<string, Set<(event: RunEvent) => void>>();
  return {
    subscribedRunIds() {
      return [...listeners.keys()];
    },
    clear() {
      listeners.clear();
    },
    publish(event) {
      for (const listener of listeners.get(event.runId) ?? []) {
        try {
          listener(event);
        } catch {
          // A failing subscriber must never stall the run or other subscribers.
        }
      }
    },
    subscribe(runId, listener) {
      let set = listeners.get(runId);
      if (!set) {
        set = new Set();
        listeners.set(runId, set);
      }
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size === 0 && listeners.get(runId) === set) listeners.delete(runId);
      };
    },
  };
}

/** Terminal event types: a run's stream closes after one of these. */
export const TERMINAL_EVENT_TYPES: ReadonlySet<string> = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/**
 * Stores then publishes events, one run at a time, so live delivery follows seq order.
 * Every payload carries `schema_version: "1"`, `conversation_id` and `step` when known.
 */
export class RunEventEmitter {
  readonly #store: RunStore;
  readonly #hub: EventHub;
  readonly #lock = new KeyedLock();

  constructor(store: RunStore, hub: EventHub) {
    this.#store = store;
    this.#hub = hub;
  }

  /** Appends an event to the run's history and delivers it live. */
  emit(runId: string, type: string, payload: Record<string, unknown>, context: { conversationId: string; step?: number }): Promise<RunEvent> {
    return this.#lock.run(runId, async () => {
      const enriched = {
        ...payload,
        schema_version: '1',
        conversation_id: context.conversationId,
        ...(payload['step'] === undefined && context.step !== undefined ? { step: context.step } : {}),
      };
      const event = await this.#store.appendEvent(runId, type, enriched);
      this.#hub.publish(event);
      return event;
    });
  }
}
