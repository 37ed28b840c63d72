import { untilStopped } from '../core/until-stopped.js';

/**
 * Serialises async work per key inside one process. Entries are removed when idle, so
 * the map never grows with the number of scopes ever seen.
 */
export class KeyedLock {
  readonly #tails = new Map<string, Promise<void>>();
  readonly #callers = new Map<string, number>();

  /**
   * Runs `work` after every earlier `run` for the same key has settled. When `signal` aborts
   * while it waits, it rejects with the signal's reason at once, `work` never runs, and the
   * callers after it wait only for those before it.
   */
  async run<T>(key: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    this.#callers.set(key, (this.#callers.get(key) ?? 0) + 1);
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const current = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => current);
    this.#tails.set(key, tail);
    try {
      await untilStopped(previous, signal);
    } catch (error) {
      release();
      // Still the tail, it is removed once those before it are done: removed now, a caller coming
      // next would run beside the one holding the key.
      void tail.then(() => this.#removeTail(key, tail));
      this.#leave(key);
      throw error;
    }
    try {
      return await work();
    } finally {
      release();
      this.#removeTail(key, tail);
      this.#leave(key);
    }
  }

  #removeTail(key: string, tail: Promise<void>): void {
    if (this.#tails.get(key) === tail) this.#tails.delete(key);
  }

  #leave(key: string): void {
    const callers = (this.#callers.get(key) ?? 1) - 1;
    if (callers === 0) this.#callers.delete(key);
    else this.#callers.set(key, callers);
  }

  /** Calls of `run` for `key` running or waiting now. */
  callers(key: string): number {
    return this.#callers.get(key) ?? 0;
  }

  /** Number of keys with work running or waiting. */
  get size(): number {
    return this.#tails.size;
  }
}
