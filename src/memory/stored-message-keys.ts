/** Message keys held per scope. */
const KEYS_PER_SCOPE = 4096;
/** Scopes held. */
const SCOPES = 1024;
/**
 * Keys held in all (a few megabytes): without it, 1,024 scopes of 4,096 keys each held
 * about 450 MB on a busy server.
 */
const TOTAL_KEYS = 65_536;

/**
 * The message keys this process has stored in each scope, by the scope generation they were
 * stored under. A runner hands observational memory its whole replayed history every step;
 * messages known stored are left out before they are redacted and written again (the store
 * would skip them anyway). Valid only for the generation they were stored under: a forget
 * gives the scope a new one, and then nothing is known. Bounded: the oldest keys of a scope,
 * and the least recently used scopes, go first; a key forgotten here is only stored again
 * (the store skips known keys), never lost.
 */
export class StoredMessageKeys {
  readonly #scopes = new Map<string, { generation: number; keys: Set<string>; seen: WeakSet<object> }>();
  #total = 0;

  /** The keys known stored in `memoryId` at `generation`. */
  known(memoryId: string, generation: number): ReadonlySet<string> | undefined {
    const entry = this.#scopes.get(memoryId);
    return entry?.generation === generation ? entry.keys : undefined;
  }

  /**
   * The messages whose key is not known stored in `memoryId` at `generation`, in order (all of
   * them when nothing is known). Why it remembers objects: a runner replays the same history
   * turn after turn, as the same objects from the run store's cache, and a message found known
   * once is then recognised by identity instead of by hashing and comparing its key again.
   */
  unknown<T extends object>(
    memoryId: string,
    generation: number,
    messages: readonly T[],
    keyOf: (message: T) => string,
  ): readonly T[] {
    const entry = this.#scopes.get(memoryId);
    if (entry?.generation !== generation) return messages;
    const unknown: T[] = [];
    for (const message of messages) {
      if (entry.seen.has(message)) continue;
      if (entry.keys.has(keyOf(message))) entry.seen.add(message);
      else unknown.push(message);
    }
    return unknown;
  }

  /** Notes that `keys` are stored in `memoryId` at `generation`. */
  add(memoryId: string, generation: number, keys: Iterable<string>): void {
    let entry = this.#scopes.get(memoryId);
    this.delete(memoryId);
    if (entry?.generation !== generation) entry = { generation, keys: new Set(), seen: new WeakSet() };
    for (const key of keys) entry.keys.add(key);
    for (const key of entry.keys) {
      if (entry.keys.size <= KEYS_PER_SCOPE) break;
      entry.keys.delete(key);
    }
    this.#scopes.set(memoryId, entry);
    this.#total += entry.keys.size;
    // The least recently used scopes go first, never the one just written.
    while ((this.#scopes.size > SCOPES || this.#total > TOTAL_KEYS) && this.#scopes.size > 1)
      this.delete(this.#scopes.keys().next().value as string);
  }

  /** Keys held in all scopes. */
  get size(): number {
    return this.#total;
  }

  /** Forgets the scope. */
  delete(memoryId: string): void {
    const entry = this.#scopes.get(memoryId);
    if (entry === undefined) return;
    this.#total -= entry.keys.size;
    this.#scopes.delete(memoryId);
  }
}
