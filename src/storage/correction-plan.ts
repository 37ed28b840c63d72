/**
 * The one rule for correcting a stored observation, executed by every store, and the word
 * match the stores' searches share.
 * @module
 */
import type { Observation } from '../core/observation.js';
import type { ObservationChange } from './store.js';

/** What a correction changes on the scope's record, besides bumping its version. */
export interface CorrectionPlan {
  /** Added to the active observation token total (negative when it shrinks). */
  readonly activeTokensDelta: number;
  /** Added to the unreflected token total: only an observation after the reflection counts there. */
  readonly unreflectedTokensDelta: number;
  /** -1 for a delete, 0 for a replacement. */
  readonly countDelta: number;
  /** The observation afterwards; null when deleted. */
  readonly observation: Observation | null;
  /** The operation log's payload: the seq and the action, never the old or the new text. */
  readonly payload: Readonly<Record<string, unknown>>;
}

/** Plans `change` to `existing`, given the seq the scope's reflection covers (0 when none). */
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
      observation: null,
      payload: Object.freeze({ seq: existing.seq, action: 'delete' }),
    };
  }
  const delta = change.tokenCount - existing.tokenCount;
  const importance = change.importance === undefined ? existing.importance : change.importance;
  return {
    activeTokensDelta: delta,
    unreflectedTokensDelta: unreflected ? delta : 0,
    countDelta: 0,
    observation: Object.freeze({
      ...existing,
      content: change.content,
      tokenCount: change.tokenCount,
      importance,
      operationId,
    }),
    payload: Object.freeze({ seq: existing.seq, action: 'replace', importance }),
  };
}

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
