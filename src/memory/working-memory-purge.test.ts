/**
 * `WorkingMemory.purgeExpired`: present over a store that can purge, absent over one written
 * before the method; a purge changes the scope's version, so a snippet held for the version
 * before is not served again, whatever the service's clock says.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import type { MemoryStore } from '../storage/store.js';
import { createWorkingMemory } from './working-memory.js';

const scope = { tenantId: 't', conversationId: 'c', agentId: 'a' };

describe('working memory: purgeExpired', () => {
  it('deletes expired entries through the store, and is absent over a store without the method', async () => {
    let storeClock = Date.parse('2026-12-06T10:00:00.000Z');
    const store = createInMemoryStore({ now: () => new Date(storeClock) });
    const memory = createWorkingMemory({ store, now: () => new Date(storeClock) });
    await memory.set(scope, 'plan', 'ship it', { ttlSeconds: 1 });
    expect(await memory.purgeExpired?.({ limit: 10 })).toBe(0);
    storeClock += 1_000;
    expect(await memory.purgeExpired?.({ limit: 10 })).toBe(1);
    await expect(memory.purgeExpired?.({ limit: 0 })).rejects.toMatchObject({ code: 'OPTION_INVALID' });

    const { purgeExpiredWorkingMemory: _, ...older } = createInMemoryStore();
    expect(createWorkingMemory({ store: older as MemoryStore }).purgeExpired).toBeUndefined();
  });

  it('serves no snippet held from before a purge, when the service clock is behind the store', async () => {
    let storeClock = Date.parse('2026-12-06T10:00:00.000Z');
    const serviceClock = storeClock;
    const store = createInMemoryStore({ now: () => new Date(storeClock) });
    const memory = createWorkingMemory({ store, now: () => new Date(serviceClock) });
    await memory.set(scope, 'keep', 'kept');
    await memory.set(scope, 'plan', 'ship it', { ttlSeconds: 1 });
    expect(await memory.snippet(scope)).toContain('ship it');
    storeClock += 5_000;
    // The decision-18 limit: by its own clock the service still holds a current snippet.
    expect(await memory.snippet(scope)).toContain('ship it');
    expect(await memory.purgeExpired?.({ limit: 10 })).toBe(1);
    const snippet = await memory.snippet(scope);
    expect(snippet).not.toContain('ship it');
    expect(snippet).toContain('kept');
  });
});
