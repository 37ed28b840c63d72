/**
 * Where a scope stands toward its next observe, its next reflection and its snippet budget.
 * @module
 */
import type { MemoryRecord, ObservationConfig } from '../core/observation.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import type { Operation } from '../storage/store.js';
import type { MemoryProgress } from './observational-memory-api.js';

/**
 * The progress of a scope from what was read of it: its record (which keeps the unobserved
 * tokens), its operations in `processing` and its snippet.
 */
export function progressOf(input: {
  readonly record: MemoryRecord | undefined;
  readonly config: ObservationConfig;
  readonly operations: readonly Operation[];
  readonly snippet: string;
  readonly estimator: TokenEstimator;
}): MemoryProgress {
  const processing = new Set(
    input.operations
      .filter((operation) => operation.status === 'processing')
      .map((operation) => operation.operationType),
  );
  return Object.freeze({
    unobservedTokens: input.record?.unobservedMessageTokens ?? 0,
    observeMinTokens: input.config.observeMinTokens,
    unreflectedObservationTokens: input.record?.unreflectedObservationTokens ?? 0,
    reflectThresholdTokens: input.config.reflectThresholdTokens,
    snippetTokens: input.snippet === '' ? 0 : input.estimator.estimate(input.snippet),
    snippetMaxTokens: input.config.snippetMaxTokens,
    observing: processing.has('observe'),
    reflecting: processing.has('reflect') || processing.has('reflect_now'),
  });
}
