/**
 * The run event payload types: what they promise at compile time (`expectTypeOf`, checked by
 * `tsc`), and that real runs keep the promise, every payload holding exactly the fields its
 * type declares, each of its declared kind.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod/v4';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import type { MockLanguageModel } from '../../test/support/mock-language-model.js';
import { ModelCallError } from '../core/errors.js';
import { createModelObserver, createModelReflector } from '../memory/model-observer.js';
import { createObservationalMemory } from '../memory/observational-memory.js';
import type { ObservationalMemoryOptions } from '../memory/observational-memory.js';
import { createWorkingMemory } from '../memory/working-memory.js';
import { createInMemoryRunStore } from '../storage/in-memory-run-store.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createRedactingRunStore } from '../storage/redacting-run-store.js';
import type { MemoryStore } from '../storage/store.js';
import { createWorkingMemoryTool } from '../tools/working-memory-tool.js';
import { defineTool } from '../tools/tool.js';
import type { Tool } from '../tools/tool.js';
import type { AgentRunnerOptions } from './agent-runner.js';
import { createAgentRunner, isRunEvent } from './index.js';
import type { RunEvent, RunEventOf, RunEventPayloads, RunEventType } from './index.js';

const WORKSPACE = mkdtempSync(join(tmpdir(), 'hm-run-event-types-'));
afterAll(() => rmSync(WORKSPACE, { recursive: true, force: true }));

describe('run event types: the compile-time contract', () => {
  it('names every event type the README documents', () => {
    expectTypeOf<RunEventType>().toEqualTypeOf<
      | 'run.started'
      | 'llm.request.snapshot'
      | 'assistant.message'
      | 'tool.call.started'
      | 'tool.call.completed'
      | 'memory.observe.started'
      | 'memory.observe.completed'
      | 'memory.observe.failed'
      | 'memory.snippet.failed'
      | 'memory.reflection.completed'
      | 'memory.operation.dead'
      | 'memory.working_memory.set'
      | 'memory.working_memory.deleted'
      | 'memory.message.skipped'
      | 'run.step.completed'
      | 'run.completed'
      | 'run.failed'
      | 'run.cancelled'
    >();
  });

  it('narrows a RunEvent payload by its type and keeps the event fields', () => {
    const event = {} as RunEvent;
    if (isRunEvent(event, 'run.completed')) {
      expectTypeOf(event.payload.output).toEqualTypeOf<string>();
      expectTypeOf(event.payload.usage.input_tokens).toEqualTypeOf<number>();
      expectTypeOf(event.payload.schema_version).toEqualTypeOf<'1'>();
      expectTypeOf(event.payload.step).toEqualTypeOf<number | undefined>();
      expectTypeOf(event.runId).toEqualTypeOf<string>();
      expectTypeOf(event.type).toEqualTypeOf<'run.completed'>();
    }
    if (isRunEvent(event, 'memory.snippet.failed')) {
      expectTypeOf(event.payload.source).toEqualTypeOf<'working_memory' | 'observational_memory'>();
      expectTypeOf(event.payload.step).toEqualTypeOf<number>();
    }
    if (isRunEvent(event, 'memory.working_memory.set')) {
      expectTypeOf(event.payload.expires_at).toEqualTypeOf<string | undefined>();
    }
    if (isRunEvent(event, 'run.failed')) {
      expectTypeOf(event.payload.error).toEqualTypeOf<{ readonly code: string; readonly message: string }>();
    }
    // @ts-expect-error: not a run event type
    isRunEvent(event, 'run.finished');
  });

  it('narrows the SSE data object (snake_case envelope) the same way', () => {
    const data = JSON.parse('{}') as { id: string; run_id: string; type: string; timestamp: string; payload: unknown };
    if (isRunEvent(data, 'assistant.message')) {
      expectTypeOf(data.run_id).toEqualTypeOf<string>();
      expectTypeOf(data.payload.tool_calls).toEqualTypeOf<
        ReadonlyArray<{ readonly id: string; readonly name: string }>
      >();
    }
  });

  it('discriminates RunEventOf by type, and leaves RunEvent as it was', () => {
    const event = {} as RunEventOf;
    if (event.type === 'tool.call.completed') expectTypeOf(event.payload.ok).toEqualTypeOf<boolean>();
    expectTypeOf<RunEventOf<'run.started'>['payload']>().toEqualTypeOf<RunEventPayloads['run.started']>();
    expectTypeOf<RunEvent['type']>().toEqualTypeOf<string>();
    expectTypeOf<RunEvent['payload']>().toEqualTypeOf<Readonly<Record<string, unknown>>>();
  });
});

// ---------------------------------------------------------------------------------------
// The runtime side: each payload type as a table of field checks. The table's shape is tied
// to the types: every declared field is listed, marked optional exactly when it is, with a
// check whose type guard matches the field's type; so the types and this table cannot drift.
// ---------------------------------------------------------------------------------------

type Check<T> = (value: unknown) => value is T;
type FieldTable<P> = {
  readonly [K in keyof P]-?: {
    readonly optional: {} extends Pick<P, K> ? true : false;
    readonly check: Check<Exclude<P[K], undefined>>;
  };
};

const isText = (value: unknown): value is string => typeof value === 'string';
const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
const isFlag = (value: unknown): value is boolean => typeof value === 'boolean';
const oneOf =
  <T extends string>(...values: T[]): Check<T> =>
  (value): value is T =>
    values.includes(value as T);
const listOf =
  <T>(item: Check<T>): Check<readonly T[]> =>
  (value): value is readonly T[] =>
    Array.isArray(value) && value.every((entry) => item(entry));
const recordOf =
  <S extends Record<string, Check<unknown>>>(shape: S): Check<{ readonly [K in keyof S]: CheckedBy<S[K]> }> =>
  (value): value is { readonly [K in keyof S]: CheckedBy<S[K]> } =>
    typeof value === 'object' &&
    value !== null &&
    Object.keys(value).sort().join() === Object.keys(shape).sort().join() &&
    Object.entries(shape).every(([key, check]) => check((value as Record<string, unknown>)[key]));
type CheckedBy<C> = C extends Check<infer T> ? T : never;

const required = <T>(check: Check<T>) => ({ optional: false as const, check });
const optional = <T>(check: Check<T>) => ({ optional: true as const, check });
const common = { schema_version: required(oneOf('1')), conversation_id: required(isText) };
const stepped = { ...common, step: required(isCount) };
const terminal = { ...common, step: optional(isCount) };

const FIELDS: { readonly [T in RunEventType]: FieldTable<RunEventPayloads[T]> } = {
  'run.started': {
    ...stepped,
    prompt: required(isText),
    model: required(isText),
    tenant_id: required(isText),
    agent_id: required(isText),
  },
  'llm.request.snapshot': {
    ...stepped,
    prompt_hash: required(isText),
    tool_names: required(listOf(isText)),
    memory_snippet: optional(isText),
  },
  'assistant.message': {
    ...stepped,
    content: required(isText),
    final: required(isFlag),
    tool_calls: required(listOf(recordOf({ id: isText, name: isText }))),
  },
  'tool.call.started': { ...stepped, tool_call_id: required(isText), name: required(isText) },
  'tool.call.completed': { ...stepped, tool_call_id: required(isText), name: required(isText), ok: required(isFlag) },
  'memory.observe.started': stepped,
  'memory.observe.completed': {
    ...stepped,
    observed: required(isFlag),
    reflected: required(isFlag),
    observation: required(isCount),
  },
  'memory.observe.failed': { ...stepped, error: required(isText) },
  'memory.snippet.failed': {
    ...stepped,
    source: required(oneOf('working_memory', 'observational_memory')),
    error: required(isText),
  },
  'memory.reflection.completed': {
    ...stepped,
    trigger: required(oneOf('auto', 'reflect_now')),
    operation_id: required(isText),
  },
  'memory.operation.dead': {
    ...stepped,
    operation_id: required(isText),
    operation_type: required(isText),
    error: required(isText),
    attempts: required(isCount),
  },
  'memory.working_memory.set': {
    ...stepped,
    key: required(isText),
    bytes: required(isCount),
    expires_at: optional(isText),
  },
  'memory.working_memory.deleted': { ...stepped, key: required(isText) },
  'memory.message.skipped': {
    ...stepped,
    operation_id: required(isText),
    message_seq: required(isCount),
    message_key: required(isText),
    error: required(isText),
  },
  'run.step.completed': stepped,
  'run.completed': {
    ...terminal,
    output: required(isText),
    steps: required(isCount),
    usage: required(recordOf({ input_tokens: isCount, output_tokens: isCount })),
  },
  'run.failed': { ...terminal, error: required(recordOf({ code: isText, message: isText })) },
  'run.cancelled': terminal,
};

/** What is wrong with `event`'s payload against its type's table: unknown type, missing, extra or ill-kinded fields. */
function payloadProblems(event: RunEvent): string[] {
  if (!(event.type in FIELDS)) return [`${event.type}: not a documented event type`];
  const table = FIELDS[event.type as RunEventType] as Record<string, { optional: boolean; check: Check<unknown> }>;
  const problems: string[] = [];
  for (const [field, { optional: isOptional, check }] of Object.entries(table)) {
    const value = event.payload[field];
    if (value === undefined) {
      if (!isOptional) problems.push(`${event.type}.${field}: missing`);
    } else if (!check(value)) problems.push(`${event.type}.${field}: ${JSON.stringify(value)} is not of its type`);
  }
  for (const field of Object.keys(event.payload))
    if (!(field in table)) problems.push(`${event.type}.${field}: not declared`);
  return problems;
}

const ids = { tenantId: 'tenant-e', conversationId: 'conv-events', agentId: 'agent-e' };

/** A runner over in-memory stores (the run store redacting, as the server's), memory observing every step. */
function harness(
  options: {
    memoryModel?: MockLanguageModel;
    memory?: Partial<ObservationalMemoryOptions>;
    workingStore?: MemoryStore;
    tools?: Tool[];
    runner?: Partial<AgentRunnerOptions>;
  } = {},
) {
  const store = createInMemoryStore();
  const agentModel = createMockLanguageModel('done');
  const memoryModel = options.memoryModel ?? createMockLanguageModel('IMPORTANCE:0.9\nThe user likes tabs.');
  const observationalMemory = createObservationalMemory({
    store,
    observer: createModelObserver(memoryModel),
    reflector: createModelReflector(memoryModel),
    defaultEnabled: true,
    defaults: { observeMinTokens: 1, reflectThresholdTokens: 2 ** 30 },
    ...options.memory,
  });
  const workingMemory = createWorkingMemory({ store: options.workingStore ?? store });
  const runStore = createRedactingRunStore(createInMemoryRunStore());
  const runner = createAgentRunner({
    model: agentModel,
    observationalMemory,
    workingMemory,
    runStore,
    memoryTools: [createWorkingMemoryTool(workingMemory)],
    tools: options.tools ?? [],
    workspace: WORKSPACE,
    ...options.runner,
  });
  /** Starts a run, waits for its end, and resolves its stored events and those `onEvent` saw. */
  const run = async (prompt: string, during?: (runId: string) => Promise<void>) => {
    const seen: RunEvent[] = [];
    const started = await runner.start({ ...ids, prompt, maxSteps: 3 }, { onEvent: (event) => seen.push(event) });
    await during?.(started.runId);
    await runner.wait(started.runId);
    return [...(await runStore.listEvents(started.runId, -1)), ...seen];
  };
  return { agentModel, run, runner };
}

const call = (id: string, name: string, input: Record<string, unknown>) => ({
  toolCalls: [{ id, name, arguments: JSON.stringify(input) }],
});

/** Runs that between them make every documented event type; resolves all their events. */
async function eventsOfRuns(): Promise<RunEvent[]> {
  const events: RunEvent[] = [];

  // Completed: a snapshot per turn, tool calls setting and deleting working memory, an
  // observation each step with the reflection after it.
  const reflecting = createMockLanguageModel((options) =>
    options.messages[0]?.content.includes('structured reflection')
      ? 'SUMMARY:\nThe user likes tabs.'
      : 'IMPORTANCE:0.9\nThe user likes tabs.',
  );
  const completed = harness({
    memoryModel: reflecting,
    memory: { defaults: { observeMinTokens: 1, reflectThresholdTokens: 1 } },
    runner: { forensics: { captureRequestEnvelope: true, snapshotMemorySnippet: true } },
  });
  completed.agentModel.enqueue(
    call('c1', 'working_memory', { action: 'set', key: 'plan', value: { step: 1 }, ttl_seconds: 60 }),
    call('c2', 'working_memory', { action: 'delete', key: 'plan' }),
    'I like tabs too.',
  );
  events.push(...(await completed.run('I like tabs.')));

  // Failed at max_steps, with a snippet that cannot be built (its store is disposed).
  const broken = createInMemoryStore();
  await broken.dispose();
  const failed = harness({ workingStore: broken, memory: { defaultEnabled: false } });
  failed.agentModel.enqueue(...[1, 2, 3].map((index) => call(`f${index}`, 'missing_tool', {})));
  events.push(...(await failed.run('loop forever')));

  // A memory model that always fails: the observation fails and its operation is parked dead.
  const crashing = harness({
    memoryModel: createMockLanguageModel(new Error('observer keeps crashing')),
    memory: { maxOperationAttempts: 1 },
  });
  events.push(...(await crashing.run('hello')));

  // A memory model that refuses the message: it is skipped.
  const refusing = harness({
    memoryModel: createMockLanguageModel(
      new ModelCallError({
        message: 'Invalid prompt: your prompt was flagged as potentially violating our usage policy.',
        statusCode: 400,
      }),
    ),
  });
  events.push(...(await refusing.run('something flagged')));

  // Cancelled while a tool runs.
  let entered = (): void => undefined;
  const inTool = new Promise<void>((resolve) => (entered = resolve));
  let release = (): void => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  const slow = defineTool({
    name: 'slow_step',
    description: 'Takes until released.',
    inputSchema: z.object({}),
    execute: async () => {
      entered();
      await released;
      return { done: true };
    },
  });
  const cancelled = harness({ tools: [slow], memory: { defaultEnabled: false } });
  cancelled.agentModel.enqueue(call('s1', 'slow_step', {}));
  events.push(
    ...(await cancelled.run('take your time', async (runId) => {
      await inTool;
      const cancelling = cancelled.runner.cancel(runId);
      release();
      await cancelling;
    })),
  );
  return events;
}

describe('run event types: the payloads real runs emit', () => {
  it('every event a run stores or hands to onEvent has exactly the fields its type declares', async () => {
    const events = await eventsOfRuns();
    expect([...new Set(events.map((event) => event.type))].sort()).toEqual(Object.keys(FIELDS).sort());
    expect(events.flatMap(payloadProblems)).toEqual([]);
    // The optional fields were seen too, so their checks ran.
    const set = events.find((event) => isRunEvent(event, 'memory.working_memory.set'));
    expect(set && isRunEvent(set, 'memory.working_memory.set') ? set.payload.expires_at : undefined).toEqual(
      expect.any(String),
    );
    const snapshot = events.find((event) => event.type === 'llm.request.snapshot');
    expect(snapshot?.payload['memory_snippet']).toEqual(expect.any(String));
  });

  it('isRunEvent answers by type and refuses what is not an event', () => {
    const event = { type: 'run.cancelled', payload: { schema_version: '1', conversation_id: 'c' } };
    expect(isRunEvent(event, 'run.cancelled')).toBe(true);
    expect(isRunEvent(event, 'run.failed')).toBe(false);
    expect(isRunEvent({ type: 'run.cancelled', payload: null }, 'run.cancelled')).toBe(false);
    expect(isRunEvent(null as never, 'run.cancelled')).toBe(false);
  });
});
