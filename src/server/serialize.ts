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
    run_id: operation.runId,
    created_at: operation.createdAt,
    updated_at: operation.updatedAt,
  };
}
