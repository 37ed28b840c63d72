/**
 * Which earlier observations a reflection is shown, so that it can supersede or contradict
 * them however long ago they were made.
 * @module
 */
import { referenceLine, reflectorReferenceTokens } from './memory-prompts.js';
import type { Observation, ObservationConfig } from './observation.js';
import { selectObservationIndices } from './observation-snippet.js';
import { supersededBy } from './reflection-links.js';
import type { Supersession } from './reflection.js';
import type { TokenEstimator } from './token-estimator.js';

/** Importance from which an earlier observation is always a candidate reference, however old. */
export const REFERENCE_IMPORTANCE_FLOOR = 0.7;

/** What {@link selectReflectionReferences} chooses from. */
export interface ReflectionReferencesInput {
  /** The scope's observations in seq order. */
  readonly observations: readonly Observation[];
  /** The previous reflection's `throughSeq`: observations up to it are candidates, later ones are new. */
  readonly throughSeq: number;
  /** The scope's supersession set: superseded observations are never references. */
  readonly links: { readonly supersessions: readonly Supersession[] };
  readonly config: ObservationConfig;
  readonly estimator: TokenEstimator;
}

/**
 * The earlier observations (up to `throughSeq`, not superseded) to list in the reflector
 * prompt: first those the snippet would show within `snippet_max_tokens`, then those with
 * an importance of at least 0.7, newest first; each counted as its one clipped line, while
 * they fit `2 × snippet_max_tokens`. In seq order.
 */
export function selectReflectionReferences(input: ReflectionReferencesInput): Observation[] {
  const { observations, throughSeq, config, estimator } = input;
  if (throughSeq <= 0 || observations.length === 0) return [];
  const superseded = supersededBy(input.links);
  const eligible = (observation: Observation): boolean =>
    observation.seq <= throughSeq && !superseded.has(observation.seq);
  const candidates: Observation[] = [];
  const seen = new Set<number>();
  const consider = (observation: Observation): void => {
    if (!eligible(observation) || seen.has(observation.seq)) return;
    seen.add(observation.seq);
    candidates.push(observation);
  };
  for (const index of selectObservationIndices(observations, superseded, config.snippetMaxTokens, estimator))
    consider(observations[index] as Observation);
  for (let index = observations.length - 1; index >= 0; index--) {
    const observation = observations[index] as Observation;
    if ((observation.importance ?? 0) >= REFERENCE_IMPORTANCE_FLOOR) consider(observation);
  }
  let remaining = reflectorReferenceTokens(config);
  const chosen: Observation[] = [];
  for (const observation of candidates) {
    const tokens = estimator.estimate(`- [seq:${observation.seq}] ${referenceLine(observation)}\n`);
    if (tokens > remaining) continue;
    remaining -= tokens;
    chosen.push(observation);
  }
  return chosen.sort((a, b) => a.seq - b.seq);
}
