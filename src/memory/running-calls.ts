/**
 * The memory-model calls in flight, by scope.
 * @module
 */

/**
 * The memory-model calls running for each scope, so that forgetting a scope stops them at
 * once: otherwise `forget` waited behind the scope's lock for as long as an observe or a
 * reflection kept the model busy (up to 80% of the lease).
 */
export class RunningCalls {
  readonly #byScope = new Map<string, Set<AbortController>>();

  /** Notes a call of `memoryId` until `done` is called. */
  add(memoryId: string, controller: AbortController): () => void {
    let calls = this.#byScope.get(memoryId);
    if (!calls) {
      calls = new Set();
      this.#byScope.set(memoryId, calls);
    }
    calls.add(controller);
    return () => {
      calls.delete(controller);
      if (calls.size === 0 && this.#byScope.get(memoryId) === calls) this.#byScope.delete(memoryId);
    };
  }

  /** Aborts every call of `memoryId` running now, with `reason`. */
  abort(memoryId: string, reason: Error): void {
    for (const controller of this.#byScope.get(memoryId) ?? []) controller.abort(reason);
  }
}
