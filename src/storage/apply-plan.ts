import type { ObservationSource, StoredReflection } from '../core/observation.js';
import { checkReflectionReferences, TOOL_CHANGE_DETAIL } from '../core/reflection-links.js';
import type { Contradiction, Supersession } from '../core/reflection.js';
import type { ImportedObservation, Marker, NewObservation } from './store.js';

/** Where a scope stands before an apply: the message cursor and the last observation seq. */
export interface ApplyPosition {
  readonly observedThroughMessageSeq: number;
  readonly lastObservationSeq: number;
  /** The record's correction count, where the store read it (an observe's links depend on it). */
  readonly correctionCount?: number;
}

/** One observation as the plan numbers it, before the store stamps `createdAt` and the operation. */
export interface PlannedObservation {
  readonly seq: number;
  readonly content: string;
  readonly tokenCount: number;
  readonly importance: number | null;
  readonly source: ObservationSource;
  readonly sourceMessageSeqs: readonly number[];
  readonly sourceStartSeq: number;
  readonly sourceEndSeq: number;
}

/** A marker as the plan lays it out; the store adds the scope, the cycle (its operation) and the time. */
export type PlannedMarker = Omit<Marker, 'memoryId' | 'cycleId' | 'createdAt'>;

/** Everything a store writes to apply one observe operation. */
export interface ObservationApplyPlan {
  /** The first message seq the batch covers (the cursor plus one). */
  readonly startSeq: number;
  /** The new cursor: never behind the old one. */
  readonly throughSeq: number;
  readonly observations: readonly PlannedObservation[];
  /** The scope's last observation seq after the apply. */
  readonly lastObservationSeq: number;
  /** The batch's token total, added to the active and unreflected totals. */
  readonly tokens: number;
  /** `observation_start` then `observation_end`. */
  readonly markers: readonly [PlannedMarker, PlannedMarker];
  /**
   * What the observations replace or conflict with ({@link NewObservation.supersedes}), as links of the
   * supersession set; a store keeps a pair already in its set as it was.
   */
  readonly links: readonly PlannedLink[];
}

/**
 * The one rule for applying an observe operation, executed by every store: observations
 * take the next seqs in order, each spans the batch's message range, the cursor never moves
 * back, the two markers carry the first and last seq of the cycle, and the links the
 * observations ask for are added unless the scope was corrected since `correctionCount`.
 */
export function planObservationApply(
  position: ApplyPosition,
  input: {
    readonly observations: readonly NewObservation[];
    readonly throughMessageSeq: number;
    readonly markerIds: { readonly start: string; readonly end: string };
    readonly correctionCount?: number;
  },
): ObservationApplyPlan {
  const startSeq = position.observedThroughMessageSeq + 1;
  const throughSeq = Math.max(position.observedThroughMessageSeq, input.throughMessageSeq);
  let tokens = 0;
  const observations = input.observations.map((candidate, index): PlannedObservation => {
    tokens += candidate.tokenCount;
    return {
      seq: position.lastObservationSeq + index + 1,
      content: candidate.content,
      tokenCount: candidate.tokenCount,
      importance: candidate.importance,
      source: candidate.source ?? 'mixed',
      sourceMessageSeqs: candidate.sourceMessageSeqs ?? [],
      sourceStartSeq: startSeq,
      sourceEndSeq: throughSeq,
    };
  });
  const lastObservationSeq = position.lastObservationSeq + observations.length;
  // An observation corrected or deleted since the observer read the scope may no longer say
  // what a link of its answer replaces: the observations are stored, their links are not.
  const corrected =
    input.correctionCount !== undefined &&
    position.correctionCount !== undefined &&
    input.correctionCount !== position.correctionCount;
  const links = corrected ? [] : observedLinks(position.lastObservationSeq, input.observations);
  const marker = (
    markerId: string,
    markerType: 'observation_start' | 'observation_end',
    at: number,
    seq: number,
  ): PlannedMarker => ({
    markerId,
    markerType,
    messageSeqStart: at,
    messageSeqEnd: at,
    tokenCount: tokens,
    payload: { seq },
  });
  return {
    startSeq,
    throughSeq,
    observations,
    lastObservationSeq,
    tokens,
    markers: [
      marker(input.markerIds.start, 'observation_start', startSeq, position.lastObservationSeq + 1),
      marker(input.markerIds.end, 'observation_end', throughSeq, lastObservationSeq),
    ],
    links,
  };
}

/**
 * The links new observations ask for: the one numbered `lastSeq + index + 1` supersedes each seq
 * of its `supersedes`, and conflicts with each of its `contradicts`, that the scope had assigned
 * before it (1 to `lastSeq`); each pair once.
 */
function observedLinks(lastSeq: number, observations: readonly NewObservation[]): PlannedLink[] {
  const links: PlannedLink[] = [];
  const seen = new Set<string>();
  const earlier = (seq: number) => Number.isSafeInteger(seq) && seq >= 1 && seq <= lastSeq;
  observations.forEach((observation, index) => {
    const seq = lastSeq + index + 1;
    for (const older of observation.supersedes ?? []) {
      if (!earlier(older) || seen.has(`s:${older}:${seq}`)) continue;
      seen.add(`s:${older}:${seq}`);
      links.push({ kind: 'supersession', firstSeq: seq, secondSeq: older, detail: '' });
    }
    for (const older of observation.contradicts ?? []) {
      if (!earlier(older) || seen.has(`c:${older}:${seq}`)) continue;
      seen.add(`c:${older}:${seq}`);
      links.push({ kind: 'contradiction', firstSeq: older, secondSeq: seq, detail: TOOL_CHANGE_DETAIL });
    }
  });
  return links;
}

/** One link of the supersession set as a store writes it: a supersession (newer, older) or a contradiction (a, b). */
export interface PlannedLink {
  readonly kind: 'supersession' | 'contradiction';
  readonly firstSeq: number;
  readonly secondSeq: number;
  readonly detail: string;
}

/** Everything a store writes to apply one reflection. */
export interface ReflectionApplyPlan {
  readonly marker: PlannedMarker;
  /**
   * Supersessions first, then contradictions, each checked against the scope; a store keeps a pair already in
   * its set as it was.
   */
  readonly links: readonly PlannedLink[];
  /** References dropped by the check, added to the record's count. */
  readonly rejected: number;
}

/**
 * The one rule for applying a reflection, executed by every store: a `reflection_end` marker
 * at the cursor, and the reflection's references checked against the scope's seqs
 * ({@link checkReflectionReferences}) before they join the supersession set.
 */
export function planReflectionApply(
  position: ApplyPosition,
  input: {
    readonly reflection: StoredReflection;
    readonly markerId: string;
    readonly citableSeqs?: readonly number[];
    readonly refusedReferences?: number;
  },
): ReflectionApplyPlan {
  const { reflection } = input;
  const at = position.observedThroughMessageSeq;
  const checked = checkReflectionReferences(
    reflection.structured,
    position.lastObservationSeq,
    input.citableSeqs === undefined ? undefined : new Set(input.citableSeqs),
  );
  return {
    marker: {
      markerId: input.markerId,
      markerType: 'reflection_end',
      messageSeqStart: at,
      messageSeqEnd: at,
      tokenCount: reflection.tokenCount,
      payload: { last_reflected_seq: reflection.throughSeq },
    },
    links: plannedLinks(checked),
    rejected: checked.rejected + (input.refusedReferences ?? 0),
  };
}

/** Checked references as the links a store adds: supersessions first, then contradictions. */
export function plannedLinks(checked: {
  readonly supersessions: readonly Supersession[];
  readonly contradictions: readonly Contradiction[];
}): PlannedLink[] {
  return [
    ...checked.supersessions.map((item): PlannedLink => ({
      kind: 'supersession',
      firstSeq: item.newerSeq,
      secondSeq: item.olderSeq,
      detail: item.reason,
    })),
    ...checked.contradictions.map((item): PlannedLink => ({
      kind: 'contradiction',
      firstSeq: item.seqA,
      secondSeq: item.seqB,
      detail: item.detail,
    })),
  ];
}

/** Everything a store writes to import observations. */
export interface ImportApplyPlan {
  readonly observations: readonly (PlannedObservation & { readonly createdAt: string | undefined })[];
  /** The cursor, unchanged: imported observations come from no stored message. */
  readonly throughSeq: number;
  readonly lastObservationSeq: number;
  readonly tokens: number;
}

/**
 * The one rule for importing observations, executed by every store: the next seqs in the
 * order given, no message span (0 to 0), provenance `import` unless said, and the cursor
 * left where it is.
 */
export function planImportApply(
  position: ApplyPosition,
  observations: readonly ImportedObservation[],
): ImportApplyPlan {
  let tokens = 0;
  const planned = observations.map((item, index) => {
    tokens += item.tokenCount;
    return {
      seq: position.lastObservationSeq + index + 1,
      content: item.content,
      tokenCount: item.tokenCount,
      importance: item.importance,
      source: item.source ?? 'import',
      sourceMessageSeqs: item.sourceMessageSeqs ?? [],
      sourceStartSeq: 0,
      sourceEndSeq: 0,
      createdAt: item.createdAt,
    };
  });
  return {
    observations: planned,
    throughSeq: position.observedThroughMessageSeq,
    lastObservationSeq: position.lastObservationSeq + planned.length,
    tokens,
  };
}
