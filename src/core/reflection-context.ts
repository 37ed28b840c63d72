/**
 * Which earlier observations and open contradictions a reflection is shown, so that it can
 * supersede or contradict them, and settle a contradiction, however long ago they were made.
 * @module
 */
import { contradictionLine, referenceLine, reflectorReferenceTokens } from './memory-prompts.js';
import type { Observation, ObservationConfig } from './observation.js';
import { selectObservationIndices } from './observation-snippet.js';
import { newestContradictionFirst, supersededBy } from './reflection-links.js';
import { supersededAsShown } from './repeated-observations.js';
import type { Contradiction, Supersession } from './reflection.js';
import type { TokenEstimator } from './token-estimator.js';

/** Importance from which an earlier observation is always a candidate reference, however old. */
export const REFERENCE_IMPORTANCE_FLOOR = 0.7;

/** What {@link selectReflectionContext} chooses from. */
export interface ReflectionContextInput {
  /** The scope's observations in seq order. */
  readonly observations: readonly Observation[];
  /** The previous reflection's `throughSeq`: observations up to it are candidates, later ones are new. */
  readonly throughSeq: number;
  /**
   * The scope's active supersession set: superseded observations are never references, and
   * its contradictions are shown, newest first, with both their observations.
   */
  readonly links: {
    readonly supersessions: readonly Supersession[];
    readonly contradictions?: readonly Contradiction[];
  };
  readonly config: ObservationConfig;
  readonly estimator: TokenEstimator;
}

/** What a reflection is shown besides its new observations. */
export interface ReflectionContext {
  /** Earlier observations in force, in seq order. */
  readonly references: Observation[];
  /** Open contradictions whose two observations are among the references, newest first. */
  readonly contradictions: Contradiction[];
}

/**
 * The earlier observations (up to `throughSeq`, not superseded) and open contradictions to
 * list in the reflector prompt, each counted as its one clipped line, while they fit
 * `2 × snippet_max_tokens`: first the open contradictions, newest first, each with its two
 * observations (a contradiction stays open until a supersession settles it, so the reflector
 * must see it to settle it); then the observations the snippet would show within
 * `snippet_max_tokens`; then those with an importance of at least 0.7, newest first.
 */
export function selectReflectionContext(input: ReflectionContextInput): ReflectionContext {
  const { observations, throughSeq, config, estimator } = input;
  if (throughSeq <= 0 || observations.length === 0) return { references: [], contradictions: [] };
  // A copy of a repeated fact is superseded as the snippet shows it, with any of its copies.
  const superseded = supersededAsShown(observations, supersededBy(input.links));
  const eligible = (observation: Observation | undefined): observation is Observation =>
    observation !== undefined && observation.seq <= throughSeq && !superseded.has(observation.seq);
  const lineTokens = (observation: Observation): number =>
    estimator.estimate(`- [seq:${observation.seq}] ${referenceLine(observation)}\n`);
  let remaining = reflectorReferenceTokens(config);
  const chosen = new Map<number, Observation>();
  const contradictions: Contradiction[] = [];
  const bySeq = new Map(observations.map((observation) => [observation.seq, observation]));
  const newestFirst = [...(input.links.contradictions ?? [])].sort(newestContradictionFirst);
  for (const contradiction of newestFirst) {
    const sides = [bySeq.get(contradiction.seqA), bySeq.get(contradiction.seqB)];
    if (!sides.every(eligible)) continue;
    const added = (sides as Observation[]).filter((side) => !chosen.has(side.seq));
    const tokens =
      estimator.estimate(`${contradictionLine(contradiction)}\n`) +
      added.reduce((sum, side) => sum + lineTokens(side), 0);
    if (tokens > remaining) continue;
    remaining -= tokens;
    contradictions.push({ seqA: contradiction.seqA, seqB: contradiction.seqB, detail: contradiction.detail });
    for (const side of added) chosen.set(side.seq, side);
  }
  const candidates: Observation[] = [];
  const consider = (observation: Observation): void => {
    if (eligible(observation) && !chosen.has(observation.seq)) candidates.push(observation);
  };
  for (const index of selectObservationIndices(observations, superseded, config.snippetMaxTokens, estimator))
    consider(observations[index] as Observation);
  for (let index = observations.length - 1; index >= 0; index--) {
    const observation = observations[index] as Observation;
    if ((observation.importance ?? 0) >= REFERENCE_IMPORTANCE_FLOOR) consider(observation);
  }
  for (const observation of candidates) {
    if (chosen.has(observation.seq)) continue;
    const tokens = lineTokens(observation);
    if (tokens > remaining) continue;
    remaining -= tokens;
    chosen.set(observation.seq, observation);
  }
  return { references: [...chosen.values()].sort((a, b) => a.seq - b.seq), contradictions };
}
