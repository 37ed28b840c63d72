/**
 * Child of postgres-connection-loss.test.ts: a memory-store transaction (a forget waiting for
 * its scope's lock) loses its connection, as in a server restart; the process must live on.
 * Env: HM_PG_URL, HM_PG_SCHEMA. Prints one JSON line: how the forget ended, and a read after.
 */
import pg from 'pg';
import { memoryIdOf, resolveScope } from '../../src/core/scope.js';
import { HarnessMemoryError } from '../../src/core/errors.js';
import { scopeLockClass } from '../../src/storage/postgres/postgres-connection.js';
import { createPostgresStore } from '../../src/storage/postgres/index.js';

const schema = process.env.HM_PG_SCHEMA ?? '';
const url = new URL(process.env.HM_PG_URL ?? '');
const application = `${schema}_store`;
url.searchParams.set('application_name', application);
const store = await createPostgresStore({ connectionString: url.toString(), schema, max: 2 });
const admin = new pg.Client({ connectionString: process.env.HM_PG_URL });
await admin.connect();
const memoryId = memoryIdOf(resolveScope({ tenantId: 'acme', conversationId: 'restart' }));

// Another replica holds the scope's lock, so the forget waits inside its transaction.
await admin.query('BEGIN');
await admin.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [scopeLockClass(schema, 'memory'), memoryId]);
const forgetting = store.forget(memoryId).then(
  () => 'resolved',
  (error: unknown) => (HarnessMemoryError.isInstance(error) ? error.code : String(error)),
);
const waitingBackend = async (): Promise<number | undefined> => {
  const { rows } = await admin.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
    [application],
  );
  return rows[0]?.pid;
};
let pid = await waitingBackend();
while (pid === undefined) {
  await new Promise<void>((resolve) => setImmediate(resolve));
  pid = await waitingBackend();
}
await admin.query('SELECT pg_terminate_backend($1)', [pid]);
const forget = await forgetting;
await admin.query('ROLLBACK');
const after = await store.getRecord(memoryId).then(
  () => 'ok',
  (error: unknown) => String(error),
);
console.log(JSON.stringify({ forget, after }));
await store.dispose();
await admin.end();
