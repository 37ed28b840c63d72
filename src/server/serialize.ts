import { observationToJson } from '../core/memory-status.js';
import type { ListedScope, MemoryProgress, ObservationView } from '../memory/observational-memory-api.js';
import type { RunRecord } from '../storage/run-store.js';
import type { Operation, WorkingMemoryEntry } from '../storage/store.js';

/** The wire form of a run. */
export function runToJson(run: RunRecord): Record<string, unknown> {
  return {
    run_id: run.runId,
    status: run.status,
    tenant_id: run.scope.tenantId,
    conversation_id: run.scope.conversationId,
    agent_id: run.scope.agentId,
    prompt: run.prompt,
    model: run.model,
    output: run.output,
    error: run.error,
    steps: run.steps,
    max_steps: run.maxSteps,
    usage: { input_tokens: run.usage.inputTokens, output_tokens: run.usage.outputTokens },
    parent_run_id: run.parentRunId,
    created_at: run.createdAt,
    updated_at: run.updatedAt,
  };
}

/** The wire form of a working-memory entry (value decoded). */
export function entryToJson(entry: WorkingMemoryEntry): Record<string, unknown> {
  return {
    key: entry.key,
    value: JSON.parse(entry.valueJson) as unknown,
    created_at: entry.createdAt,
    updated_at: entry.updatedAt,
    expires_at: entry.expiresAt,
  };
}

/** The wire form of an operation, as the memory routes and the CLI show dead ones. */
export function operationToJson(operation: Operation): Record<string, unknown> {
  return {
    operation_id: operation.operationId,
    operation_type: operation.operationType,
    status: operation.status,
    scope_sequence: operation.scopeSequence,
    attempt: operation.attempt,
    error: operation.errorText,
    payload: operation.payload,
    run_id: operation.runId,
    created_at: operation.createdAt,
    updated_at: operation.updatedAt,
  };
}

/** The wire form of a listed scope (`GET /v1/memory`). */
export function listedScopeToJson(scope: ListedScope): Record<string, unknown> {
  return {
    tenant_id: scope.scope.tenantId,
    conversation_id: scope.scope.conversationId,
    agent_id: scope.scope.agentId,
    memory_id: scope.memoryId,
    enabled: scope.enabled,
    observations: scope.observationCount,
    working_memory_entries: scope.workingMemoryEntries,
    pending_operations: scope.pendingOperations,
    dead_operations: scope.deadOperations,
    last_activity_at: scope.lastActivityAt,
  };
}

/** The wire form of an observation with its selection view (`GET …/observations`). */
export function observationViewToJson(view: ObservationView): Record<string, unknown> {
  return {
    ...observationToJson(view),
    importance: view.importance,
    recency: view.ageSteps,
    score: view.score,
    included: view.included,
    cut_by_budget: view.notShownBecause === 'budget',
    not_shown_because: view.notShownBecause,
    superseded_by: view.supersededBy,
  };
}

/** The wire form of a scope's progress (the `progress` of `GET /v1/memory/{tenant}/{conversation}/{agent}`). */
export function progressToJson(progress: MemoryProgress): Record<string, unknown> {
  return {
    unobserved_tokens: progress.unobservedTokens,
    observe_min_tokens: progress.observeMinTokens,
    unreflected_observation_tokens: progress.unreflectedObservationTokens,
    reflect_threshold_tokens: progress.reflectThresholdTokens,
    snippet_tokens: progress.snippetTokens,
    snippet_max_tokens: progress.snippetMaxTokens,
    observing: progress.observing,
    reflecting: progress.reflecting,
  };
}
