/**
 * The one rule for correcting a stored observation, executed by every store, and the word
 * match the stores' searches share.
 * @module
 */
import { HarnessMemoryError } from '../core/errors.js';
import type { Observation } from '../core/observation.js';
import type { ObservationChange } from './store.js';

/**
 * What a correction changes on the scope's record, besides bumping its version and correction
 * count. When {@link CorrectionPlan.dropsLinks}, the store also drops the links of the
 * supersession set that name the observation.
 */
export interface CorrectionPlan {
  /** Added to the active observation token total (negative when it shrinks). */
  readonly activeTokensDelta: number;
  /**
   * Added to the unreflected token total: only an observation after the reflection counts there.
   * Unused when {@link dropsReflection}.
   */
  readonly unreflectedTokensDelta: number;
  /** -1 for a delete, 0 for a replacement. */
  readonly countDelta: number;
  /**
   * Whether the scope's reflection is taken out of force: it covers the observation, so it may
   * state what was deleted or corrected, and the next reflector would carry that forward (a
   * replacement keeping the text, which changes the importance alone, keeps it). The
   * record is then left without a reflection, and its unreflected token total becomes its active
   * total (every observation is unreflected again), so the reflect threshold applies to them all.
   */
  readonly dropsReflection: boolean;
  /**
   * Whether the supersessions and contradictions naming the observation are dropped: a
   * supersession's reason or a contradiction's detail was written about the old text. A
   * replacement keeping the text keeps them, so a fact its newer one superseded stays held back.
   */
  readonly dropsLinks: boolean;
  /** The observation afterwards; null when deleted. */
  readonly observation: Observation | null;
  /** The operation log's payload: the seq and the action, never the old or the new text. */
  readonly payload: Readonly<Record<string, unknown>>;
}

/**
 * Plans `change` to `existing`, given the seq the scope's reflection covers through (0 when it has
 * none). A replacement without `content` keeps `existing`'s text; one with neither `content` nor
 * `importance` is refused (`OBSERVATION_INVALID`, field `content`).
 */
export function planCorrection(
  existing: Observation,
  change: ObservationChange,
  reflectionThroughSeq: number,
  operationId: string,
): CorrectionPlan {
  const unreflected = existing.seq > reflectionThroughSeq;
  if (change.kind === 'delete') {
    return {
      activeTokensDelta: -existing.tokenCount,
      unreflectedTokensDelta: unreflected ? -existing.tokenCount : 0,
      countDelta: -1,
      dropsReflection: !unreflected,
      dropsLinks: true,
      observation: null,
      // Says why the reflection went, never what it or the observation said.
      payload: Object.freeze({ seq: existing.seq, action: 'delete', ...(unreflected ? {} : REFLECTION_DROPPED) }),
    };
  }
  if (change.content === undefined && change.importance === undefined)
    throw new HarnessMemoryError({
      code: 'OBSERVATION_INVALID',
      component: 'memory',
      message: 'content is required to replace an observation unless importance is given.',
      data: { field: 'content' },
    });
  // A replacement keeping the text (a new importance alone) leaves what the reflection and the
  // links said of it true.
  const keepsText = change.content === undefined || change.content === existing.content;
  const { content, tokenCount } = change.content === undefined || keepsText ? existing : change;
  const delta = tokenCount - existing.tokenCount;
  const importance = change.importance === undefined ? existing.importance : change.importance;
  const dropsReflection = !unreflected && !keepsText;
  return {
    activeTokensDelta: delta,
    unreflectedTokensDelta: unreflected ? delta : 0,
    countDelta: 0,
    dropsReflection,
    dropsLinks: !keepsText,
    observation: Object.freeze({ ...existing, content, tokenCount, importance, operationId }),
    payload: Object.freeze({
      seq: existing.seq,
      action: 'replace',
      importance,
      ...(dropsReflection ? REFLECTION_DROPPED : {}),
    }),
  };
}

const REFLECTION_DROPPED = Object.freeze({ reflection_dropped: true });

/** Whether `text` holds every one of `words`, ignoring case (the in-memory form of the stores' `LIKE`). */
export function containsWords(text: string, words: readonly string[] | undefined): boolean {
  if (!words || words.length === 0) return true;
  const folded = text.toLowerCase();
  return words.every((word) => folded.includes(word.toLowerCase()));
}

/** `word` as a `LIKE` pattern matching it anywhere, with `\` escaping `%`, `_` and itself. */
export function likePattern(word: string): string {
  return `%${word.toLowerCase().replace(/[\\%_]/g, (character) => `\\${character}`)}%`;
}

/**
 * The note of a reflection not stored because an observation was corrected or deleted while the
 * reflector ran (see `MemoryStore.completeReflection`).
 */
export const OUTDATED_REFLECTION_NOTE =
  'not stored: an observation was corrected or deleted while the reflector ran, and the reflection may restate it';

/**
 * Whether a reflection made from the record at `madeAt` (its `correctionCount` then, when known)
 * is out of date: the scope's observations were corrected or deleted since.
 */
export function isOutdatedReflection(madeAt: number | undefined, correctionCount: number): boolean {
  return madeAt !== undefined && madeAt !== correctionCount;
}
