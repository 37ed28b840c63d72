import type { MemoryRecord, Observation } from '../core/observation.js';
import type { MemoryStore } from '../storage/store.js';

/**
 * Each scope's observations, kept in this process and brought up to date incrementally.
 * Observations are append-only per scope (seqs only grow; only `forget` removes them), so
 * after a write only the new rows are read, not the whole scope. A record that was
 * forgotten and made again (another `createdAt`) starts afresh. Bounded by the total
 * number of observations held; least recently used scopes go first.
 */
export class ObservationCache {
  readonly #store: MemoryStore;
  readonly #maxTotal: number;
  readonly #entries = new Map<string, { createdAt: string; observations: Observation[]; lastSeq: number }>();
  #total = 0;

  constructor(store: MemoryStore, maxTotal = 200_000) {
    this.#store = store;
    this.#maxTotal = maxTotal;
  }

  /** The scope's observations in seq order, as of `record`. Do not mutate the result. */
  async get(memoryId: string, record: MemoryRecord): Promise<readonly Observation[]> {
    let entry = this.#entries.get(memoryId);
    if (entry && (entry.createdAt !== record.createdAt || record.lastObservationSeq < entry.lastSeq)) {
      this.delete(memoryId);
      entry = undefined;
    }
    if (!entry) entry = { createdAt: record.createdAt, observations: [], lastSeq: 0 };
    if (record.lastObservationSeq > entry.lastSeq) {
      const fresh = await this.#store.listObservations(memoryId, { afterSeq: entry.lastSeq });
      // Another caller may have appended the same rows while this one awaited.
      for (const observation of fresh) {
        if (observation.seq <= entry.lastSeq) continue;
        entry.observations.push(observation);
        entry.lastSeq = observation.seq;
        this.#total++;
      }
    }
    this.#entries.delete(memoryId);
    this.#entries.set(memoryId, entry);
    for (const [key, candidate] of this.#entries) {
      if (this.#total <= this.#maxTotal || key === memoryId) break;
      this.#total -= candidate.observations.length;
      this.#entries.delete(key);
    }
    return entry.observations;
  }

  /** Appends observations just applied, when they directly follow what is held. */
  add(memoryId: string, record: MemoryRecord, observations: readonly Observation[]): void {
    const entry = this.#entries.get(memoryId);
    const first = observations[0];
    if (!entry || !first || entry.createdAt !== record.createdAt || first.seq !== entry.lastSeq + 1) return;
    for (const observation of observations) {
      entry.observations.push(observation);
      entry.lastSeq = observation.seq;
      this.#total++;
    }
  }

  /** Forgets what is held for a scope. */
  delete(memoryId: string): void {
    const entry = this.#entries.get(memoryId);
    if (!entry) return;
    this.#total -= entry.observations.length;
    this.#entries.delete(memoryId);
  }
}

/** Index of the first observation with a seq greater than `seq` (binary search). */
export function firstAfter(observations: readonly Observation[], seq: number): number {
  let low = 0;
  let high = observations.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((observations[middle] as Observation).seq <= seq) low = middle + 1;
    else high = middle;
  }
  return low;
}
