import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_WORKING_MEMORY_LIMITS } from '../../core/working-memory.js';
import { memoryIdOf, resolveScope } from '../../core/scope.js';
import type { MemoryStore } from '../store.js';
import { SqliteChangeStamp } from './sqlite-change-stamp.js';
import { createSqliteStore } from './sqlite-store.js';

const scope = resolveScope({ tenantId: 'acme', conversationId: 'c1' });
const memoryId = memoryIdOf(scope);
const set = (store: MemoryStore, key: string, value: unknown) =>
  store.setWorkingMemoryEntry({
    scope,
    memoryId,
    key,
    valueJson: JSON.stringify(value),
    limits: DEFAULT_WORKING_MEMORY_LIMITS,
  });

describe('sqlite working-memory entry cache', () => {
  let directory = '';
  const opened: MemoryStore[] = [];
  const open = (path = join(directory, 'state.db')): MemoryStore => {
    const store = createSqliteStore({ path });
    opened.push(store);
    return store;
  };
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'hm-entry-cache-'));
  });
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.dispose();
    rmSync(directory, { recursive: true, force: true });
  });

  it('does not keep an entry that expires: it is gone at its expiry though nothing was committed', async () => {
    const store = open();
    const brief = await store.setWorkingMemoryEntry({
      scope,
      memoryId,
      key: 'brief',
      valueJson: '1',
      limits: DEFAULT_WORKING_MEMORY_LIMITS,
      ttlMs: 150,
    });
    expect(await store.getWorkingMemoryEntry(memoryId, 'brief')).toMatchObject({ expiresAt: brief.expiresAt });
    // Polled until the database's clock passes the expiry; a kept entry would never go.
    let entry = await store.getWorkingMemoryEntry(memoryId, 'brief');
    for (const deadline = Date.now() + 5_000; entry !== undefined && Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      entry = await store.getWorkingMemoryEntry(memoryId, 'brief');
    }
    expect(entry).toBeUndefined();
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(brief.expiresAt!));
  });

  it('sees every write another connection committed before the read, and keeps absences honest', async () => {
    const reader = open();
    const writer = open();
    expect(await reader.getWorkingMemoryEntry(memoryId, 'plan')).toBeUndefined();
    await set(writer, 'plan', { step: 1 });
    expect((await reader.getWorkingMemoryEntry(memoryId, 'plan'))?.valueJson).toBe('{"step":1}');
    for (let step = 2; step <= 20; step++) {
      await set(writer, 'plan', { step });
      expect((await reader.getWorkingMemoryEntry(memoryId, 'plan'))?.valueJson).toBe(`{"step":${step}}`);
      expect((await reader.getWorkingMemoryEntry(memoryId, 'plan'))?.valueJson).toBe(`{"step":${step}}`);
    }
    expect(await writer.deleteWorkingMemoryEntry(memoryId, 'plan')).toBe(true);
    expect(await reader.getWorkingMemoryEntry(memoryId, 'plan')).toBeUndefined();
    await writer.forget(memoryId);
    expect(await reader.getWorkingMemoryEntry(memoryId, 'plan')).toBeUndefined();
  });

  it('sees its own writes, including ones still waiting for the group commit', async () => {
    const store = open();
    await set(store, 'plan', 'a');
    expect((await store.getWorkingMemoryEntry(memoryId, 'plan'))?.valueJson).toBe('"a"');
    const pending = set(store, 'plan', 'b');
    expect((await store.getWorkingMemoryEntry(memoryId, 'plan'))?.valueJson).toBe('"b"');
    await pending;
  });

  it('works without a -shm file to read (an in-memory database)', async () => {
    const store = open(':memory:');
    await set(store, 'plan', 1);
    expect((await store.getWorkingMemoryEntry(memoryId, 'plan'))?.valueJson).toBe('1');
    await set(store, 'plan', 2);
    expect((await store.getWorkingMemoryEntry(memoryId, 'plan'))?.valueJson).toBe('2');
  });

  it('the stamp answers "changed" after every commit and when it cannot read', async () => {
    const path = join(directory, 'state.db');
    const store = open(path);
    await set(store, 'plan', 1);
    const stamp = SqliteChangeStamp.open(path);
    expect(stamp).toBeDefined();
    if (!stamp) return;
    expect(stamp.unchanged()).toBe(false);
    expect(stamp.unchanged()).toBe(true);
    await set(open(path), 'plan', 2);
    expect(stamp.unchanged()).toBe(false);
    expect(stamp.unchanged()).toBe(true);
    stamp.close();
    expect(stamp.unchanged()).toBe(false);
    expect(SqliteChangeStamp.open(join(directory, 'missing.db'))).toBeUndefined();
  });
});
