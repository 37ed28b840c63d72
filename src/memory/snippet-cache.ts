/**
 * Rendered snippets by scope, each kept with the version of the stored state it was built
 * from and reused only while that version holds. Bounded: the least recently stored scope
 * goes first.
 */
export class SnippetCache<T = string, V extends number | string = number> {
  readonly #entries = new Map<string, { version: V; text: T }>();
  readonly #limit: number;

  constructor(limit = 1024) {
    this.#limit = limit;
  }

  /** The snippet (or other value) built from `version` of the scope's state, if held. */
  get(memoryId: string, version: V): T | undefined {
    const cached = this.#entries.get(memoryId);
    return cached?.version === version ? cached.text : undefined;
  }

  set(memoryId: string, version: V, text: T): void {
    this.#entries.delete(memoryId);
    this.#entries.set(memoryId, { version, text });
    if (this.#entries.size > this.#limit) this.#entries.delete(this.#entries.keys().next().value as string);
  }

  delete(memoryId: string): void {
    this.#entries.delete(memoryId);
  }
}
