/**
 * The supersession set of a scope: the supersessions and contradictions its reflections
 * found, kept across reflections and applied at every snippet.
 * @module
 */
import { firstAfterSeq } from './first-after-seq.js';
import type { ObservationSource } from './observation.js';
import type { Contradiction, StructuredReflection, Supersession } from './reflection.js';

/** A supersession of the set, with the operation (reflection) that found it. */
export interface StoredSupersession extends Supersession {
  readonly operationId: string;
  /** ISO 8601 UTC. */
  readonly createdAt: string;
}

/** A contradiction of the set (`seqA < seqB`), with the operation that found it. */
export interface StoredContradiction extends Contradiction {
  readonly operationId: string;
  /** ISO 8601 UTC. */
  readonly createdAt: string;
}

/** A scope's supersession set, or its active part; each list in the order it was found. */
export interface ReflectionLinks {
  readonly supersessions: readonly StoredSupersession[];
  readonly contradictions: readonly StoredContradiction[];
}

/** The set of a scope that has none. */
export const EMPTY_REFLECTION_LINKS: ReflectionLinks = Object.freeze({
  supersessions: Object.freeze([]),
  contradictions: Object.freeze([]),
});

/** What {@link checkReflectionReferences} keeps of a reflection, and how many references it dropped. */
export interface CheckedReferences {
  readonly supersessions: readonly Supersession[];
  readonly contradictions: readonly Contradiction[];
  /**
   * References dropped: a seq the scope never assigned or the reflector was not shown, a supersession whose newer
   * seq is not greater than its older one, a self-reference.
   */
  readonly rejected: number;
}

/**
 * Checks the references of a reflection against its scope, whose observation seqs run from
 * 1 to `lastObservationSeq` (seqs are never reused, and only `forget` removes observations),
 * and, when given, against `citableSeqs`: the seqs its prompt showed, the only ones it may cite.
 * Contradictions are stored with the smaller seq first; repeats of a pair are kept once and
 * are not counted as rejected.
 */
export function checkReflectionReferences(
  structured: StructuredReflection,
  lastObservationSeq: number,
  citableSeqs?: ReadonlySet<number>,
): CheckedReferences {
  if (structured.schemaVersion !== 1) return { supersessions: [], contradictions: [], rejected: 0 };
  const exists = (seq: number): boolean =>
    Number.isSafeInteger(seq) &&
    seq >= 1 &&
    seq <= lastObservationSeq &&
    (citableSeqs === undefined || citableSeqs.has(seq));
  let rejected = 0;
  const supersessions: Supersession[] = [];
  const seenSupersessions = new Set<string>();
  for (const item of structured.supersessions) {
    if (!exists(item.newerSeq) || !exists(item.olderSeq) || item.newerSeq <= item.olderSeq) {
      rejected++;
      continue;
    }
    const key = `${item.newerSeq}:${item.olderSeq}`;
    if (seenSupersessions.has(key)) continue;
    seenSupersessions.add(key);
    supersessions.push({ newerSeq: item.newerSeq, olderSeq: item.olderSeq, reason: item.reason });
  }
  const contradictions: Contradiction[] = [];
  const seenContradictions = new Set<string>();
  for (const item of structured.contradictions) {
    if (!exists(item.seqA) || !exists(item.seqB) || item.seqA === item.seqB) {
      rejected++;
      continue;
    }
    const seqA = Math.min(item.seqA, item.seqB);
    const seqB = Math.max(item.seqA, item.seqB);
    const key = `${seqA}:${seqB}`;
    if (seenContradictions.has(key)) continue;
    seenContradictions.add(key);
    contradictions.push({ seqA, seqB, detail: item.detail });
  }
  return { supersessions, contradictions, rejected };
}

/** What {@link refuseToolSupersessions} reads of an observation: its provenance. */
export interface ObservationOrigin {
  readonly seq: number;
  readonly source: ObservationSource;
  readonly importance: number | null;
}

/** What {@link refuseToolSupersessions} leaves of a reflection, and how many supersessions it refused. */
export interface RefusedSupersessions {
  readonly structured: StructuredReflection;
  readonly refused: number;
}

/**
 * Whether an observation may rest on tool output: its source is `tool`, or it is `assistant`
 * or `mixed` with an importance within `toolImportanceCap` (or none), the mark the cap leaves
 * on what cites only the assistant, or nothing, beside tool output. `user`, `client` and
 * `import` never do.
 */
export function mayRestOnToolOutput(observation: ObservationOrigin, toolImportanceCap: number): boolean {
  if (observation.source === 'tool') return true;
  if (observation.source !== 'assistant' && observation.source !== 'mixed') return false;
  return observation.importance === null || observation.importance <= toolImportanceCap;
}

/**
 * Refuses the supersessions in which an observation that may rest on tool output
 * ({@link mayRestOnToolOutput}) replaces one that does not: text a tool returned cannot retire
 * what the user said, so the pair is kept as a contradiction instead (once: not when the
 * reflection already lists it), which shows both and asks which applies. `observations` are
 * the scope's, in seq order; a seq not among them, and a supersession whose newer seq is not
 * the greater, are left to {@link checkReflectionReferences}.
 * With nothing refused, `structured` itself.
 */
export function refuseToolSupersessions(
  structured: StructuredReflection,
  observations: readonly ObservationOrigin[],
  toolImportanceCap: number,
): RefusedSupersessions {
  if (structured.schemaVersion !== 1) return { structured, refused: 0 };
  const fromTool = (seq: number): boolean | undefined => {
    const observation = observations[firstAfterSeq(observations, seq) - 1];
    return observation?.seq === seq ? mayRestOnToolOutput(observation, toolImportanceCap) : undefined;
  };
  const refuses = (item: Supersession): boolean =>
    item.newerSeq > item.olderSeq && fromTool(item.newerSeq) === true && fromTool(item.olderSeq) === false;
  const refused = structured.supersessions.filter(refuses);
  if (refused.length === 0) return { structured, refused: 0 };
  const listed = new Set(structured.contradictions.map((item) => pairKey(item.seqA, item.seqB)));
  const contradictions = [...structured.contradictions];
  for (const item of refused) {
    const key = pairKey(item.newerSeq, item.olderSeq);
    if (listed.has(key)) continue;
    listed.add(key);
    const reason = item.reason.trim();
    contradictions.push({
      seqA: item.olderSeq,
      seqB: item.newerSeq,
      detail: reason === '' ? TOOL_CHANGE_DETAIL : `${TOOL_CHANGE_DETAIL}: ${reason}`,
    });
  }
  return {
    structured: {
      ...structured,
      supersessions: structured.supersessions.filter((item) => !refuses(item)),
      contradictions,
    },
    refused: refused.length,
  };
}

/** The detail of a contradiction kept where tool output would have replaced what the user said. */
export const TOOL_CHANGE_DETAIL = 'a change that may come from tool output';

function pairKey(seqA: number, seqB: number): string {
  return `${Math.min(seqA, seqB)}:${Math.max(seqA, seqB)}`;
}

/**
 * The newest observation superseding each superseded one: older seq → newer seq. A fact
 * changed twice (10 → 40 → 55) maps both 10 and 40 to their direct successors.
 */
export function supersededBy(links: { readonly supersessions: readonly Supersession[] }): Map<number, number> {
  const map = new Map<number, number>();
  for (const item of links.supersessions) {
    const known = map.get(item.olderSeq);
    if (known === undefined || item.newerSeq > known) map.set(item.olderSeq, item.newerSeq);
  }
  return map;
}

/** Orders contradictions newest first: by their newer seq, then their older one, both descending. */
export function newestContradictionFirst(a: Contradiction, b: Contradiction): number {
  return Math.max(b.seqA, b.seqB) - Math.max(a.seqA, a.seqB) || Math.min(b.seqA, b.seqB) - Math.min(a.seqA, a.seqB);
}

/**
 * The active part of a set: every supersession (a replaced fact stays replaced), and the
 * contradictions neither of whose observations has been superseded since (a supersession
 * resolves a contradiction about the same fact). Given the scope's observations (in seq
 * order), a supersession or contradiction naming one deleted since is left out: a deleted
 * fact neither replaces another nor stands against it.
 */
export function activeReflectionLinks(
  links: ReflectionLinks,
  observations?: ReadonlyArray<{ readonly seq: number }>,
): ReflectionLinks {
  const standing = observations === undefined ? links : linksBetweenPresent(links, observations);
  if (standing.contradictions.length === 0) return standing;
  const superseded = supersededBy(standing);
  const contradictions = standing.contradictions.filter(
    (item) => !superseded.has(item.seqA) && !superseded.has(item.seqB),
  );
  return contradictions.length === standing.contradictions.length
    ? standing
    : { supersessions: standing.supersessions, contradictions };
}

/** The links both of whose observations are among `observations` (in seq order); `links` itself when all are. */
function linksBetweenPresent(
  links: ReflectionLinks,
  observations: ReadonlyArray<{ readonly seq: number }>,
): ReflectionLinks {
  if (links.supersessions.length === 0 && links.contradictions.length === 0) return links;
  // A binary search each: links are few, a scope's observations many.
  const present = (seq: number): boolean => {
    const after = firstAfterSeq(observations, seq);
    return after > 0 && (observations[after - 1] as { readonly seq: number }).seq === seq;
  };
  const supersessions = links.supersessions.filter((item) => present(item.olderSeq) && present(item.newerSeq));
  const contradictions = links.contradictions.filter((item) => present(item.seqA) && present(item.seqB));
  return supersessions.length === links.supersessions.length && contradictions.length === links.contradictions.length
    ? links
    : { supersessions, contradictions };
}
