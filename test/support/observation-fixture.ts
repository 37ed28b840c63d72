/**
 * An observation as a store returns one, for tests of what is built from observations (the
 * snippet, its budget): a user's, its tokens counted by the rune estimator.
 */
import type { Observation } from '../../src/core/observation.js';
import { RUNE_TOKEN_ESTIMATOR } from '../../src/core/token-estimator.js';

export function observationOf(seq: number, content: string, importance: number | null): Observation {
  return {
    seq,
    content,
    importance,
    tokenCount: RUNE_TOKEN_ESTIMATOR.estimate(content),
    createdAt: '2026-01-01T00:00:00.000Z',
    sourceStartSeq: 1,
    sourceEndSeq: 1,
    source: 'user',
    sourceMessageSeqs: [],
    operationId: 'op',
  };
}
