import { firstAfterSeq } from '../core/first-after-seq.js';
import type { MemoryRecord, Observation } from '../core/observation.js';
import type { MemoryStore } from '../storage/store.js';

interface Entry {
  readonly createdAt: string;
  /** The record's `correctionCount` the entry was read at: a correction makes it stale. */
  readonly correctionCount: number;
  readonly observations: Observation[];
  /** Characters of the observations' content. */
  chars: number;
  lastSeq: number;
  /** The store read under way for this entry, which concurrent readers wait for instead of reading again. */
  loading?: Promise<void> | undefined;
}

/** Counters of an {@link ObservationCache}, for tests and diagnostics. */
export interface ObservationCacheStats {
  /** Scopes held. */
  readonly scopes: number;
  /** Observations the cache counts as held (what its bound is checked against). */
  readonly counted: number;
  /** Observations actually held: the sum over its scopes. Always equal to `counted`. */
  readonly held: number;
  /** Characters of the content held. */
  readonly chars: number;
  /** Reads served without a store read of their own. */
  readonly hits: number;
  /** Reads that started a store read. */
  readonly misses: number;
}

/** Bounds of an {@link ObservationCache}. */
export interface ObservationCacheLimits {
  /** @default 200000 */
  readonly maxObservations?: number;
  /** Characters of content (UTF-16 units: about twice as many bytes). @default 50000000 */
  readonly maxChars?: number;
  /** @default 4096 */
  readonly maxScopes?: number;
}

/**
 * Each scope's observations, kept in this process and brought up to date incrementally.
 * Observations are append-only per scope (seqs only grow), so after a write only the new
 * rows are read, not the whole scope. A record that was forgotten and made again (another
 * `createdAt`) or whose observations were corrected by hand (another `correctionCount`)
 * starts afresh. Bounded by the observations held, their characters and the scopes held
 * (scopes without observations count too: every scope read makes an entry); least recently
 * used scopes go first, never the one being read.
 *
 * An entry joins the cache before its store read, and readers arriving meanwhile wait for
 * that read instead of starting their own; only observations added to an entry the cache
 * still holds are counted, so the count is always the sum of what is held.
 */
export class ObservationCache {
  readonly #store: MemoryStore;
  readonly #limits: Required<ObservationCacheLimits>;
  readonly #entries = new Map<string, Entry>();
  #total = 0;
  #chars = 0;
  #hits = 0;
  #misses = 0;

  constructor(store: MemoryStore, limits: ObservationCacheLimits = {}) {
    this.#store = store;
    this.#limits = {
      maxObservations: limits.maxObservations ?? 200_000,
      maxChars: limits.maxChars ?? 50_000_000,
      maxScopes: limits.maxScopes ?? 4_096,
    };
  }

  /** The scope's observations in seq order, as of `record`. Do not mutate the result. */
  async get(memoryId: string, record: MemoryRecord): Promise<readonly Observation[]> {
    let entry = this.#entries.get(memoryId);
    if (
      entry &&
      (entry.createdAt !== record.createdAt ||
        entry.correctionCount !== record.correctionCount ||
        record.lastObservationSeq < entry.lastSeq)
    ) {
      this.delete(memoryId);
      entry = undefined;
    }
    if (!entry) {
      entry = {
        createdAt: record.createdAt,
        correctionCount: record.correctionCount,
        observations: [],
        chars: 0,
        lastSeq: 0,
      };
      this.#entries.set(memoryId, entry);
    }
    let readHere = false;
    while (record.lastObservationSeq > entry.lastSeq) {
      const joined = entry.loading !== undefined;
      if (!joined) {
        readHere = true;
        const current = entry;
        current.loading = this.#load(memoryId, current).finally(() => {
          current.loading = undefined;
        });
      }
      const before = entry.lastSeq;
      await entry.loading;
      if (!joined) {
        // A read of its own began after `record` was read, so it saw every observation up to the record's
        // last seq that still exists: a deleted last one is not read again at every call.
        entry.lastSeq = Math.max(entry.lastSeq, record.lastObservationSeq);
        // A read that found nothing newer (the scope was forgotten meanwhile) ends the wait.
        if (entry.lastSeq === before) break;
      }
    }
    if (readHere) this.#misses++;
    else this.#hits++;
    if (this.#entries.get(memoryId) === entry) {
      this.#entries.delete(memoryId);
      this.#entries.set(memoryId, entry);
      this.#evict(memoryId);
    }
    return entry.observations;
  }

  /** The seq through which the scope's observations are held (undefined when none are): where a read beside the record's starts. */
  heldThrough(memoryId: string): number | undefined {
    return this.#entries.get(memoryId)?.lastSeq;
  }

  /**
   * Takes observations listed after `afterSeq` by a read issued beside the read of `record`
   * (so before or after it): those through the record's last seq are kept when the entry is
   * still held through `afterSeq` exactly (a page starting later would leave a gap), of the
   * same record life and corrections. A read that ran before the record's may lack the
   * newest; {@link get} then reads them as usual. Seqs already held are skipped, so a read of
   * the entry under way meanwhile adds nothing twice.
   */
  offer(memoryId: string, record: MemoryRecord, afterSeq: number, observations: readonly Observation[]): void {
    const entry = this.#entries.get(memoryId);
    if (!entry || entry.lastSeq !== afterSeq) return;
    if (entry.createdAt !== record.createdAt || entry.correctionCount !== record.correctionCount) return;
    this.#append(memoryId, entry, observations.slice(0, firstAfterSeq(observations, record.lastObservationSeq)));
    this.#evict(memoryId);
  }

  /** Appends observations just applied, when they directly follow what is held. */
  add(memoryId: string, record: MemoryRecord, observations: readonly Observation[]): void {
    const entry = this.#entries.get(memoryId);
    const first = observations[0];
    if (!entry || !first || entry.createdAt !== record.createdAt || first.seq !== entry.lastSeq + 1) return;
    if (entry.correctionCount !== record.correctionCount) return;
    this.#append(memoryId, entry, observations);
    this.#evict(memoryId);
  }

  /** Forgets what is held for a scope. */
  delete(memoryId: string): void {
    const entry = this.#entries.get(memoryId);
    if (!entry) return;
    this.#total -= entry.observations.length;
    this.#chars -= entry.chars;
    this.#entries.delete(memoryId);
  }

  /** The cache's counters. */
  stats(): ObservationCacheStats {
    let held = 0;
    for (const entry of this.#entries.values()) held += entry.observations.length;
    return {
      scopes: this.#entries.size,
      counted: this.#total,
      held,
      chars: this.#chars,
      hits: this.#hits,
      misses: this.#misses,
    };
  }

  async #load(memoryId: string, entry: Entry): Promise<void> {
    const fresh = await this.#store.listObservations(memoryId, { afterSeq: entry.lastSeq });
    this.#append(memoryId, entry, fresh);
  }

  #append(memoryId: string, entry: Entry, observations: readonly Observation[]): void {
    // Counted only while the cache holds the entry: an evicted one no longer counts.
    const held = this.#entries.get(memoryId) === entry;
    for (const observation of observations) {
      // `add` may have appended some of these while the read was under way.
      if (observation.seq <= entry.lastSeq) continue;
      entry.observations.push(observation);
      entry.chars += observation.content.length;
      entry.lastSeq = observation.seq;
      if (held) {
        this.#total++;
        this.#chars += observation.content.length;
      }
    }
  }

  /** Drops least recently used scopes, never `keep`, until the cache is within its bounds. */
  #evict(keep: string): void {
    const { maxObservations, maxChars, maxScopes } = this.#limits;
    for (const key of this.#entries.keys()) {
      if (this.#total <= maxObservations && this.#chars <= maxChars && this.#entries.size <= maxScopes) break;
      if (key !== keep) this.delete(key);
    }
  }
}
