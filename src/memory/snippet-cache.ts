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
 * from and reused only while that version holds. Bounded by the scopes held and, given
 * `sizeOf`, by the total size of what is held: the least recently stored scope goes first.
 */
export class SnippetCache<T = string, V extends number | string = number> {
  readonly #entries = new Map<string, { version: V; text: T; size: number }>();
  readonly #limit: number;
  readonly #sizeOf: ((value: T) => number) | undefined;
  readonly #maxSize: number;
  #size = 0;

  constructor(
    limit = 1024,
    bySize: { readonly sizeOf: (value: T) => number; readonly maxSize: number } | undefined = undefined,
  ) {
    this.#limit = limit;
    this.#sizeOf = bySize?.sizeOf;
    this.#maxSize = bySize?.maxSize ?? Number.POSITIVE_INFINITY;
  }

  /** The total size of what is held, by `sizeOf` (0 without it). */
  get size(): number {
    return this.#size;
  }

  /** The snippet (or other value) built from `version` of the scope's state, if held. */
  get(memoryId: string, version: V): T | undefined {
    const cached = this.#entries.get(memoryId);
    return cached?.version === version ? cached.text : undefined;
  }

  set(memoryId: string, version: V, text: T): void {
    this.delete(memoryId);
    const size = this.#sizeOf?.(text) ?? 0;
    this.#entries.set(memoryId, { version, text, size });
    this.#size += size;
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.#limit && this.#size <= this.#maxSize) break;
      // The newest stays, whatever its size: it is what the caller reads next.
      if (oldest !== memoryId) this.delete(oldest);
    }
  }

  delete(memoryId: string): void {
    const held = this.#entries.get(memoryId);
    if (!held) return;
    this.#size -= held.size;
    this.#entries.delete(memoryId);
  }
}
