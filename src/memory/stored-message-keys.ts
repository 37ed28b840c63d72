/** Message keys held per scope. */
const KEYS_PER_SCOPE = 4096;
/** Scopes held. */
const SCOPES = 1024;

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
    this.#scopes.delete(memoryId);
    if (entry?.generation !== generation) entry = { generation, keys: new Set(), seen: new WeakSet() };
    this.#scopes.set(memoryId, entry);
    for (const key of keys) entry.keys.add(key);
    for (const key of entry.keys) {
      if (entry.keys.size <= KEYS_PER_SCOPE) break;
      entry.keys.delete(key);
    }
    if (this.#scopes.size > SCOPES) this.#scopes.delete(this.#scopes.keys().next().value as string);
  }

  /** Forgets the scope. */
  delete(memoryId: string): void {
    this.#scopes.delete(memoryId);
  }
}
