/**
 * Forgetting through the service on SQLite: after `forget(scope)`, a canary written to the
 * scope through observe (messages and the observation made from them) and working memory
 * is in neither the database file nor its write-ahead log.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createObservationalMemory } from '../../src/memory/observational-memory.js';
import { createWorkingMemory } from '../../src/memory/working-memory.js';
import { createSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import type { MemoryStore } from '../../src/storage/store.js';
import { scriptedObserver } from '../support/scripted-models.js';

const CANARY = 'CANARY_9d41e7_service_forget';
const SCOPE = { tenantId: 'tenant-f', conversationId: 'conv-forget', agentId: 'agent-x' };
const OTHER = { tenantId: 'tenant-f', conversationId: 'conv-keep', agentId: 'agent-x' };

describe('durability: forget(scope) through the service on SQLite', () => {
  let directory: string;
  let path: string;
  let store: MemoryStore | undefined;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'harness-memory-forget-'));
    path = join(directory, 'state.db');
  });
  afterEach(async () => {
    await store?.dispose();
    rmSync(directory, { recursive: true, force: true });
  });

  it('leaves the canary in neither the .db nor the -wal file', async () => {
    store = createSqliteStore({ path });
    const observer = scriptedObserver(
      (input) => `IMPORTANCE:0.9\nthe user said ${input.messages.map((message) => message.content).join(' / ')}`,
    );
    const memory = createObservationalMemory({
      store,
      observer,
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    const workingMemory = createWorkingMemory({ store });

    // Observed messages (their text is dropped once observed, the observation keeps it) ...
    await memory.observe({
      scope: SCOPE,
      runId: 'run-1',
      messages: [{ id: 'm1', role: 'user', content: `remember ${CANARY}` }],
    });
    // ... a message still waiting (observe threshold not reached yet) ...
    await memory.setEnabled(SCOPE, true, { observeMinTokens: 100_000 });
    await memory.observe({
      scope: SCOPE,
      runId: 'run-1',
      messages: [{ id: 'm2', role: 'user', content: `pending ${CANARY}` }],
    });
    // ... and working memory, key and value.
    await workingMemory.set(SCOPE, `note-${CANARY}`, { text: CANARY });
    // Another scope that must survive.
    await memory.observe({ scope: OTHER, runId: 'run-2', messages: [{ id: 'm1', role: 'user', content: 'keep me' }] });
    await workingMemory.set(OTHER, 'kept', 'yes');

    expect((await memory.inspect(SCOPE)).observations.map((item) => item.content).join('\n')).toContain(CANARY);
    const files = (): Array<{ file: string; bytes: Buffer }> =>
      [path, `${path}-wal`].filter((file) => existsSync(file)).map((file) => ({ file, bytes: readFileSync(file) }));
    // The scan finds the canary before forgetting, so its absence afterwards means something.
    expect(files().some(({ bytes }) => bytes.includes(CANARY))).toBe(true);

    await memory.forget(SCOPE);

    for (const { file, bytes } of files()) expect(bytes.includes(CANARY), file).toBe(false);
    // The truncating checkpoint emptied the WAL.
    expect(existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0).toBe(0);
    expect(await memory.snippet(SCOPE)).toBe('');
    expect((await memory.inspect(SCOPE)).observations).toEqual([]);
    expect((await workingMemory.list(SCOPE)).entries).toEqual({});
    // The other scope is untouched.
    expect((await memory.inspect(OTHER)).observations).toHaveLength(1);
    expect((await workingMemory.get(OTHER, 'kept')).found).toBe(true);

    await store.dispose();
    store = undefined;
    expect(readFileSync(path).includes(CANARY)).toBe(false);
  });
});
