import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createPostgresTestSchemas, postgresTestUrl, recordStatements } from '../../../test/support/postgres-schema.js';
import type { PostgresTestSchemas } from '../../../test/support/postgres-schema.js';
import { createPostgresRunStore } from './postgres-run-store.js';
import { migratePostgresSchema, POSTGRES_MIGRATIONS } from './postgres-migrations.js';
import type { RunStore } from '../run-store.js';
import { newRun, runRunStoreSuite } from '../run-store.suite.js';

const url = postgresTestUrl();

describe.skipIf(!url)('postgres run store', () => {
  const connectionString = url ?? '';
  let schemas: PostgresTestSchemas;
  beforeAll(() => {
    schemas = createPostgresTestSchemas(connectionString);
  });
  afterAll(async () => {
    await schemas.dropAll();
  });

  let suiteSchema = '';
  runRunStoreSuite({
    name: 'postgres',
    // One schema for the suite, emptied after each test: its stores migrate an existing schema.
    create: () => {
      suiteSchema ||= schemas.next();
      return createPostgresRunStore({ connectionString, schema: suiteSchema, max: 4 });
    },
    cleanup: () => schemas.empty(suiteSchema),
    openPeer: () => createPostgresRunStore({ connectionString, schema: suiteSchema, max: 2 }),
  });

  describe('run store: postgres (replicas)', () => {
    const opened: RunStore[] = [];
    const pools: pg.Pool[] = [];
    let schema = '';
    afterEach(async () => {
      for (const store of opened.splice(0)) await store.dispose();
      for (const pool of pools.splice(0)) await pool.end();
      await schemas.drop(schema);
    });

    it("numbers one run's events and one conversation's messages without collisions when two replicas append at once", async () => {
      schema = schemas.next();
      const pool = new pg.Pool({ connectionString, max: 10 });
      const [first, second] = await Promise.all([
        createPostgresRunStore({ connectionString, schema }),
        createPostgresRunStore({ pool, schema }),
      ]);
      opened.push(first!, second!);
      pools.push(pool);
      const scope = { tenantId: 't', conversationId: 'c', agentId: 'a' };
      await first!.createRun({
        runId: 'run_1',
        scope,
        status: 'running',
        prompt: 'p',
        model: 'm',
        systemPrompt: '',
        maxSteps: 3,
        output: null,
        error: null,
        steps: 0,
        usage: { inputTokens: 0, outputTokens: 0 },
        parentRunId: null,
      });
      const statements = recordStatements(pool);
      // Two replicas append to one conversation at once: each append is one statement, and the
      // positions (the primary key) never collide.
      const conversation = 'conversation-1';
      await Promise.all(
        Array.from({ length: 40 }, (_, index) =>
          (index % 2 === 0 ? first! : second!).appendMessages(conversation, [
            { messageId: `m${index}`, runId: 'run_1', role: 'user', content: `message ${index}`, tokenCount: 3 },
          ]),
        ),
      );
      expect(statements).toHaveLength(20);
      expect((await first!.recentMessages(conversation, 1_000)).map((message) => message.messageId).sort()).toEqual(
        Array.from({ length: 40 }, (_, index) => `m${index}`).sort(),
      );
      statements.length = 0;
      const appended = await Promise.all(
        Array.from({ length: 40 }, (_, index) =>
          (index % 2 === 0 ? first! : second!).appendEvent('run_1', 'test.event', { index }),
        ),
      );
      expect(appended.map((event) => event.seq).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 40 }, (_, index) => index),
      );
      // One statement per event (the function), not a transaction.
      expect(statements).toHaveLength(20);
      const events = await second!.listEvents('run_1', -1);
      expect(events.map((event) => event.seq)).toEqual(Array.from({ length: 40 }, (_, index) => index));
      expect(events.every((event) => typeof event.seq === 'number' && event.timestamp.endsWith('Z'))).toBe(true);
      const failed = await second!.updateRun('run_1', {
        status: 'failed',
        error: { code: 'X', message: 'boom' },
        usage: { inputTokens: 5, outputTokens: 6 },
      });
      expect(await first!.getRun('run_1')).toEqual(failed);
      expect(failed.usage).toEqual({ inputTokens: 5, outputTokens: 6 });
    });

    it('refuses, to a replica of an older version, changes of a run that ended, in the schema itself', async () => {
      schema = schemas.next();
      const store = await createPostgresRunStore({ connectionString, schema });
      opened.push(store);
      const pool = new pg.Pool({ connectionString, max: 2 });
      pools.push(pool);
      await store.createRun({ ...newRun('run_1'), status: 'running' });
      await store.abandonStaleRun('run_1', 0, { code: 'RUN_ABANDONED', message: 'gone' });
      // The statement an older replica's run loop makes when it wakes.
      await expect(
        pool.query(`UPDATE "${schema}".harness_runs SET status = 'completed', output = 'late' WHERE run_id = 'run_1'`),
      ).rejects.toMatchObject({ code: 'HM409' });
      await store.appendEvent('run_1', 'run.failed', {});
      await expect(
        pool.query(`SELECT * FROM "${schema}".harness_append_run_event('run_1', 'run.completed', '{}'::json)`),
      ).rejects.toMatchObject({ code: 'HM409' });
      expect(await store.getRun('run_1')).toMatchObject({ status: 'failed', output: null });
      // Times are not guarded: an operator may still age a run.
      await pool.query(
        `UPDATE "${schema}".harness_runs SET updated_at = now() - interval '1 day' WHERE run_id = 'run_1'`,
      );
    });

    it('keeps no event without its run: the schema refuses one, a deleted run takes its events, and the upgrade removes those an older version left', async () => {
      schema = schemas.next();
      const pool = new pg.Pool({ connectionString, max: 2 });
      pools.push(pool);
      // The schema as version 23 left it, with an event whose run a racing sweep deleted.
      await migratePostgresSchema(
        pool,
        schema,
        POSTGRES_MIGRATIONS.filter((migration) => migration.version <= 23),
      );
      const t = `"${schema}"`;
      await pool.query(
        `INSERT INTO ${t}.harness_runs (run_id, memory_id, tenant_id, conversation_id, agent_id, status, prompt, ` +
          `model, system_prompt, max_steps, steps, input_tokens, output_tokens, created_at, updated_at) VALUES ` +
          `('run_kept', '7:default/7:default/7:default', 'default', 'default', 'default', 'completed', 'p', 'm', ` +
          `'', 4, 1, 0, 0, now(), now())`,
      );
      const event = (runId: string, seq: number) =>
        pool.query(
          `INSERT INTO ${t}.harness_run_events (run_id, seq, type, "timestamp", payload_json) ` +
            `VALUES ($1, $2, 'run.started', now(), '{}')`,
          [runId, seq],
        );
      await event('run_kept', 0);
      await event('run_swept', 0);
      await event('run_swept', 1);

      const store = await createPostgresRunStore({ connectionString, schema });
      opened.push(store);
      const events = async () =>
        (await pool.query<{ run_id: string }>(`SELECT run_id FROM ${t}.harness_run_events ORDER BY run_id, seq`)).rows;
      expect(await events()).toEqual([{ run_id: 'run_kept' }]);
      await expect(event('run_none', 0)).rejects.toMatchObject({ code: '23503' });
      // Any statement deleting a run, an operator's included, takes its events with it.
      await pool.query(`DELETE FROM ${t}.harness_runs WHERE run_id = 'run_kept'`);
      expect(await events()).toEqual([]);
    });
  });
});
