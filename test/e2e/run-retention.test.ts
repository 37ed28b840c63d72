import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { startE2E } from './e2e-harness.js';
import type { E2E } from './e2e-harness.js';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.close();
  e2e = undefined;
});

/** Makes a run look written `days` ago, through a connection of its own (another process would do the same). */
function age(dbPath: string, runId: string, days: number): void {
  const db = new Database(dbPath);
  try {
    const then = new Date(Date.now() - days * 86_400_000).toISOString();
    db.prepare('UPDATE harness_runs SET created_at = ?, updated_at = ? WHERE run_id = ?').run(then, then, runId);
  } finally {
    db.close();
  }
}

describe('e2e: [server] run_retention_days', () => {
  it('deletes a run that ended more days ago than the setting, with its events, and keeps its messages', async () => {
    const started = await startE2E({ env: { HARNESS_RUN_RETENTION_DAYS: '7' }, runSweepMs: 20 });
    e2e = started;
    const old = await started.startRun({ prompt: 'an old question', conversation_id: 'kept-history' });
    await started.events(old);
    const recent = await started.startRun({ prompt: 'a recent question', conversation_id: 'kept-history' });
    await started.events(recent);
    const messagesBefore = started.countRows('harness_conversation_messages');
    age(started.dbPath, old, 8);
    age(started.dbPath, recent, 6);
    // Polled until a sweep deleted the old run; the test's timeout bounds the wait.
    while ((await started.apiJson(`/v1/runs/${old}`)).status === 200)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await started.apiJson(`/v1/runs/${old}`)).status).toBe(404);
    expect((await started.apiJson(`/v1/runs/${recent}`)).body).toMatchObject({ status: 'completed' });
    const db = new Database(started.dbPath, { readonly: true });
    try {
      expect(db.prepare('SELECT count(*) AS n FROM harness_run_events WHERE run_id = ?').get(old)).toEqual({ n: 0 });
    } finally {
      db.close();
    }
    expect(started.countRows('harness_conversation_messages')).toBe(messagesBefore);
  }, 30_000);
});
