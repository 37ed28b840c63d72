/**
 * Poison operations: an operation that keeps crashing its process, or keeps failing in a
 * way worth retrying, is parked as `dead` after `maxOperationAttempts`, stops blocking its
 * scope, loses no message, and can be retried by hand.
 */
import { describe, expect, it } from 'vitest';
import { messages, scriptedObserver } from '../../test/support/scripted-models.js';
import { HarnessMemoryError, ModelCallError } from '../core/errors.js';
import { memoryIdOf } from '../core/scope.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createObservationalMemory } from './observational-memory.js';
import type { ObservationalMemoryEvent, ObservationalMemoryOptions } from './observational-memory.js';

const scope = { tenantId: 'tenant-a', conversationId: 'conv-poison', agentId: 'agent-x' };
const memoryId = memoryIdOf(scope);
const isCode = (code: string) => (error: unknown) => HarnessMemoryError.isInstance(error) && error.code === code;

function setup(options: Partial<ObservationalMemoryOptions> = {}) {
  let clock = Date.parse('2026-01-01T00:00:00.000Z');
  const now = () => new Date(clock);
  const store = createInMemoryStore({ now });
  const observer = scriptedObserver(
    (input) => `IMPORTANCE:0.5\nobserved messages ${input.messages.map((message) => message.seq).join(',')}`,
  );
  const events: ObservationalMemoryEvent[] = [];
  const memory = createObservationalMemory({
    store,
    observer,
    defaultEnabled: true,
    defaults: { observeMinTokens: 1 },
    leaseMs: 1000,
    maxOperationAttempts: 3,
    now,
    onEvent: (event) => events.push(event),
    ...options,
  });
  return { store, observer, memory, events, advance: (ms: number) => void (clock += ms) };
}

describe('dead operations: a crash loop', () => {
  it('parks an operation whose attempts all ended in a crash, runs later ones, and loses no message', async () => {
    const { store, observer, memory, events, advance } = setup();
    await store.appendMessages({
      scope,
      memoryId,
      messages: messages(0, 2).map((message, index) => ({
        messageKey: message.id,
        role: message.role,
        name: '',
        toolCallId: '',
        content: message.content,
        tokenCount: 10 + index,
      })),
    });
    const poison = await store.enqueueOperation({
      operationId: 'op-poison',
      scope,
      memoryId,
      operationType: 'observe',
      payload: {},
      runId: 'run-1',
      toolCallId: 'system',
    });
    // Three processes claim it and die holding the lease; each time the stale check requeues it.
    for (let attempt = 1; attempt <= 3; attempt++) {
      expect((await store.claimOperation({ leaseOwner: `crashed-${attempt}`, leaseMs: 1000 }))?.attempt).toBe(attempt);
      advance(1500);
      expect(await store.requeueStaleOperations({ graceSeconds: 0 })).toBe(1);
    }

    await memory.drain(scope);
    expect(observer.calls).toHaveLength(0);
    const parked = (await store.listOperations(memoryId)).find(
      (operation) => operation.operationId === poison.operationId,
    );
    expect(parked).toMatchObject({
      status: 'dead',
      errorText: expect.stringMatching(
        /^gave up after 3 attempts that never finished .*requeued after stale processing operation$/,
      ),
    });
    expect(events).toContainEqual({
      type: 'memory.operation.dead',
      scope,
      runId: 'run-1',
      operationId: 'op-poison',
      operationType: 'observe',
      error: parked!.errorText,
      attempts: 3,
    });
    expect(await memory.status(scope)).toMatchObject({
      deadOperations: 1,
      pendingOperations: 0,
      lastObservedMessageIndex: -1,
    });

    // The scope goes on: the next observe covers the dead operation's messages too.
    const later = await memory.observe({ scope, runId: 'run-2', messages: messages(2, 1) });
    expect(later).toMatchObject({ status: 'applied', observed: true });
    expect(observer.calls.map((call) => call.messages.map((message) => message.seq))).toEqual([[1, 2, 3]]);
    expect((await store.listUnobservedMessages(memoryId, 100)).length).toBe(0);

    // Retried by hand, it runs again with fresh attempts (and finds nothing left to observe).
    const retried = await memory.retryOperation(scope, 'op-poison');
    expect(retried).toMatchObject({ status: 'queued', attempt: 0 });
    expect((await memory.status(scope)).deadOperations).toBe(0);
    await memory.drain(scope);
    expect(
      (await store.listOperations(memoryId)).find((operation) => operation.operationId === 'op-poison'),
    ).toMatchObject({ status: 'applied', attempt: 1 });
  });

  it('refuses to retry an unknown operation or one that is not dead', async () => {
    const { memory, store } = setup();
    const result = await memory.observe({ scope, runId: 'run-1', messages: messages(0, 1) });
    await expect(memory.retryOperation(scope, 'op-missing')).rejects.toSatisfy(isCode('OPERATION_NOT_FOUND'));
    // The CLI and the HTTP API show this message too: it names where each lists operations.
    await expect(memory.retryOperation(scope, 'op-missing')).rejects.toThrow(
      /`harness memory show`, GET …\/operations/u,
    );
    await expect(memory.retryOperation(scope, '')).rejects.toSatisfy(isCode('OPERATION_NOT_FOUND'));
    await expect(memory.retryOperation(scope, result.operationId!)).rejects.toSatisfy(
      (error: unknown) =>
        isCode('OPERATION_NOT_DEAD')(error) && (error as HarnessMemoryError).data['status'] === 'applied',
    );
    // Another scope's operation is unknown here.
    await expect(memory.retryOperation({ ...scope, conversationId: 'other' }, result.operationId!)).rejects.toSatisfy(
      isCode('OPERATION_NOT_FOUND'),
    );
    expect((await store.listOperations(memoryId)).map((operation) => operation.status)).toEqual(['applied']);
  });
});

describe('dead operations: retryable failures', () => {
  it('parks the operation once its retryable failures use up the attempts, and the scope keeps observing', async () => {
    const down = new ModelCallError({ message: 'upstream 503 for sk-proj-AAAAAAAAAAAAAAAAAAAAAAAA', statusCode: 503 });
    const observer = scriptedObserver(down, down, 'IMPORTANCE:0.9\nUser prefers tabs');
    const { store, memory, events } = setup({
      observer,
      maxOperationAttempts: 2,
      retryDelayMs: 1,
      now: () => new Date(),
    });
    await expect(memory.observe({ scope, runId: 'run-1', messages: messages(0, 1) })).rejects.toBe(down);
    await memory.drain(scope);
    const [first] = await store.listOperations(memoryId);
    // The stored error is redacted like everything else the store keeps.
    expect(first).toMatchObject({
      status: 'dead',
      attempt: 2,
      errorText: 'gave up after 2 attempts: [harness-memory] [llm] upstream 503 for [REDACTED:openai_key]',
    });
    const operationEvents = events.filter((event) => event.type.startsWith('memory.operation.'));
    expect(operationEvents.map((event) => [event.type, 'willRetry' in event ? event.willRetry : undefined])).toEqual([
      ['memory.operation.failed', true],
      ['memory.operation.failed', false],
      ['memory.operation.dead', undefined],
    ]);
    const later = await memory.observe({ scope, runId: 'run-2', messages: messages(1, 1) });
    expect(later.observed).toBe(true);
    expect(observer.calls.at(-1)?.messages.map((message) => message.seq)).toEqual([1, 2]);
  });

  it('keeps working when an event listener throws', async () => {
    const { memory } = setup();
    memory.subscribe(() => {
      throw new Error('listener bug');
    });
    const result = await memory.observe({ scope, runId: 'run-1', messages: messages(0, 1) });
    expect(result.observed).toBe(true);
    await expect(memory.reflectNow(scope)).rejects.toSatisfy(isCode('MODEL_NOT_CONFIGURED'));
    expect((await memory.status(scope)).pendingOperations).toBe(0);
  });
});
