import { renameSync, rmSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { startE2E } from './e2e-harness.js';
import type { E2E } from './e2e-harness.js';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.close();
  e2e = undefined;
});

async function healthWhenFailing(started: E2E): Promise<{ status: number; body: Record<string, any> }> {
  // Polled until the watch has looked again; the test's timeout bounds the wait.
  for (;;) {
    const health = await started.apiJson('/healthz');
    if (health.status !== 200) return health;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('e2e: the SQLite file deleted or replaced under a running server', () => {
  it('answers 503 on /healthz naming the deleted file, and logs a fault', async () => {
    const started = await startE2E({ databaseCheckMs: 20 });
    e2e = started;
    expect((await started.apiJson('/healthz')).body).toEqual({ status: 'ok', faults: 0 });
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${started.dbPath}${suffix}`, { force: true });
    const health = await healthWhenFailing(started);
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ status: 'failing', faults: 1 });
    expect(health.body['problem']).toContain('was deleted while the server runs');
    expect(health.body['problem']).toContain(started.dbPath);
  }, 30_000);

  it('says so when another file took its place', async () => {
    const started = await startE2E({ databaseCheckMs: 20 });
    e2e = started;
    renameSync(started.dbPath, `${started.dbPath}.old`);
    writeFileSync(started.dbPath, '');
    const health = await healthWhenFailing(started);
    expect(health.body['problem']).toContain('was replaced while the server runs');
  }, 30_000);
});

describe('e2e: the SQLite write-ahead log past its alert size', () => {
  it('logs a fault and /healthz carries a warning, still 200', async () => {
    const started = await startE2E({ databaseCheckMs: 20, env: { HARNESS_MEMORY_SQLITE_WAL_ALERT_MB: '1' } });
    e2e = started;
    expect((await started.apiJson('/healthz')).body).toEqual({ status: 'ok', faults: 0 });
    // Another connection writes 2 MiB: the log holds it until a truncating checkpoint, which
    // our worker makes only above 16 MiB.
    const db = new Database(started.dbPath);
    try {
      db.exec('CREATE TABLE padding (bytes BLOB)');
      db.prepare('INSERT INTO padding VALUES (?)').run(Buffer.alloc(2 * 1024 * 1024, 7));
    } finally {
      db.close();
    }
    // Polled until the watch has looked again; the test's timeout bounds the wait.
    let health = await started.apiJson('/healthz');
    while (health.body['warning'] === undefined) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      health = await started.apiJson('/healthz');
    }
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok', faults: 1 });
    expect(health.body['warning']).toMatch(/write-ahead log \(.*-wal\) is \d+ MiB, over the 1 MiB alert/);
  }, 30_000);
});
