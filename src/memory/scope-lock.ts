/**
 * Serialises async work per key inside one process. Entries are removed when idle, so
 * the map never grows with the number of scopes ever seen.
 */
export class KeyedLock {
  readonly #tails = new Map<string, Promise<void>>();
  readonly #callers = new Map<string, number>();

  /** Runs `work` after every earlier `run` for the same key has settled. */
  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    this.#callers.set(key, (this.#callers.get(key) ?? 0) + 1);
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const current = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => current);
    this.#tails.set(key, tail);
    await previous;
    try {
      return await work();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
      const callers = (this.#callers.get(key) ?? 1) - 1;
      if (callers === 0) this.#callers.delete(key);
      else this.#callers.set(key, callers);
    }
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
