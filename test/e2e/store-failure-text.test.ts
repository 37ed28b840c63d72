/**
 * What a tenant reads when the server's own database fails in the memory worker: the failure
 * by its code in the operation log and the run's events, never the database's words; the
 * operator's fault log has them.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogRecord } from '../../src/server/fault-log.js';
import { eventsOf, startE2E } from './e2e-harness.js';
import type { E2E } from './e2e-harness.js';

const GENERIC = 'internal error (STORE_FAILED); see the server log';
// What the database says when it refuses: the detail only the operator may read.
const DETAIL = 'disk quota exceeded on /srv/harness/tenants.db';

let e2e: E2E;
const logged: LogRecord[] = [];

beforeAll(async () => {
  e2e = await startE2E({
    env: { HARNESS_MEMORY_MAX_OPERATION_ATTEMPTS: '1' },
    logger: { log: (record) => void logged.push(record) },
  });
  // A real SQLite failure through the real store: every new observation is refused.
  const db = new Database(e2e.dbPath);
  try {
    db.exec(
      `CREATE TRIGGER refuse_observations BEFORE INSERT ON om_observations BEGIN SELECT RAISE(ABORT, '${DETAIL}'); END`,
    );
  } finally {
    db.close();
  }
}, 60_000);

afterAll(async () => {
  await e2e?.close();
});

describe('e2e: the memory store fails while a run observes', () => {
  it('the tenant reads the code; the fault log keeps the detail', async () => {
    const runId = await e2e.startRun({ prompt: 'I prefer tabs over spaces.', conversation_id: 'store-fails' });
    const events = eventsOf(await e2e.events(runId));
    const failed = events.filter((event) => event.type === 'memory.observe.failed');
    expect(failed.map((event) => event.payload['error'])).toEqual([GENERIC]);

    const { status, body } = await e2e.apiJson('/v1/memory/default/store-fails/default/operations');
    expect(status).toBe(200);
    const observes = (body['items'] as Array<Record<string, unknown>>).filter(
      (item) => item['operation_type'] === 'observe',
    );
    expect(observes.map((item) => [item['status'], item['error']])).toEqual([['failed', GENERIC]]);
    expect(JSON.stringify(body)).not.toContain('disk quota');

    const detail = logged.filter((record) => record.event === 'fault' && JSON.stringify(record).includes(DETAIL));
    expect(detail.map((record) => record['component'])).toContain('memory-worker');
  });
});
