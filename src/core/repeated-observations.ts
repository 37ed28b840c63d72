/**
 * Which observations a newer one repeats word for word, and how the snippet applies the
 * supersession set to a fact shown as its newest copy.
 * @module
 */
import type { Observation } from './observation.js';
import type { Contradiction, Supersession } from './reflection.js';

interface RepeatIndex {
  length: number;
  first: Observation | undefined;
  last: Observation | undefined;
  /** Normalized text → the newest seq holding it. */
  readonly newest: Map<string, number>;
  /** Seqs whose text a newer observation repeats. */
  readonly repeated: Set<number>;
  /** The normalized text of each repeated seq, so the copy standing for it is found without reading it. */
  readonly keys: Map<number, string>;
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
    index = {
      length: 0,
      first: observations[0],
      last: undefined,
      newest: new Map(),
      repeated: new Set(),
      keys: new Map(),
    };
    indices.set(observations, index);
  }
  for (let position = index.length; position < count; position++) {
    const observation = observations[position] as Observation;
    const key = repeatKeyOf(observation.content);
    const older = index.newest.get(key);
    if (older !== undefined) {
      index.repeated.add(older);
      index.keys.set(older, key);
    }
    index.newest.set(key, observation.seq);
  }
  index.length = count;
  index.last = observations[count - 1];
  return index.repeated;
}

/** Supersessions and contradictions, as a scope's supersession set holds them. */
export interface LinkLists {
  readonly supersessions: readonly Supersession[];
  readonly contradictions: readonly Contradiction[];
}

/**
 * The seq of the copy that stands for each observation of `observations` (in seq order) in the
 * snippet: its own, or that of the newest observation repeating it.
 */
function standingSeqsOf(observations: readonly Observation[]): {
  repeated: ReadonlySet<number>;
  standing: (seq: number) => number;
} {
  const repeated = repeatedSeqsOf(observations);
  const { keys, newest } = indices.get(observations) as RepeatIndex;
  return {
    repeated,
    standing: (seq) => {
      const key = keys.get(seq);
      return key === undefined ? seq : (newest.get(key) ?? seq);
    },
  };
}

/**
 * `superseded` (a superseded seq → the seq replacing it) as the snippet applies it, where a
 * repeated fact is shown as its newest copy: a supersession naming a copy applies to the copies
 * standing for its two sides, the older side's copy superseded by the newer side's, unless the
 * older side's copy is the newer of the two (the replaced fact was restated after the change,
 * so it stands again, where it stands in time). A copy not shown keeps its own entry.
 * `superseded` itself when it names no repeated copy.
 */
export function supersededAsShown(
  observations: readonly Observation[],
  superseded: ReadonlyMap<number, number>,
): ReadonlyMap<number, number> {
  if (superseded.size === 0) return superseded;
  const { repeated, standing } = standingSeqsOf(observations);
  if (repeated.size === 0) return superseded;
  let namesCopy = false;
  for (const [older, newer] of superseded) namesCopy ||= repeated.has(older) || repeated.has(newer);
  if (!namesCopy) return superseded;
  const shown = new Map<number, number>();
  const put = (older: number, newer: number): void => {
    const known = shown.get(older);
    if (known === undefined || newer > known) shown.set(older, newer);
  };
  for (const [older, newer] of superseded) {
    if (!repeated.has(older) && !repeated.has(newer)) {
      put(older, newer);
      continue;
    }
    if (repeated.has(older)) put(older, newer);
    const shownOlder = standing(older);
    const shownNewer = standing(newer);
    if (shownOlder < shownNewer) put(shownOlder, shownNewer);
  }
  return shown;
}

/**
 * The supersessions and contradictions of `links` naming the copies the snippet shows (see
 * {@link supersededAsShown}): a supersession that applies to the standing copies names them, a
 * contradiction names the copies standing for its two sides; a pair named twice this way is kept
 * once. `links` itself when it names no repeated copy.
 */
export function linksAsShown(observations: readonly Observation[], links: LinkLists): LinkLists {
  if (links.supersessions.length === 0 && links.contradictions.length === 0) return links;
  const { repeated, standing } = standingSeqsOf(observations);
  const names = (first: number, second: number): boolean => repeated.has(first) || repeated.has(second);
  if (
    repeated.size === 0 ||
    (!links.supersessions.some((item) => names(item.newerSeq, item.olderSeq)) &&
      !links.contradictions.some((item) => names(item.seqA, item.seqB)))
  )
    return links;
  const seen = new Set<string>();
  const once = (kind: string, first: number, second: number): boolean => {
    const key = `${kind}:${first}:${second}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  };
  const supersessions: Supersession[] = [];
  for (const item of links.supersessions) {
    const newerSeq = standing(item.newerSeq);
    const olderSeq = standing(item.olderSeq);
    const shown = olderSeq < newerSeq ? { ...item, newerSeq, olderSeq } : item;
    if (once('s', shown.newerSeq, shown.olderSeq)) supersessions.push(shown);
  }
  const contradictions: Contradiction[] = [];
  for (const item of links.contradictions) {
    const seqA = standing(item.seqA);
    const seqB = standing(item.seqB);
    const shown = seqA === seqB ? item : { ...item, seqA: Math.min(seqA, seqB), seqB: Math.max(seqA, seqB) };
    if (once('c', shown.seqA, shown.seqB)) contradictions.push(shown);
  }
  return { supersessions, contradictions };
}
