/**
 * Stores, then publishes, a run's events in seq order.
 * @module
 */
import { KeyedLock } from '../memory/scope-lock.js';
import type { EventHub } from '../storage/event-hub.js';
import type { RunEvent, RunStore } from '../storage/run-store.js';

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
