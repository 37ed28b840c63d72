/**
 * Which observations a newer one repeats word for word.
 * @module
 */
import type { Observation } from './observation.js';

interface RepeatIndex {
  length: number;
  first: Observation | undefined;
  last: Observation | undefined;
  /** Normalized text → the newest seq holding it. */
  readonly newest: Map<string, number>;
  /** Seqs whose text a newer observation repeats. */
  readonly repeated: Set<number>;
}

const indices = new WeakMap<readonly Observation[], RepeatIndex>();

/** The text two observations share when they say the same thing: case, spacing and end punctuation aside. */
export function repeatKeyOf(content: string): string {
  return content
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .replace(/[\s.!;,]+$/, '')
    .trim();
}

/**
 * The seqs of `observations` (in seq order) whose text a newer observation repeats: the
 * snippet shows only the newest copy, where it stands in time, instead of spending its budget
 * on the same fact again (an observer restating what it already recorded). Extended by the
 * observations appended since the last call, like the selection index; built afresh when the
 * array did not just grow at its end.
 */
export function repeatedSeqsOf(observations: readonly Observation[]): ReadonlySet<number> {
  const count = observations.length;
  let index = indices.get(observations);
  if (
    !index ||
    index.length > count ||
    observations[0] !== index.first ||
    (index.length > 0 && observations[index.length - 1] !== index.last)
  ) {
    index = { length: 0, first: observations[0], last: undefined, newest: new Map(), repeated: new Set() };
    indices.set(observations, index);
  }
  for (let position = index.length; position < count; position++) {
    const observation = observations[position] as Observation;
    const key = repeatKeyOf(observation.content);
    const older = index.newest.get(key);
    if (older !== undefined) index.repeated.add(older);
    index.newest.set(key, observation.seq);
  }
  index.length = count;
  index.last = observations[count - 1];
  return index.repeated;
}
