import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createWorkingMemory } from '../../src/memory/working-memory.js';
import { createSqliteRunStore } from '../../src/storage/sqlite/sqlite-run-store.js';
import { createSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import { jsonLine, REPO_ROOT } from './durability-support.js';

const workspace = mkdtempSync(join(tmpdir(), 'hm-full-disk-'));
afterAll(() => rmSync(workspace, { recursive: true, force: true }));

/** Runs the child with a file size limit of `kib` KiB, as a full disk would stop it. */
function runLimited(dbPath: string, kib: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const script = fileURLToPath(new URL('./full-disk-child.ts', import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', `ulimit -f ${kib} && exec "$0" --import tsx "$1"`, process.execPath, script], {
      cwd: REPO_ROOT,
      env: { ...process.env, DB_PATH: dbPath },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

interface ChildReport {
  resolved: { runs: string[]; events: string[]; updates: string[]; entries: string[] };
  codes: string[];
}

describe('SQLite on a file that can no longer grow', () => {
  it('rejects every write it could not store (STORE_FAILED) and loses none it reported stored', async () => {
    const dbPath = join(workspace, 'state.db');
    const result = await runLimited(dbPath, 2_048);
    expect(result.stderr).not.toMatch(/TypeError|ReferenceError/);
    const report = jsonLine<ChildReport>(result.stdout);
    // The limit was reached: some writes failed, as storage errors.
    expect(report.codes.length).toBeGreaterThan(0);
    expect(new Set(report.codes)).toEqual(new Set(['STORE_FAILED']));
    expect(report.resolved.runs.length).toBeGreaterThan(0);

    // Read back without the limit: everything reported stored is there, as reported.
    const runStore = createSqliteRunStore({ path: dbPath, checkpoints: 'inline' });
    const store = createSqliteStore({ path: dbPath, checkpoints: 'inline' });
    try {
      for (const runId of report.resolved.runs) expect(await runStore.getRun(runId), runId).toBeDefined();
      for (const runId of report.resolved.updates)
        expect((await runStore.getRun(runId))?.status, runId).toBe('completed');
      for (const id of report.resolved.events) {
        const [runId] = id.split(':');
        const ids = (await runStore.listEvents(runId ?? '', -1)).map((event) => event.id);
        expect(ids, id).toContain(id);
      }
      const workingMemory = createWorkingMemory({ store });
      const scope = { tenantId: 't', conversationId: 'c', agentId: 'a' };
      for (const key of report.resolved.entries) expect((await workingMemory.get(scope, key)).found, key).toBe(true);
    } finally {
      await store.dispose();
      await runStore.dispose();
    }
  }, 120_000);
});
