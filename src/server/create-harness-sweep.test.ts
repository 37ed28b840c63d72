/**
 * createHarness's maintenance sweep deletes the rows of expired working-memory entries: an
 * entry set with a time to live leaves the SQLite file (and its log) within a sweep of its
 * expiry, with no further write to its scope.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { loadConfig } from '../config/load-config.js';
import { createHarness } from './create-harness.js';
import type { Harness } from './create-harness.js';

const roots: string[] = [];
const harnesses: Harness[] = [];

afterEach(async () => {
  for (const harness of harnesses.splice(0)) await harness.dispose();
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

const SECRET = '12 Secret Lane, Springfield';

/** Polls `done` every 20 ms (a sweep runs every 20 ms here) until it holds or 10 s have passed. */
async function until(done: () => boolean | Promise<boolean>): Promise<void> {
  for (const deadline = Date.now() + 10_000; !(await done()) && Date.now() < deadline;)
    await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('createHarness: the maintenance sweep and expired working memory', () => {
  it("deletes an expired entry's row from the SQLite file within a sweep, with no write to its scope", async () => {
    const root = mkdtempSync(join(tmpdir(), 'hm-harness-sweep-'));
    roots.push(root);
    const env = { HARNESS_WORKSPACE: root, HARNESS_MEMORY_ENABLED: 'false', HARNESS_MEMORY_LLM_PROVIDER: 'nope' };
    const config = loadConfig({ env, cwd: root, homeDir: join(root, 'home') });
    const harness = await createHarness({
      config,
      env,
      agentModel: createMockLanguageModel({ text: 'ok' }),
      runSweepMs: 20,
    });
    harnesses.push(harness);
    const scope = { conversationId: 'c1' };
    await harness.workingMemory.set(scope, 'keep', 'kept');
    await harness.workingMemory.set(scope, 'home_address', SECRET, { ttlSeconds: 1 });
    const path = config.memory.sqlitePath;
    const holds = (file: string) => existsSync(file) && readFileSync(file).includes(SECRET);
    expect(holds(path) || holds(`${path}-wal`)).toBe(true);
    const db = new Database(path, { readonly: true });
    try {
      const keys = () => db.prepare('SELECT entry_key FROM working_memory_entries ORDER BY entry_key').pluck().all();
      expect(keys()).toEqual(['home_address', 'keep']);
      await until(async () => !(await harness.workingMemory.get(scope, 'home_address')).found);
      await until(() => keys().length === 1);
      expect(keys()).toEqual(['keep']);
      expect(db.prepare('SELECT entry_count, earliest_expiry FROM working_memory_versions').raw().all()).toEqual([
        [1, null],
      ]);
    } finally {
      db.close();
    }
    // Nor is the value left in the log: it is emptied after the purge.
    await until(() => !holds(`${path}-wal`));
    expect(holds(`${path}-wal`)).toBe(false);
    expect(holds(path)).toBe(false);
    expect((await harness.workingMemory.list(scope)).entries).toEqual({ keep: '"kept"' });
  });
});
