/**
 * Bench fixtures shared by the storage and Postgres figures: scopes filled through the
 * store port directly (no model), the way a worker would fill them.
 */
import { generateId } from '../src/core/ids.js';
import { memoryIdOf } from '../src/core/scope.js';
import type { Scope } from '../src/core/scope.js';
import { DEFAULT_WORKING_MEMORY_LIMITS } from '../src/core/working-memory.js';
import type { MemoryStore, NewObservation } from '../src/storage/store.js';
import { syntheticObservations } from './snippet.js';

const LEASE = { leaseOwner: 'bench-builder', leaseMs: 600_000 };
/** Observations per operation when building a scope through the store. */
const BUILD_BATCH = 100;

let messageCounter = 0;

/** Stores `observations` in one observe operation, driving the store directly (no model). */
export async function addObservations(
  store: MemoryStore,
  scope: Scope,
  observations: readonly NewObservation[],
): Promise<void> {
  const memoryId = memoryIdOf(scope);
  const appended = await store.appendMessages({
    scope,
    memoryId,
    messages: [
      {
        messageKey: `bench-${++messageCounter}`,
        role: 'user',
        name: '',
        toolCallId: '',
        content: 'a turn of the bench',
        tokenCount: 5,
      },
    ],
  });
  const queued = await store.enqueueOperation({
    operationId: generateId('op'),
    scope,
    memoryId,
    operationType: 'observe',
    payload: { messages: 1 },
    runId: 'bench',
    toolCallId: 'bench',
  });
  const claimed = await store.claimOperation({ memoryId, ...LEASE });
  if (claimed?.operationId !== queued.operationId)
    throw new Error(`bench: expected to claim ${queued.operationId}, got ${claimed?.operationId ?? 'nothing'}`);
  await store.completeObservation({
    operationId: queued.operationId,
    memoryId: queued.memoryId,
    leaseOwner: LEASE.leaseOwner,
    observations,
    throughMessageSeq: appended.record.lastMessageSeq,
    markerIds: { start: generateId('mk'), end: generateId('mk') },
  });
}

/** The key of the bench's `index`-th working-memory entry. */
export function entryKey(index: number): string {
  return `note-${String(index).padStart(3, '0')}`;
}

function entryValue(index: number): string {
  // About 200 bytes, so 100 entries stay inside the default 32 KiB per scope.
  return JSON.stringify({
    note: `entry ${index}: ${'remember the deploy window and the reviewer '.repeat(4)}`.slice(0, 180),
    step: index,
  });
}

/** Builds a scope with `observations` observations (in operations of 100) and `entries` working-memory entries. */
export async function populateScope(
  store: MemoryStore,
  scope: Scope,
  observations: number,
  entries: number,
): Promise<void> {
  const all: NewObservation[] = syntheticObservations(observations).map(({ content, importance, tokenCount }) => ({
    content,
    importance,
    tokenCount,
  }));
  for (let start = 0; start < all.length; start += BUILD_BATCH)
    await addObservations(store, scope, all.slice(start, start + BUILD_BATCH));
  const memoryId = memoryIdOf(scope);
  for (let index = 0; index < entries; index++) {
    await store.setWorkingMemoryEntry({
      scope,
      memoryId,
      key: entryKey(index),
      valueJson: entryValue(index),
      limits: DEFAULT_WORKING_MEMORY_LIMITS,
    });
  }
}
