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
  it('answers 503 on /healthz without the file path, and logs a fault naming the file', async () => {
    const logged: string[] = [];
    const started = await startE2E({
      databaseCheckMs: 20,
      logger: { log: (record) => logged.push(JSON.stringify(record)) },
    });
    e2e = started;
    expect((await started.apiJson('/healthz')).body).toEqual({ status: 'ok', faults: 0 });
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${started.dbPath}${suffix}`, { force: true });
    const health = await healthWhenFailing(started);
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ status: 'failing', faults: 1 });
    // /healthz needs no key: the path stays in the server log.
    expect(health.body['problem']).toContain('the database file was deleted under the running server');
    expect(JSON.stringify(health.body)).not.toContain(started.dbPath);
    expect(logged.join('\n')).toContain(`the database file ${started.dbPath} was deleted while the server runs`);
  }, 30_000);

  it('says so when another file took its place', async () => {
    const started = await startE2E({ databaseCheckMs: 20 });
    e2e = started;
    renameSync(started.dbPath, `${started.dbPath}.old`);
    writeFileSync(started.dbPath, '');
    const health = await healthWhenFailing(started);
    expect(health.body['problem']).toContain('the database file was replaced under the running server');
    expect(JSON.stringify(health.body)).not.toContain(started.dbPath);
  }, 30_000);
});

describe('e2e: the SQLite write-ahead log past its alert size', () => {
  it('logs a fault and /healthz carries a warning, still 200', async () => {
    const logged: string[] = [];
    const started = await startE2E({
      databaseCheckMs: 20,
      env: { HARNESS_MEMORY_SQLITE_WAL_ALERT_MB: '1' },
      logger: { log: (record) => logged.push(JSON.stringify(record)) },
    });
    e2e = started;
    expect((await started.apiJson('/healthz')).body).toEqual({ status: 'ok', faults: 0 });
    // The catalogue's B14: a reader keeps an old snapshot open while 2 MiB are written, so no
    // checkpoint can reuse or cut back the log.
    const reader = new Database(started.dbPath, { readonly: true });
    const writer = new Database(started.dbPath);
    try {
      reader.exec('BEGIN');
      reader.prepare('SELECT COUNT(*) FROM om_memory_records').get();
      writer.exec('CREATE TABLE padding (bytes BLOB)');
      writer.prepare('INSERT INTO padding VALUES (?)').run(Buffer.alloc(2 * 1024 * 1024, 7));
      // Polled until the watch has looked again; the test's timeout bounds the wait.
      let health = await started.apiJson('/healthz');
      while (health.body['warning'] === undefined) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        health = await started.apiJson('/healthz');
      }
      expect(health.status).toBe(200);
      expect(health.body).toMatchObject({ status: 'ok', faults: 1 });
      expect(health.body['warning']).toMatch(
        /^the write-ahead log is \d+ MiB, past its 1 MiB alert size; see the server log$/,
      );
      expect(logged.join('\n')).toContain(`${started.dbPath}-wal) is`);
    } finally {
      reader.exec('COMMIT');
      reader.close();
      writer.close();
    }
  }, 30_000);
});
