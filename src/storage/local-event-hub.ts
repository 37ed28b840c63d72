/**
 * The in-process event hub, also the local fan-out of cross-process hubs.
 * @module
 */
import type { EventHub } from './event-hub.js';
import type { RunEvent } from './run-store.js';

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
