import type { MemoryRecord, Observation, ObservationConfig } from './observation.js';
import type { StructuredReflection } from './reflection.js';
import type { ReflectionLinks } from './reflection-links.js';
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
  /** Supersessions in the scope's supersession set (all stay in force). */
  readonly activeSupersessions: number;
  /** Contradictions in the set not resolved by a later supersession of either side. */
  readonly activeContradictions: number;
  /**
   * References reflections made that were dropped when applied: unknown seq, backwards supersession,
   * self-reference.
   */
  readonly rejectedReferences: number;
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
  /** The scope's active supersession set (see `activeReflectionLinks`); none when omitted. */
  activeLinks?: ReflectionLinks;
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
    activeSupersessions: input.activeLinks?.supersessions.length ?? 0,
    activeContradictions: input.activeLinks?.contradictions.length ?? 0,
    rejectedReferences: record?.rejectedReferenceCount ?? 0,
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
    active_supersessions: status.activeSupersessions,
    active_contradictions: status.activeContradictions,
    rejected_references: status.rejectedReferences,
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

/**
 * The wire form of an observation (`importance` is left out when unscored). Provenance:
 * `source` (the roles it came from), the batch's message range as `source_start_index` /
 * `source_end_index`, and `source_message_indexes`, the messages the observer cited (all
 * positions from 0 in the scope's message log, as `last_observed_message_index`).
 */
export function observationToJson(observation: Observation): Record<string, unknown> {
  return {
    seq: observation.seq,
    content: observation.content,
    token_count: observation.tokenCount,
    ...(observation.importance === null ? {} : { importance: observation.importance }),
    created_at: observation.createdAt,
    source: observation.source,
    source_start_index: observation.sourceStartSeq - 1,
    source_end_index: observation.sourceEndSeq - 1,
    source_message_indexes: observation.sourceMessageSeqs.map((seq) => seq - 1),
  };
}

/**
 * The wire form of a supersession set: `{supersessions: [{newer_seq, older_seq, reason, operation_id,
 * created_at}], contradictions: [{seq_a, seq_b, detail, …}]}`.
 */
export function reflectionLinksToJson(links: ReflectionLinks): Record<string, unknown> {
  return {
    supersessions: links.supersessions.map((item) => ({
      newer_seq: item.newerSeq,
      older_seq: item.olderSeq,
      reason: item.reason,
      operation_id: item.operationId,
      created_at: item.createdAt,
    })),
    contradictions: links.contradictions.map((item) => ({
      seq_a: item.seqA,
      seq_b: item.seqB,
      detail: item.detail,
      operation_id: item.operationId,
      created_at: item.createdAt,
    })),
  };
}

/**
 * How a human reads an observation's provenance: `user, messages 11–13` (message indexes from 0,
 * as in the JSON), or the source alone (`client`, `import`) for one made outside a transcript.
 */
export function describeProvenance(observation: Observation): string {
  // Seqs start at 1: an observation with none of them was imported or remembered by a client.
  if (observation.sourceStartSeq < 1 && observation.sourceMessageSeqs.length === 0) return observation.source;
  const cited = observation.sourceMessageSeqs.map((seq) => seq - 1);
  const start = observation.sourceStartSeq - 1;
  const end = observation.sourceEndSeq - 1;
  const messages =
    cited.length > 0
      ? `message${cited.length > 1 ? 's' : ''} ${cited.join(', ')}`
      : start === end
        ? `message ${start}`
        : `messages ${start}–${end}`;
  return `${observation.source}, ${messages}`;
}

/** The wire form of a structured reflection. */
export function structuredReflectionToJson(structured: StructuredReflection): Record<string, unknown> {
  return {
    summary: structured.summary,
    supersessions: structured.supersessions.map((item) => ({
      newer_seq: item.newerSeq,
      older_seq: item.olderSeq,
      reason: item.reason,
    })),
    contradictions: structured.contradictions.map((item) => ({
      seq_a: item.seqA,
      seq_b: item.seqB,
      detail: item.detail,
    })),
    schema_version: structured.schemaVersion,
  };
}
