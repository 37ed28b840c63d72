/** A newer observation replaces an older one (a changed preference). */
export interface Supersession {
  readonly newerSeq: number;
  readonly olderSeq: number;
  readonly reason: string;
}

/** Two observations conflict and neither is known to win. */
export interface Contradiction {
  readonly seqA: number;
  readonly seqB: number;
  readonly detail: string;
}

/**
 * The reflector's output, parsed. `schemaVersion` is 1 for the SUMMARY / SUPERSESSIONS /
 * CONTRADICTIONS format and 0 for legacy plain text (then `summary` is the whole text).
 */
export interface StructuredReflection {
  readonly summary: string;
  readonly supersessions: readonly Supersession[];
  readonly contradictions: readonly Contradiction[];
  readonly schemaVersion: 0 | 1;
}
