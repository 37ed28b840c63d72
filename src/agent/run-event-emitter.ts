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
  readonly #afterEach: ((event: RunEvent) => void) | undefined;

  /** `afterEach` sees every event once it is stored and published, in seq order per run. */
  constructor(store: RunStore, hub: EventHub, afterEach?: (event: RunEvent) => void) {
    this.#store = store;
    this.#hub = hub;
    this.#afterEach = afterEach;
  }

  /** Appends an event to the run's history and delivers it live. */
  emit(
    runId: string,
    type: string,
    payload: Record<string, unknown>,
    context: { conversationId: string; step?: number },
  ): Promise<RunEvent> {
    return this.#lock.run(runId, async () => {
      const enriched = {
        ...payload,
        schema_version: '1',
        conversation_id: context.conversationId,
        ...(payload['step'] === undefined && context.step !== undefined ? { step: context.step } : {}),
      };
      const event = await this.#store.appendEvent(runId, type, enriched);
      this.#hub.publish(event);
      this.#afterEach?.(event);
      return event;
    });
  }
}
