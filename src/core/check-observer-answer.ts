/**
 * What any observer hands back (the model observer, or a library user's own `Observer`),
 * held to what the model observer's parser guarantees before it is stored.
 * @module
 */
import { HarnessMemoryError } from './errors.js';
import type { ParsedObservation } from './observation.js';
import {
  DEFAULT_MAX_OBSERVATION_CHARS,
  DEFAULT_MAX_OBSERVATIONS,
  MAX_SOURCE_SEQS,
  truncateObservation,
} from './parse-observations.js';

/**
 * An observer's answer as it may be stored: at most 50 observations, each content a string
 * of at most 2,000 code points (cut as the parser cuts), each importance `null` or a number
 * clamped to [0, 1] (±Infinity to its end), cited and replaced seqs integers. Anything else is
 * `MODEL_OUTPUT_INVALID` naming the observation: not an array, a content that is not a
 * string, an importance that is NaN or not a number.
 */
export function checkObserverAnswer(answer: unknown): ParsedObservation[] {
  if (!Array.isArray(answer)) throw invalidAnswer('the answer is not an array of observations');
  const kept: ParsedObservation[] = [];
  for (const [index, item] of answer.slice(0, DEFAULT_MAX_OBSERVATIONS).entries()) {
    if (typeof item !== 'object' || item === null) throw invalidAnswer(`observation ${index} is not an object`);
    const { content, importance, sourceSeqs, replacesSeqs } = item as Record<string, unknown>;
    if (typeof content !== 'string') throw invalidAnswer(`observation ${index} has no string content`);
    if (importance !== null && importance !== undefined && (typeof importance !== 'number' || Number.isNaN(importance)))
      throw invalidAnswer(
        `observation ${index} has importance ${describe(importance)}: give a number from 0 to 1, or null`,
      );
    const seqs = seqsOf(sourceSeqs);
    const replaced = seqsOf(replacesSeqs);
    kept.push({
      content: truncateObservation(content, DEFAULT_MAX_OBSERVATION_CHARS),
      importance: typeof importance === 'number' ? Math.min(1, Math.max(0, importance)) : null,
      ...(seqs ? { sourceSeqs: seqs } : {}),
      ...(replaced ? { replacesSeqs: replaced } : {}),
    });
  }
  return kept;
}

/** The whole-number seqs of a list an observer handed back (at most {@link MAX_SOURCE_SEQS}); undefined when it is no list. */
function seqsOf(value: unknown): number[] | undefined {
  return Array.isArray(value)
    ? value.filter((seq): seq is number => Number.isSafeInteger(seq)).slice(0, MAX_SOURCE_SEQS)
    : undefined;
}

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : String(value);
}

function invalidAnswer(problem: string): HarnessMemoryError {
  return new HarnessMemoryError({
    code: 'MODEL_OUTPUT_INVALID',
    component: 'observer',
    message: `The observer's answer cannot be stored: ${problem}.`,
    data: { role: 'observer', reason: 'invalid' },
  });
}
