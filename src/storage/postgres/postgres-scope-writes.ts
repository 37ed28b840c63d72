/**
 * The in-process queue of a store's writes, per scope: writes of one scope serialize at the
 * database anyway (its advisory lock, its rows), so the ones behind the first wait here, not on
 * a pooled connection each. A scope whose lock or row another session holds then ties up at
 * most {@link SCOPE_WRITES_IN_FLIGHT} of the pool's connections, and other scopes keep the rest.
 * @module
 */

/**
 * Writes of one scope sent to the database at once. One: of two in flight on two connections,
 * the second can take the scope's lock first (the first call on a connection prepares its
 * statement), so two sets of one key made at once could leave the first one's value. The cost
 * is a round trip between the writes of a scope that is written from several places at once.
 */
export const SCOPE_WRITES_IN_FLIGHT = 1;

/** Runs a scope's writes at most `inFlight` at a time, in the order they came. */
export interface ScopeWrites {
  /**
   * Runs `work` once fewer than `inFlight` writes of `key` are under way: a scope's memory id
   * (the run store's queues: a conversation's memory id, a run's id).
   */
  run<T>(key: string, work: () => Promise<T>): Promise<T>;
  /** Scopes with writes under way or waiting (for tests). */
  readonly size: number;
}

interface ScopeQueue {
  running: number;
  readonly waiting: Array<() => void>;
}

/** A queue per scope, removed when the scope has nothing under way. */
export function createScopeWrites(inFlight: number = SCOPE_WRITES_IN_FLIGHT): ScopeWrites {
  const queues = new Map<string, ScopeQueue>();
  const release = (memoryId: string, queue: ScopeQueue): void => {
    const next = queue.waiting.shift();
    if (next) return next();
    queue.running--;
    if (queue.running === 0) queues.delete(memoryId);
  };
  return {
    async run(memoryId, work) {
      let queue = queues.get(memoryId);
      if (!queue) {
        queue = { running: 0, waiting: [] };
        queues.set(memoryId, queue);
      }
      // A turn handed on by release() keeps the running count as it was.
      if (queue.running < inFlight) queue.running++;
      else await new Promise<void>((resolve) => queue.waiting.push(resolve));
      try {
        return await work();
      } finally {
        release(memoryId, queue);
      }
    },
    get size() {
      return queues.size;
    },
  };
}
