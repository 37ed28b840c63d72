import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { startE2E } from './e2e-harness.js';
import type { E2E } from './e2e-harness.js';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.close();
  e2e = undefined;
});

const SCOPE = '/v1/memory/default/kept-memory/default';

/**
 * Makes every operation and marker look written `days` earlier, through a connection of its own
 * (another process would do the same), so that the operations' and their markers' times still
 * agree.
 */
function age(dbPath: string, days: number): void {
  const db = new Database(dbPath);
  try {
    const shift = `strftime('%Y-%m-%dT%H:%M:%fZ', updated_at, '-${days} days')`;
    db.prepare(`UPDATE om_operation_log SET created_at = ${shift}, updated_at = ${shift}`).run();
    db.prepare(`UPDATE om_markers SET created_at = strftime('%Y-%m-%dT%H:%M:%fZ', created_at, '-${days} days')`).run();
  } finally {
    db.close();
  }
}

describe('e2e: [memory] operation_retention_days', () => {
  it("deletes settled operations and their markers past the age, keeping each scope's newest and its memory", async () => {
    const started = await startE2E({ env: { HARNESS_MEMORY_OPERATION_RETENTION_DAYS: '7' }, runSweepMs: 20 });
    e2e = started;
    for (const prompt of ['I take my coffee black.', 'I live in Lisbon.', 'I work nights.'])
      await started.events(await started.startRun({ prompt, conversation_id: 'kept-memory' }));
    // The runs' observations are applied (no operation queued or processing).
    const settled = async () => (await started.apiJson(SCOPE)).body['status']?.['pending_operations'] === 0;
    while (!(await settled())) await new Promise((resolve) => setTimeout(resolve, 20));
    const before = await started.apiJson(SCOPE);
    expect(before.body['observations'].length).toBeGreaterThanOrEqual(3);
    expect(started.countRows('om_operation_log')).toBeGreaterThanOrEqual(3);
    expect(started.countRows('om_markers')).toBeGreaterThan(0);
    age(started.dbPath, 8);
    // Polled until a sweep deleted them; the test's timeout bounds the wait.
    while (started.countRows('om_operation_log') > 1) await new Promise((resolve) => setTimeout(resolve, 20));
    const after = await started.apiJson(SCOPE);
    expect(after.body['observations']).toEqual(before.body['observations']);
    expect(after.body['snippets']['observational_memory']).toContain('<observational-memory>');
    expect(after.body['snippets']).toEqual(before.body['snippets']);
    const operations = await started.apiJson(`${SCOPE}/operations`);
    expect(operations.body['items']).toHaveLength(1);
    // The newest's markers are kept; the others went with their operations.
    const newest = operations.body['items'][0]['operation_id'] as string;
    const db = new Database(started.dbPath, { readonly: true });
    try {
      const cycles = db.prepare('SELECT DISTINCT cycle_id FROM om_markers').pluck().all();
      expect(cycles.filter((cycle) => cycle !== newest)).toEqual([]);
    } finally {
      db.close();
    }
    // Memory goes on after it: another run observes.
    await started.events(await started.startRun({ prompt: 'I keep a cat.', conversation_id: 'kept-memory' }));
    while (!(await settled())) await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await started.apiJson(SCOPE)).body['observations'].length).toBeGreaterThan(
      before.body['observations'].length,
    );
  }, 30_000);
});
