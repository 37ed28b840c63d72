/**
 * What an observer's `REPLACES:` line does. The snippet ranks observations by importance-weighted
 * recency, so a correction scored lower than the fact it corrects would leave the snippet sooner,
 * and until a reflection superseded the fact the agent would see only the stale one. Instead the
 * correction supersedes the fact as it is stored, and keeps its weight.
 * @module
 */
import type { Observation, ObservationSource, ParsedObservation } from './observation.js';
import { UNSCORED_IMPORTANCE } from './observation-snippet.js';
import { mayRestOnToolOutput } from './reflection-links.js';

/**
 * `observation` with at least the importance of each earlier observation it says it replaces
 * (its `replacesSeqs`) among `shown`, the observations the observer was shown with their seqs;
 * seqs it was not shown are ignored. Unscored counts as 0.5 on either side. Raised only: a
 * correction never lowers anything, so a wrong `REPLACES:` line hides nothing. Any tool cap is
 * applied afterwards, to the raised score. Not for an observation of a batch that held tool
 * output (see {@link replacementLinks}).
 */
export function withReplacedImportance(
  observation: ParsedObservation,
  shown: ReadonlyMap<number, Observation>,
): ParsedObservation {
  let floor: number | undefined;
  for (const seq of observation.replacesSeqs ?? []) {
    const replaced = shown.get(seq);
    if (replaced === undefined) continue;
    floor = Math.max(floor ?? 0, replaced.importance ?? UNSCORED_IMPORTANCE);
  }
  if (floor === undefined || floor <= (observation.importance ?? UNSCORED_IMPORTANCE)) return observation;
  return { ...observation, importance: floor };
}

/** The links one new observation asks for: the earlier ones it supersedes, and those it may only contradict. */
export interface ReplacementLinks {
  readonly supersedes?: readonly number[];
  readonly contradicts?: readonly number[];
}

/**
 * The links of a new observation (its provenance and importance after any tool cap) whose
 * `REPLACES:` line names `replacesSeqs`: each of `shown` (the observations the observer was
 * shown with their seqs; others are ignored) is superseded, unless the old one does not rest on
 * tool output and either the new one may, or its batch held tool output at all (`batchHasTool`):
 * the observation may rest on the user's words while its `REPLACES:` line was what a page told
 * the observer to write. Text a tool returned cannot retire what the user said, as in a
 * reflection: the pair is kept as a contradiction, which shows both and asks which applies.
 */
export function replacementLinks(
  replacesSeqs: readonly number[] | undefined,
  newer: { readonly source: ObservationSource; readonly importance: number | null },
  shown: ReadonlyMap<number, Observation>,
  toolImportanceCap: number,
  batchHasTool: boolean,
): ReplacementLinks {
  const supersedes: number[] = [];
  const contradicts: number[] = [];
  const fromTool = batchHasTool || mayRestOnToolOutput({ seq: 0, ...newer }, toolImportanceCap);
  for (const seq of replacesSeqs ?? []) {
    const replaced = shown.get(seq);
    if (replaced === undefined) continue;
    if (fromTool && !mayRestOnToolOutput(replaced, toolImportanceCap)) contradicts.push(seq);
    else supersedes.push(seq);
  }
  return {
    ...(supersedes.length > 0 ? { supersedes } : {}),
    ...(contradicts.length > 0 ? { contradicts } : {}),
  };
}
