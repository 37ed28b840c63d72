/**
 * The payload of each run event type, as the run loop emits it and the SSE stream and
 * `harness run --json` carry it (README "Events"), and {@link isRunEvent} to narrow a
 * {@link RunEvent}'s `payload` by its `type`. Types only, plus one guard: no I/O.
 * @module
 */
import type { RunEvent } from '../storage/run-store.js';

/** Fields every run event's payload carries. */
export interface RunEventPayloadBase {
  /** The payload schema's version, `"1"`. */
  readonly schema_version: '1';
  /** The run's conversation id (never redacted). */
  readonly conversation_id: string;
  /**
   * The step the event belongs to, when known: `0` for `run.started`, and absent from a
   * terminal event stored outside the run loop (a run failed as abandoned, say).
   */
  readonly step?: number;
}

/** The payload of an event that always names its step. */
interface StepPayload extends RunEventPayloadBase {
  readonly step: number;
}

/** `run.started`: the run began (step 0). */
interface RunStartedPayload extends StepPayload {
  readonly prompt: string;
  /** The model the run asked for; `""` for the harness's default. */
  readonly model: string;
  readonly tenant_id: string;
  readonly agent_id: string;
}

/** `llm.request.snapshot`: what went to the model, with `[forensics] capture_request_envelope = true` only. */
interface LlmRequestSnapshotPayload extends StepPayload {
  /** SHA-256 (hex) of the request messages. */
  readonly prompt_hash: string;
  readonly tool_names: readonly string[];
  /** The observational-memory snippet sent, with `snapshot_memory_snippet` only. */
  readonly memory_snippet?: string;
}

/** `assistant.message`: the model's answer of a step. */
interface AssistantMessagePayload extends StepPayload {
  readonly content: string;
  /** True for the final answer (no tool calls). */
  readonly final: boolean;
  readonly tool_calls: ReadonlyArray<{ readonly id: string; readonly name: string }>;
}

/** `tool.call.started`. */
interface ToolCallStartedPayload extends StepPayload {
  readonly tool_call_id: string;
  readonly name: string;
}

/** `tool.call.completed`. */
interface ToolCallCompletedPayload extends StepPayload {
  readonly tool_call_id: string;
  readonly name: string;
  /** False when the tool failed; its error was the result the model saw. */
  readonly ok: boolean;
}

/** `memory.observe.started`: a step's transcript handed to observational memory. */
type MemoryObserveStartedPayload = StepPayload;

/** `memory.observe.completed`. */
interface MemoryObserveCompletedPayload extends StepPayload {
  readonly observed: boolean;
  readonly reflected: boolean;
  /** The scope's observation count. */
  readonly observation: number;
}

/** `memory.observe.failed`: the observation failed, or the reflection after it did. */
interface MemoryObserveFailedPayload extends StepPayload {
  readonly error: string;
}

/** `memory.snippet.failed`: a snippet could not be built; the turn went on without it. */
interface MemorySnippetFailedPayload extends StepPayload {
  readonly source: 'working_memory' | 'observational_memory';
  readonly error: string;
}

/** `memory.reflection.completed`. */
interface MemoryReflectionCompletedPayload extends StepPayload {
  readonly trigger: 'auto' | 'reflect_now';
  readonly operation_id: string;
}

/** `memory.operation.dead`: an operation of the run used up its attempts and was parked. */
interface MemoryOperationDeadPayload extends StepPayload {
  readonly operation_id: string;
  /** `observe`, `reflect`, … */
  readonly operation_type: string;
  /** The last error, redacted. */
  readonly error: string;
  readonly attempts: number;
}

/** `memory.working_memory.set`: a tool call of the run set a working-memory entry. */
interface MemoryWorkingMemorySetPayload extends StepPayload {
  readonly key: string;
  /** The size of the value's JSON; the value itself is never in the event. */
  readonly bytes: number;
  /** When the entry expires (ISO 8601 UTC), present only when it does. */
  readonly expires_at?: string;
}

/** `memory.working_memory.deleted`: a tool call of the run deleted an entry. */
interface MemoryWorkingMemoryDeletedPayload extends StepPayload {
  readonly key: string;
}

/** `memory.message.skipped`: the memory model refused one of the run's messages even alone. */
interface MemoryMessageSkippedPayload extends StepPayload {
  readonly operation_id: string;
  /** The message's seq in the scope. */
  readonly message_seq: number;
  /** `id:<id>`, or `index:<index>` for a message given by index. */
  readonly message_key: string;
  /** The operation's note: the refusal, redacted. */
  readonly error: string;
}

/** `run.step.completed`. */
type RunStepCompletedPayload = StepPayload;

/** `run.completed`: always the run's last event. */
interface RunCompletedPayload extends RunEventPayloadBase {
  readonly output: string;
  readonly steps: number;
  readonly usage: { readonly input_tokens: number; readonly output_tokens: number };
}

/** `run.failed`: always the run's last event. */
interface RunFailedPayload extends RunEventPayloadBase {
  /** `code` is one of `RUN_ERROR_CODES`, a `HarnessMemoryError` code, or `SCOPE_FORGOTTEN`. */
  readonly error: { readonly code: string; readonly message: string };
}

/** `run.cancelled`: always the run's last event; nothing beyond the common fields. */
type RunCancelledPayload = RunEventPayloadBase;

/**
 * The payload of each run event type, snake_case as the SSE stream carries it (README
 * "Events"). Every payload also has the fields of {@link RunEventPayloadBase}.
 * @example
 * ```ts
 * import type { RunEventPayloads } from 'harness-memory/agent';
 *
 * function usageOf(payload: RunEventPayloads['run.completed']): number {
 *   return payload.usage.input_tokens + payload.usage.output_tokens;
 * }
 * ```
 */
export interface RunEventPayloads {
  readonly 'run.started': RunStartedPayload;
  readonly 'llm.request.snapshot': LlmRequestSnapshotPayload;
  readonly 'assistant.message': AssistantMessagePayload;
  readonly 'tool.call.started': ToolCallStartedPayload;
  readonly 'tool.call.completed': ToolCallCompletedPayload;
  readonly 'memory.observe.started': MemoryObserveStartedPayload;
  readonly 'memory.observe.completed': MemoryObserveCompletedPayload;
  readonly 'memory.observe.failed': MemoryObserveFailedPayload;
  readonly 'memory.snippet.failed': MemorySnippetFailedPayload;
  readonly 'memory.reflection.completed': MemoryReflectionCompletedPayload;
  readonly 'memory.operation.dead': MemoryOperationDeadPayload;
  readonly 'memory.working_memory.set': MemoryWorkingMemorySetPayload;
  readonly 'memory.working_memory.deleted': MemoryWorkingMemoryDeletedPayload;
  readonly 'memory.message.skipped': MemoryMessageSkippedPayload;
  readonly 'run.step.completed': RunStepCompletedPayload;
  readonly 'run.completed': RunCompletedPayload;
  readonly 'run.failed': RunFailedPayload;
  readonly 'run.cancelled': RunCancelledPayload;
}

/** The type of every event a run emits (README "Events"). */
export type RunEventType = keyof RunEventPayloads;

/**
 * A {@link RunEvent} of type `T` with its payload typed; with no argument, the union of them
 * all, discriminated by `type`.
 */
export type RunEventOf<T extends RunEventType = RunEventType> = {
  [K in T]: Omit<RunEvent, 'type' | 'payload'> & { readonly type: K; readonly payload: RunEventPayloads[K] };
}[T];

/**
 * True when `event` is of type `type`, narrowing its `payload` to that type's
 * {@link RunEventPayloads} entry. Takes a {@link RunEvent} (`runner.subscribe`, a run store's
 * `listEvents`) or the SSE `data` object (`{id, run_id, type, timestamp, payload}`), and
 * keeps its other fields as they are.
 * @example
 * ```ts
 * import { isRunEvent } from 'harness-memory/agent';
 * import type { RunEvent } from 'harness-memory/agent';
 *
 * function report(event: RunEvent): string | undefined {
 *   if (isRunEvent(event, 'run.completed')) return `${event.payload.steps} step(s): ${event.payload.output}`;
 *   if (isRunEvent(event, 'run.failed')) return `${event.payload.error.code}: ${event.payload.error.message}`;
 *   return undefined;
 * }
 * ```
 */
export function isRunEvent<T extends RunEventType, E extends { readonly type: string; readonly payload: unknown }>(
  event: E,
  type: T,
): event is E & { readonly type: T; readonly payload: RunEventPayloads[T] } {
  // Total, as a guard should be: parsed JSON may be anything.
  if (typeof event !== 'object' || event === null) return false;
  return event.type === type && typeof event.payload === 'object' && event.payload !== null;
}
