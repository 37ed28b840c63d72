/**
 * A scope holding one dead operation: one stored message, and an observe operation
 * claimed and parked as `dead`, as the worker leaves one that used up its attempts.
 */
import { memoryIdOf } from '../../src/core/scope.js';
import type { Scope } from '../../src/core/scope.js';
import type { MemoryStore } from '../../src/storage/store.js';

/** Stores message `m1` in `scope` and the dead observe operation `op-dead` with `errorText`. */
export async function storeDeadOperation(store: MemoryStore, scope: Scope, errorText: string): Promise<void> {
  const memoryId = memoryIdOf(scope);
  await store.appendMessages({
    scope,
    memoryId,
    messages: [{ messageKey: 'm1', role: 'user', name: '', toolCallId: '', content: 'hello', tokenCount: 2 }],
  });
  await store.enqueueOperation({
    operationId: 'op-dead',
    scope,
    memoryId,
    operationType: 'observe',
    payload: {},
    runId: 'run-1',
    toolCallId: 'system',
  });
  await store.claimOperation({ memoryId, leaseOwner: 'w', leaseMs: 60_000 });
  await store.markOperationDead({ operationId: 'op-dead', memoryId, leaseOwner: 'w', errorText });
}
