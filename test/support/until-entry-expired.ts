/**
 * Waits, by polling, until a working-memory entry has expired by the store's own clock (a
 * database's, which a test cannot move); the deadline only keeps a broken store from hanging
 * the test.
 */
import type { MemoryStore } from '../../src/storage/store.js';

/** Resolves once `store` no longer returns the entry `key` of `memoryId`, or after 20 s. */
export async function untilEntryExpired(store: MemoryStore, memoryId: string, key: string): Promise<void> {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
    if ((await store.getWorkingMemoryEntry(memoryId, key)) === undefined) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
