/**
 * The message ids the middleware has handed to memory, per scope. Private to the ai-sdk folder.
 * @module
 */

/** Scopes held. */
const MAX_SCOPES = 1000;
/**
 * Ids held in all: a chat client sends the history it likes, so without it 1,000 scopes of
 * 10,000 ids each held about 1.8 GB.
 */
const MAX_TOTAL = 65_536;

/**
 * Ids known handed over, per scope and valid only for the scope generation they were handed
 * over under (a forget gives the scope a new one, and then none is known), at most `perScope`
 * each (the oldest go first), 1,000 scopes and 65,536 ids in all (the least recently used
 * scopes go first, never the one just written). An id forgotten here is only handed over
 * again, which the store skips.
 */
export class SeenIds {
  readonly #perScope: number;
  readonly #scopes = new Map<string, { readonly generation: number; readonly ids: Set<string> }>();
  #total = 0;

  constructor(perScope: number) {
    // A scope over the total would push out every other scope at each add.
    this.#perScope = Math.min(perScope, MAX_TOTAL);
  }

  /**
   * The ids known for the scope at `generation` (an empty set when none); the scope becomes
   * the most recently used.
   */
  of(memoryId: string, generation: number): ReadonlySet<string> {
    const entry = this.#scopes.get(memoryId);
    if (!entry) return EMPTY;
    this.#scopes.delete(memoryId);
    this.#scopes.set(memoryId, entry);
    return entry.generation === generation ? entry.ids : EMPTY;
  }

  /** Notes `ids` as handed over in the scope at `generation`, dropping those of any other generation. */
  add(memoryId: string, generation: number, ids: Iterable<string>): void {
    const held = this.#scopes.get(memoryId);
    this.#scopes.delete(memoryId);
    if (held) this.#total -= held.ids.size;
    const entry = held?.generation === generation ? held : { generation, ids: new Set<string>() };
    const seen = entry.ids;
    for (const id of ids) seen.add(id);
    for (const id of seen) {
      if (seen.size <= this.#perScope) break;
      seen.delete(id);
    }
    this.#scopes.set(memoryId, entry);
    this.#total += seen.size;
    for (const [oldest, { ids: oldestIds }] of this.#scopes) {
      if ((this.#scopes.size <= MAX_SCOPES && this.#total <= MAX_TOTAL) || oldest === memoryId) break;
      this.#total -= oldestIds.size;
      this.#scopes.delete(oldest);
    }
  }

  /** Ids held in all scopes. */
  get size(): number {
    return this.#total;
  }
}

const EMPTY: ReadonlySet<string> = new Set();
