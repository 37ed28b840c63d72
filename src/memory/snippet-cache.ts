import type { MemoryRecord } from '../core/observation.js';

/**
 * What identifies the state a record describes: its `stateVersion` within one life of the
 * scope, and its `createdAt` across lives. A forget deletes the record and the next write makes
 * a new one whose state version starts again at 1, so the version alone would let a snippet of
 * the forgotten state be served again once the new record reaches the same version.
 */
export function recordStateKey(record: Pick<MemoryRecord, 'createdAt' | 'stateVersion'>): string {
  return `${record.createdAt}|${record.stateVersion}`;
}

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
