import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresTestSchemas, postgresTestUrl } from '../../../test/support/postgres-schema.js';
import { memoryIdOf, resolveScope } from '../../core/scope.js';
import { createPostgresRunStore } from './postgres-run-store.js';
import { newRun } from '../run-store.suite.js';

const url = postgresTestUrl();

/**
 * A forget of a conversation on Postgres while another connection is appending an event to one
 * of its runs: the forget waits for that append and erases what it stored, so no event is left
 * behind without its run (another replica's run could be writing at that moment).
 */
describe.skipIf(!url)('postgres run store: forget racing an event append', () => {
  const connectionString = url ?? '';
  const schemas = createPostgresTestSchemas(connectionString);
  const admin = new pg.Pool({ connectionString, max: 3 });
  afterAll(async () => {
    await schemas.dropAll();
    await admin.end();
  });

  it('leaves no event of a forgotten run, even one appended while the forget ran', async () => {
    const schema = schemas.next();
    const store = await createPostgresRunStore({ connectionString, schema, max: 2 });
    const appender = await admin.connect();
    try {
      const scope = resolveScope({ tenantId: 'acme', conversationId: 'conv-race' });
      const memoryId = memoryIdOf(scope);
      await store.createRun({ ...newRun('run-race'), scope, status: 'running' });
      await store.appendEvent('run-race', 'run.started', {});
      // Another replica's append, caught half way: its run's row is locked, its event not yet committed.
      await appender.query('BEGIN');
      const appended = await appender.query(
        `SELECT * FROM "${schema}".harness_append_run_event($1::text, $2::text, $3::json)`,
        ['run-race', 'tool.result', JSON.stringify({ output: 'the secret a tool returned' })],
      );
      expect(appended.rows).toHaveLength(1);

      const forgetting = store.forgetConversation(memoryId);
      // Wait until the forget is blocked on the append's lock (a statement of this schema's, not
      // of another test file's on the same server).
      for (;;) {
        const waiting = await admin.query<{ count: string }>(
          `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
           WHERE NOT l.granted AND a.datname = current_database() AND strpos(a.query, $1) > 0`,
          [`"${schema}".harness_runs`],
        );
        if (waiting.rows[0]?.count !== '0') break;
        await new Promise((resolve) => setImmediate(resolve));
      }
      await appender.query('COMMIT');
      await forgetting;

      const left = await admin.query(`SELECT run_id, type FROM "${schema}".harness_run_events`);
      expect(left.rows).toEqual([]);
      expect((await admin.query(`SELECT run_id FROM "${schema}".harness_runs`)).rows).toEqual([]);
      await expect(store.appendEvent('run-race', 'run.completed', {})).rejects.toMatchObject({ code: 'STORE_FAILED' });
    } finally {
      appender.release();
      await store.dispose();
    }
  });
});
