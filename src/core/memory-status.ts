import type { MemoryRecord, Observation, ObservationConfig } from './observation.js';
import type { StructuredReflection } from './reflection.js';
import type { Scope } from './scope.js';

/** How memory runs: `off` disables observing and injection. `auto` resolves to `local_coordinator`. */
export type MemoryMode = 'auto' | 'off' | 'local_coordinator';

/** The state of one scope's observational memory. */
export interface MemoryStatus {
  /** `off` or `local_coordinator` (what `auto` resolves to). */
  readonly mode: 'off' | 'local_coordinator';
  readonly memoryId: string;
  readonly scope: Scope;
  readonly enabled: boolean;
  /** 0 for a scope never written. */
  readonly stateVersion: number;
  readonly observationCount: number;
  readonly activeObservationTokens: number;
  readonly reflectionPresent: boolean;
  readonly activeReflectionTokens: number;
  /** Position (from 0) in the scope's message log of the last observed message; -1 when none. */
  readonly lastObservedMessageIndex: number;
  /** Queued or processing operations. */
  readonly pendingOperations: number;
  /** Operations parked as `dead` (attempts used up), waiting to be retried by hand. */
  readonly deadOperations: number;
  /** Effective thresholds (per-scope overrides over the defaults). */
  readonly config: ObservationConfig;
  /** ISO 8601 UTC; `null` for a scope never written. */
  readonly updatedAt: string | null;
}

/** Builds a status from a record (or the defaults, for a scope never written). */
export function statusOf(input: {
  mode: 'off' | 'local_coordinator';
  memoryId: string;
  scope: Scope;
  record: MemoryRecord | undefined;
  enabled: boolean;
  config: ObservationConfig;
  pendingOperations: number;
  /** @default 0 */
  deadOperations?: number;
}): MemoryStatus {
  const record = input.record;
  return Object.freeze({
    mode: input.mode,
    memoryId: input.memoryId,
    scope: input.scope,
    enabled: input.enabled,
    stateVersion: record?.stateVersion ?? 0,
    observationCount: record?.observationCount ?? 0,
    activeObservationTokens: record?.activeObservationTokens ?? 0,
    reflectionPresent: (record?.reflection?.raw.trim() ?? '') !== '',
    activeReflectionTokens: record?.reflection?.tokenCount ?? 0,
    lastObservedMessageIndex: (record?.observedThroughMessageSeq ?? 0) - 1,
    pendingOperations: input.pendingOperations,
    deadOperations: input.deadOperations ?? 0,
    config: input.config,
    updatedAt: record?.updatedAt ?? null,
  });
}

/** The wire (snake_case) form of a status, as tools, exports and the HTTP API show it. */
export function statusToJson(status: MemoryStatus): Record<string, unknown> {
  return {
    mode: status.mode,
    memory_id: status.memoryId,
    scope: scopeToJson(status.scope),
    enabled: status.enabled,
    state_version: status.stateVersion,
    observation_count: status.observationCount,
    active_observation_tokens: status.activeObservationTokens,
    reflection_present: status.reflectionPresent,
    active_reflection_tokens: status.activeReflectionTokens,
    last_observed_message_index: status.lastObservedMessageIndex,
    pending_operations: status.pendingOperations,
    dead_operations: status.deadOperations,
    config: configToJson(status.config),
    updated_at: status.updatedAt,
  };
}

/** `{tenant_id, conversation_id, agent_id}`. */
export function scopeToJson(scope: Scope): Record<string, string> {
  return { tenant_id: scope.tenantId, conversation_id: scope.conversationId, agent_id: scope.agentId };
}

/** `{observe_min_tokens, snippet_max_tokens, reflect_threshold_tokens}`. */
export function configToJson(config: ObservationConfig): Record<string, number> {
  return {
    observe_min_tokens: config.observeMinTokens,
    snippet_max_tokens: config.snippetMaxTokens,
    reflect_threshold_tokens: config.reflectThresholdTokens,
  };
}

/** The wire form of an observation (`importance` is left out when unscored). */
export function observationToJson(observation: Observation): Record<string, unknown> {
  return {
    seq: observation.seq,
    content: observation.content,
    token_count: observation.tokenCount,
    ...(observation.importance === null ? {} : { importance: observation.importance }),
    created_at: observation.createdAt,
    source_start_index: observation.sourceStartSeq - 1,
    source_end_index: observation.sourceEndSeq - 1,
  };
}

/** The wire form of a structured reflection. */
export function structuredReflectionToJson(structured: StructuredReflection): Record<string, unknown> {
  return {
    summary: structured.summary,
    supersessions: structured.supersessions.map((item) => ({ newer_seq: item.newerSeq, older_seq: item.olderSeq, reason: item.reason })),
    contradictions: structured.contradictions.map((item) => ({ seq_a: item.seqA, seq_b: item.seqB, detail: item.detail })),
    schema_version: structured.schemaVersion,
  };
}
