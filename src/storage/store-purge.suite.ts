/**
 * The conformance cases of the working-memory purge (`MemoryStore.purgeExpiredWorkingMemory`).
 * `runStoreSuite` runs them for every adapter; a store without the optional method lists them
 * in `skip`.
 */
import { expect } from 'vitest';
import { HarnessMemoryError } from '../core/errors.js';
import { memoryIdOf } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import type { MemoryStore, WorkingMemoryLimits } from './store.js';

type Case = (name: string, body: () => Promise<void>) => void;

/** Lets `ms` pass by the store's clock; `passed` tells when it has (see `runStoreSuite`). */
type LetPass = (ms: number, passed: () => Promise<boolean>) => Promise<void>;

const scopeA: Scope = { tenantId: 'tenant-a', conversationId: 'purge', agentId: 'agent' };
const scopeB: Scope = { tenantId: 'tenant-b', conversationId: 'purge', agentId: 'agent' };
const roomy: WorkingMemoryLimits = { maxEntries: 100, maxTotalBytes: 100_000 };
const BRIEF_MS = 200;

/** Registers the cases with `test`, each run against the store `current()` returns. */
export function purgeCases(test: Case, current: () => MemoryStore, letPass: LetPass): void {
  const purge = (limit: number): Promise<number> => {
    const remove = current().purgeExpiredWorkingMemory?.bind(current());
    // Optional in the port: a store without it skips these tests by name, saying so.
    expect(remove, 'purgeExpiredWorkingMemory is not implemented; list these tests in `skip`').toBeTypeOf('function');
    return remove ? remove({ limit }) : Promise.resolve(0);
  };
  const set = (scope: Scope, key: string, valueJson: string, ttlMs?: number, limits = roomy) =>
    current().setWorkingMemoryEntry({
      scope,
      memoryId: memoryIdOf(scope),
      key,
      valueJson,
      limits,
      ...(ttlMs === undefined ? {} : { ttlMs }),
    });
  const keys = async (scope: Scope) =>
    (await current().listWorkingMemoryEntries(memoryIdOf(scope))).map((entry) => entry.key);
  const version = (scope: Scope) => current().workingMemoryVersion?.(memoryIdOf(scope)) ?? Promise.resolve(0);
  /** Lets the brief entries expire, by the store's clock. */
  const expire = (entries: ReadonlyArray<readonly [Scope, string]>) =>
    letPass(BRIEF_MS, async () => {
      for (const [scope, key] of entries)
        if ((await current().getWorkingMemoryEntry(memoryIdOf(scope), key)) !== undefined) return false;
      return true;
    });
  const limitError = (limit: 'entries' | 'total_bytes', actual: number) => (error: unknown) =>
    HarnessMemoryError.isInstance(error) &&
    error.code === 'WORKING_MEMORY_LIMIT' &&
    (error.data as { limit?: string; actual?: number }).limit === limit &&
    (error.data as { actual?: number }).actual === actual;

  test('purges the rows of expired working-memory entries in every scope, keeping the unexpired', async () => {
    await set(scopeA, 'keep', '"k"');
    await set(scopeA, 'long', '"l"', 3_600_000);
    await set(scopeA, 'brief1', `"${'x'.repeat(10)}"`, BRIEF_MS);
    await set(scopeA, 'brief2', `"${'x'.repeat(10)}"`, BRIEF_MS);
    await set(scopeB, 'keep', '"k"');
    await set(scopeB, 'brief', '"b"', BRIEF_MS);
    await expire([
      [scopeA, 'brief1'],
      [scopeA, 'brief2'],
      [scopeB, 'brief'],
    ]);
    const before = [await version(scopeA), await version(scopeB)];
    expect(await purge(1_000)).toBe(3);
    expect(await purge(1_000)).toBe(0);
    expect(await keys(scopeA)).toEqual(['keep', 'long']);
    expect(await keys(scopeB)).toEqual(['keep']);
    // A snippet held for the version before is not served again.
    if (current().workingMemoryVersion) {
      expect(await version(scopeA)).not.toBe(before[0]);
      expect(await version(scopeB)).not.toBe(before[1]);
    }
    // The scope's usage is its two entries, 14 bytes: a third of 26 bytes fits 40 exactly, one
    // of 27 does not, and a fourth entry is over the count.
    const tight: WorkingMemoryLimits = { maxEntries: 3, maxTotalBytes: 40 };
    await expect(set(scopeA, 'third', `"${'t'.repeat(20)}"`, undefined, tight)).rejects.toSatisfy(
      limitError('total_bytes', 41),
    );
    await set(scopeA, 'third', `"${'t'.repeat(19)}"`, undefined, tight);
    await expect(set(scopeA, 'fourth', '"4"', undefined, tight)).rejects.toSatisfy(limitError('entries', 4));
    expect(await keys(scopeA)).toEqual(['keep', 'long', 'third']);
  });

  test('purges at most `limit` entries a call, and the rest at the next calls', async () => {
    await set(scopeA, 'keep', '"k"');
    const brief: Array<readonly [Scope, string]> = [];
    for (let index = 0; index < 5; index++) brief.push([scopeA, `a${index}`]);
    for (let index = 0; index < 3; index++) brief.push([scopeB, `b${index}`]);
    for (const [scope, key] of brief) await set(scope, key, '"v"', BRIEF_MS);
    await expire(brief);
    const counts: number[] = [];
    for (let call = 0; call < 5; call++) counts.push(await purge(2));
    expect(counts).toEqual([2, 2, 2, 2, 0]);
    expect(await keys(scopeA)).toEqual(['keep']);
    expect(await keys(scopeB)).toEqual([]);
    // Each scope's usage is what is left: `keep` (7 bytes) in A, nothing in B.
    await set(scopeA, 'n', '"v"', undefined, { maxEntries: 2, maxTotalBytes: 11 });
    await expect(set(scopeA, 'm', '"v"', undefined, { maxEntries: 3, maxTotalBytes: 11 })).rejects.toSatisfy(
      limitError('total_bytes', 15),
    );
    await expect(set(scopeA, 'm', '"v"', undefined, { maxEntries: 2, maxTotalBytes: 100 })).rejects.toSatisfy(
      limitError('entries', 3),
    );
    await set(scopeB, 'only', '"v"', undefined, { maxEntries: 1, maxTotalBytes: 7 });
    // The purged scopes expire and purge again as before.
    await set(scopeB, 'again', '"v"', BRIEF_MS);
    await expire([[scopeB, 'again']]);
    expect(await purge(1_000)).toBe(1);
    expect(await keys(scopeB)).toEqual(['only']);
  });

  test('purges nothing, and changes no version, while no entry has expired', async () => {
    await set(scopeA, 'keep', '"k"');
    await set(scopeA, 'long', '"l"', 3_600_000);
    const before = await version(scopeA);
    expect(await purge(1_000)).toBe(0);
    expect(await version(scopeA)).toBe(before);
    expect(await keys(scopeA)).toEqual(['keep', 'long']);
  });

  test('refuses a bad purge limit, naming it', async () => {
    const remove = current().purgeExpiredWorkingMemory?.bind(current());
    expect(remove, 'purgeExpiredWorkingMemory is not implemented; list this test in `skip`').toBeTypeOf('function');
    if (!remove) return;
    for (const limit of [0, 1_001, 2.5, Number.NaN, '1', undefined])
      await expect(remove({ limit } as never)).rejects.toMatchObject({
        code: 'OPTION_INVALID',
        data: { factory: 'purgeExpiredWorkingMemory', option: 'limit' },
      });
    await expect(remove(undefined as never)).rejects.toMatchObject({ code: 'OPTION_INVALID' });
  });
}
