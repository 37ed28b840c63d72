/**
 * A scope's observations summarized for the snippet's selection: a tree of blocks over the
 * seq-ordered array, each node holding the lowest floor (what any of its lines costs at
 * least) and the largest importance of its observations. A scope's array only grows between
 * turns, so the tree is extended by each new observation (its line rendered once), never
 * rebuilt; the selection then visits only nodes that could still hold something it takes.
 * @module
 */
import type { Observation } from './observation.js';
import type { TokenEstimator } from './token-estimator.js';

/** Observations per leaf block, and children per inner node. */
export const SELECTION_BLOCK = 32;

/** One level of the tree: node `j` of level `k` covers observations `[j·B^(k+1), (j+1)·B^(k+1))`. */
export interface SelectionLevel {
  readonly minFloor: number[];
  readonly maxImportance: number[];
}

/** The tree over one array of observations, for one estimator. */
export interface SelectionIndex {
  /** Observations summarized so far. */
  length: number;
  first: Observation | undefined;
  last: Observation | undefined;
  /** Per observation: its unsuperseded line's cost, never below its stored token count. */
  readonly floors: number[];
  /** Per observation: its importance, unscored counted as `unscored`. */
  readonly importance: number[];
  /** Leaf blocks first; the last level has one node. */
  readonly levels: SelectionLevel[];
}

const indices = new WeakMap<TokenEstimator, WeakMap<readonly Observation[], SelectionIndex>>();

/**
 * The index of `observations` for `estimator`, extended by the observations appended since
 * the last call. Reused only while the array grew at its end (the same first observation and
 * the same one at the last summarized position); otherwise built afresh.
 */
export function selectionIndexOf(
  observations: readonly Observation[],
  estimator: TokenEstimator,
  lineCost: (observation: Observation) => number,
  unscored: number,
): SelectionIndex {
  let byArray = indices.get(estimator);
  if (!byArray) {
    byArray = new WeakMap();
    indices.set(estimator, byArray);
  }
  const count = observations.length;
  let index = byArray.get(observations);
  if (
    !index ||
    index.length > count ||
    observations[0] !== index.first ||
    observations[index.length - 1] !== index.last
  ) {
    index = { length: 0, first: observations[0], last: undefined, floors: [], importance: [], levels: [] };
    byArray.set(observations, index);
  }
  for (let position = index.length; position < count; position++) {
    const observation = observations[position] as Observation;
    const floor = Math.max(observation.tokenCount, lineCost(observation));
    const importance = observation.importance ?? unscored;
    index.floors.push(floor);
    index.importance.push(importance);
    let span = SELECTION_BLOCK;
    for (let level = 0; ; level++) {
      const node = Math.floor(position / span);
      let current = index.levels[level];
      if (!current) {
        // A new top level: its first node covers everything below, summarized from the level under it.
        current = { minFloor: [], maxImportance: [] };
        index.levels.push(current);
        const below = index.levels[level - 1];
        if (below) {
          current.minFloor.push(Math.min(...below.minFloor));
          current.maxImportance.push(Math.max(...below.maxImportance));
        }
      }
      if (node === current.minFloor.length) {
        current.minFloor.push(floor);
        current.maxImportance.push(importance);
      } else {
        current.minFloor[node] = Math.min(current.minFloor[node] as number, floor);
        current.maxImportance[node] = Math.max(current.maxImportance[node] as number, importance);
      }
      if (span >= position + 1 && current.minFloor.length === 1) break;
      span *= SELECTION_BLOCK;
    }
  }
  index.length = count;
  index.last = observations[count - 1];
  return index;
}
