import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  expectSeededSupersessionSet,
  LEGACY_OBSERVATIONS,
  LEGACY_REFLECTION,
} from '../../../test/support/legacy-reflection.js';
import { expectPendingTokensKept, pendingScopes } from '../../../test/support/pending-messages.js';
import { createPostgresTestSchemas } from '../../../test/support/postgres-schema.js';
import type { PostgresTestSchemas } from '../../../test/support/postgres-schema.js';
import { untilEntryExpired } from '../../../test/support/until-entry-expired.js';
import { postgresTestUrl, recordStatements } from '../../../test/support/postgres-schema.js';
import { HarnessMemoryError } from '../../core/errors.js';
import { createUlidGenerator } from '../../core/ids.js';
import { parseReflection } from '../../core/parse-reflection.js';
import { memoryIdOf } from '../../core/scope.js';
import type { Scope } from '../../core/scope.js';
import { entryFunctions } from './postgres-entry-functions.js';
import { migratePostgresSchema, POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION } from './postgres-migrations.js';
import { createPostgresStore } from './postgres-store.js';
import type { MemoryStore, Operation } from '../store.js';
import { runStoreSuite } from '../store.suite.js';

const url = postgresTestUrl();
const generateId = createUlidGenerator();
const scope: Scope = { tenantId: 'acme', conversationId: 'conv-1', agentId: 'agent-x' };
const memoryId = memoryIdOf(scope);
const scopeOf = (index: number): Scope => ({ tenantId: 'acme', conversationId: `conv-${index}`, agentId: 'agent-x' });
const isCode = (code: string) => (error: unknown) => HarnessMemoryError.isInstance(error) && error.code === code;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const enqueue = (store: MemoryStore, target: Scope): Promise<Operation> =>
  store.enqueueOperation({
    operationId: generateId('op'),
    scope: target,
    memoryId: memoryIdOf(target),
    operationType: 'observe',
    payload: {},
    runId: 'run-1',
    toolCallId: 'system',
  });

describe.skipIf(!url)('postgres store', () => {
  const connectionString = url ?? '';
  let schemas: PostgresTestSchemas;
  beforeAll(() => {
    schemas = createPostgresTestSchemas(connectionString);
  });
  afterAll(async () => {
    await schemas.dropAll();
  });

  let suiteSchema = '';
  runStoreSuite({
    name: 'postgres',
    // One schema for the suite, emptied after each test: its stores migrate an existing schema.
    create: () => {
      suiteSchema ||= schemas.next();
      return createPostgresStore({ connectionString, schema: suiteSchema, max: 4 });
    },
    cleanup: () => schemas.empty(suiteSchema),
  });

  describe('store: postgres (backend)', () => {
    let schema: string;
    const opened: Array<MemoryStore | pg.Pool> = [];
    const open = async (options: { max?: number } = {}): Promise<MemoryStore> => {
      const store = await createPostgresStore({ connectionString, schema, max: options.max ?? 4 });
      opened.push(store);
      return store;
    };
    const rawPool = (): pg.Pool => {
      const pool = new pg.Pool({ connectionString, max: 4 });
      opened.push(pool);
      return pool;
    };
    /** A raw pool on the test schema migrated only through `version`, as an older release left it. */
    const schemaAt = async (version: number): Promise<pg.Pool> => {
      const pool = rawPool();
      await migratePostgresSchema(
        pool,
        schema,
        POSTGRES_MIGRATIONS.filter((migration) => migration.version <= version),
      );
      return pool;
    };
    beforeAll(() => {
      schema = schemas.next();
    });
    afterEach(async () => {
      for (const handle of opened.splice(0).reverse()) await ('dispose' in handle ? handle.dispose() : handle.end());
      await schemas.drop(schema);
      schema = schemas.next();
    });

    it('answers as "before" the version a concurrent writer committed while the set waited for it', async () => {
      const store = await open();
      const limits = { maxEntries: 10, maxTotalBytes: 1_000 };
      await store.setWorkingMemoryEntry({ scope, memoryId, key: 'a', valueJson: '1', limits });
      // A writer that changes the version without the scope's lock (as a delete does), uncommitted.
      const writer = await rawPool().connect();
      try {
        await writer.query('BEGIN');
        await writer.query(`UPDATE "${schema}".working_memory_versions SET version = 777 WHERE memory_id = $1`, [
          memoryId,
        ]);
        const setting = store.setWorkingMemoryEntry({ scope, memoryId, key: 'b', valueJson: '2', limits });
        // The set is waiting for the writer's row lock.
        const waiting = async (): Promise<boolean> =>
          (
            await writer.query<{ count: string }>(
              "SELECT count(*) AS count FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1",
              [`%"${schema}".wm_set_entry%`],
            )
          ).rows[0]?.count !== '0';
        while (!(await waiting())) await new Promise<void>((resolve) => setImmediate(resolve));
        await writer.query('COMMIT');
        expect((await setting).versions?.before).toBe(777);
      } finally {
        writer.release();
      }
    });

    it("deletes expired rows in the scope's next write, by the database's clock", async () => {
      const store = await open();
      const pool = rawPool();
      const rows = async () =>
        (
          await pool.query<{ entry_key: string }>(
            `SELECT entry_key FROM "${schema}".working_memory_entries WHERE memory_id = $1 ORDER BY entry_key`,
            [memoryId],
          )
        ).rows.map((row) => row.entry_key);
      const earliest = async () =>
        (
          await pool.query<{ earliest: string | null }>(
            `SELECT to_char(earliest_expiry AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS earliest
             FROM "${schema}".working_memory_versions WHERE memory_id = $1`,
            [memoryId],
          )
        ).rows[0]?.earliest;
      const limits = { maxEntries: 10, maxTotalBytes: 1_000 };
      await store.setWorkingMemoryEntry({ scope, memoryId, key: 'keep', valueJson: '1', limits });
      expect(await earliest()).toBeNull();
      const brief = await store.setWorkingMemoryEntry({
        scope,
        memoryId,
        key: 'brief',
        valueJson: '1',
        limits,
        ttlMs: 150,
      });
      expect(await earliest()).toBe(brief.expiresAt);
      await untilEntryExpired(store, memoryId, 'brief');
      expect(await rows()).toEqual(['brief', 'keep']);
      expect(await store.deleteWorkingMemoryEntry(memoryId, 'brief')).toBe(false);
      expect(await rows()).toEqual(['keep']);
      expect(await earliest()).toBeNull();
      await store.setWorkingMemoryEntry({ scope, memoryId, key: 'brief', valueJson: '1', limits, ttlMs: 150 });
      await untilEntryExpired(store, memoryId, 'brief');
      await store.setWorkingMemoryEntry({ scope, memoryId, key: 'other', valueJson: '1', limits });
      expect(await rows()).toEqual(['keep', 'other']);
      expect(await earliest()).toBeNull();
    });

    it('upgrades a version-20 schema: entries never expire, and a replica of that version still sets', async () => {
      const pool = await schemaAt(20);
      const store = await open();
      const limits = { maxEntries: 10, maxTotalBytes: 1_000 };
      // The ten-argument call a version-20 replica makes.
      await pool.query(`SELECT "${schema}".wm_set_entry($1, $2, $3, $4, $5, 'old', '"v"', 5, 10, 1000)`, [
        12_345,
        memoryId,
        scope.tenantId,
        scope.conversationId,
        scope.agentId,
      ]);
      expect(await store.getWorkingMemoryEntry(memoryId, 'old')).toMatchObject({ valueJson: '"v"', expiresAt: null });
      const brief = await store.setWorkingMemoryEntry({
        scope,
        memoryId,
        key: 'brief',
        valueJson: '1',
        limits,
        ttlMs: 60_000,
      });
      expect(Date.parse(brief.expiresAt!) - Date.parse(brief.updatedAt)).toBe(60_000);
      expect((await store.listWorkingMemoryEntries(memoryId)).map((entry) => entry.key)).toEqual(['brief', 'old']);
    });

    it('sets a working-memory entry in one statement, and refuses one over a limit writing nothing', async () => {
      const pool = rawPool();
      const store = await createPostgresStore({ pool, schema });
      opened.push(store);
      const statements = recordStatements(pool);
      const limits = { maxEntries: 2, maxTotalBytes: 40 };
      const set = (key: string, valueJson: string) =>
        store.setWorkingMemoryEntry({ scope, memoryId, key, valueJson, limits });
      const first = await set('a', '"one"');
      expect(statements).toHaveLength(1);
      const { versions, ...entry } = first;
      expect(entry).toEqual(await store.getWorkingMemoryEntry(memoryId, 'a'));
      expect(versions).toEqual({ before: 0, after: await store.workingMemoryVersion?.(memoryId) });
      expect((await store.getRecord(memoryId))?.scope).toEqual(scope);
      const version = await store.workingMemoryVersion!(memoryId);
      await set('b', '"two"');
      await expect(set('c', '"three"')).rejects.toSatisfy(
        (error: unknown) =>
          HarnessMemoryError.isInstance(error) &&
          error.code === 'WORKING_MEMORY_LIMIT' &&
          (error.data as { limit?: string }).limit === 'entries',
      );
      await expect(set('a', `"${'x'.repeat(40)}"`)).rejects.toSatisfy(
        (error: unknown) =>
          HarnessMemoryError.isInstance(error) &&
          (error.data as { limit?: string; actual?: number }).limit === 'total_bytes' &&
          // The other entry ('b', '"two"') and the new value, in UTF-8 bytes.
          (error.data as { actual?: number }).actual === 1 + 5 + (1 + 42),
      );
      expect((await store.listWorkingMemoryEntries(memoryId)).map((entry) => entry.valueJson)).toEqual([
        '"one"',
        '"two"',
      ]);
      expect(await store.workingMemoryVersion!(memoryId)).not.toBe(version);
    });

    it('returns int8 and count results as numbers and times as ISO strings, without touching pg globally', async () => {
      const store = await open();
      await store.appendMessages({
        scope,
        memoryId,
        messages: [{ messageKey: 'k1', role: 'user', name: '', toolCallId: '', content: 'hello', tokenCount: 7 }],
      });
      await enqueue(store, scope);
      const claimed = await store.claimOperation({ leaseOwner: 'w', leaseMs: 60_000 });
      const { record, observations } = await store.completeObservation({
        operationId: claimed!.operationId,
        memoryId: claimed!.memoryId,
        leaseOwner: 'w',
        observations: [{ content: 'fact', importance: 0.5, tokenCount: 3 }],
        throughMessageSeq: 1,
        markerIds: { start: generateId('mk'), end: generateId('mk') },
      });
      for (const value of [
        record.stateVersion,
        record.lastMessageSeq,
        record.observationCount,
        record.activeObservationTokens,
        observations[0]?.seq,
        observations[0]?.tokenCount,
      ]) {
        expect(typeof value).toBe('number');
      }
      const [operation] = await store.listOperations(memoryId);
      expect(typeof operation?.scopeSequence).toBe('number');
      expect(await store.countPendingOperations()).toBe(0);
      expect(await store.countPendingOperations(memoryId)).toBe(0);
      expect((await store.appendMessages({ scope, memoryId, messages: [] })).unobservedTokens).toBe(0);
      expect(record.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(operation?.leaseExpiresAt).toBeNull();
      // The store's parsers are per query: other users of pg still get int8 as a string.
      const pool = rawPool();
      expect((await pool.query('SELECT count(*) AS count FROM pg_namespace')).rows[0].count).toMatch(/^\d+$/);
    });

    it('migrates idempotently, and once when three pools start together', async () => {
      const pools = [rawPool(), rawPool(), rawPool()];
      expect(await Promise.all(pools.map((pool) => migratePostgresSchema(pool, schema)))).toEqual([
        POSTGRES_SCHEMA_VERSION,
        POSTGRES_SCHEMA_VERSION,
        POSTGRES_SCHEMA_VERSION,
      ]);
      expect(await migratePostgresSchema(pools[0]!, schema)).toBe(POSTGRES_SCHEMA_VERSION);
      const stores = await Promise.all([open(), open(), open()]);
      expect(stores).toHaveLength(3);
      const recorded = await pools[0]!.query(
        `SELECT version, count(*)::int AS n FROM "${schema}".schema_migrations GROUP BY version ORDER BY version`,
      );
      expect(recorded.rows).toEqual(POSTGRES_MIGRATIONS.map((migration) => ({ version: migration.version, n: 1 })));
    });

    it('upgrades a version-2 schema: scopes with working memory get a version, which writes then change', async () => {
      const pool = await schemaAt(2);
      await pool.query(
        `INSERT INTO "${schema}".working_memory_entries VALUES ($1, 'a', '"v"', now(), now()), ($1, 'b', ` +
          `'"v"', now(), now())`,
        [memoryId],
      );
      const store = await open();
      const upgraded = await store.workingMemoryVersion!(memoryId);
      expect(upgraded).toBeGreaterThan(0);
      expect(await store.workingMemoryVersion!(memoryIdOf(scopeOf(9)))).toBe(0);
      expect(await store.deleteWorkingMemoryEntry(memoryId, 'a')).toBe(true);
      expect(await store.workingMemoryVersion!(memoryId)).not.toBe(upgraded);
    });

    it('upgrades a version-14 schema: a scope with only working memory, and no record, is listed', async () => {
      const pool = await schemaAt(14);
      const odd = memoryIdOf({ tenantId: 'acme', conversationId: 'c:1', agentId: '12:b' });
      await pool.query(
        `INSERT INTO "${schema}".working_memory_entries VALUES ($1, 'a', '"v"', now(), now()), ($1, 'b', ` +
          `'"v"', now(), now()), ($2, 'a', '"v"', now(), now()), ('not a memory id', 'a', '"v"', now(), now()), ` +
          `('1:a/3:b c/1:d', 'a', '"v"', now(), now()), ('1:a/1:b/2:c', 'a', '"v"', now(), now())`,
        [memoryId, odd],
      );
      const store = await open();
      const listed = await store.listScopes({ tenantId: 'acme', limit: 10 });
      expect(listed.map((summary) => [summary.scope, summary.memoryId, summary.workingMemoryEntries])).toEqual([
        [{ tenantId: 'acme', conversationId: 'c:1', agentId: '12:b' }, odd, 1],
        [scope, memoryId, 2],
      ]);
      const records = await pool.query(`SELECT memory_id FROM "${schema}".om_memory_records ORDER BY memory_id`);
      expect(records.rows.map((row: { memory_id: string }) => row.memory_id)).toEqual([memoryId, odd].sort());
    });

    it('upgrades a version-13 schema: wm_set_entry is replaced and a set answers its versions', async () => {
      const pool = await schemaAt(13);
      // The function as schema 13 shipped it: the entry only.
      const shipped = entryFunctions(`"${schema}".`).replace(", 'previous_version', COALESCE(previous, 0)", '');
      expect(shipped).not.toContain('previous_version');
      await pool.query(shipped);
      const store = await open();
      const limits = { maxEntries: 10, maxTotalBytes: 1_000 };
      const first = await store.setWorkingMemoryEntry({ scope, memoryId, key: 'a', valueJson: '1', limits });
      expect(first.versions).toEqual({ before: 0, after: await store.workingMemoryVersion?.(memoryId) });
    });

    it('upgrades a version-9 schema: each scope starts with the tokens of its unobserved messages', async () => {
      const pool = await schemaAt(9);
      const scopes = pendingScopes(scope, scopeOf(9));
      for (const { scope: stored, observedThrough, tokens } of scopes) {
        const id = memoryIdOf(stored);
        await pool.query(
          `INSERT INTO "${schema}".om_memory_records (memory_id, tenant_id, conversation_id, agent_id, state_version,
            observed_through_message_seq, last_message_seq, created_at, updated_at)
           VALUES ($1, $2, $3, $4, 1, $5, $6, now(), now())`,
          [id, stored.tenantId, stored.conversationId, stored.agentId, observedThrough, tokens.length],
        );
        for (const [index, count] of tokens.entries()) {
          await pool.query(
            `INSERT INTO "${schema}".om_messages (memory_id, seq, message_key, role, name, tool_call_id, content,
              token_count) VALUES ($1, $2, $3, 'user', '', '', 'text', $4)`,
            [id, index + 1, `k${index + 1}`, count],
          );
        }
      }
      await expectPendingTokensKept(await open(), scopes);
    });

    it(
      'upgrades a version-3 schema: observations become "mixed", a stored reflection seeds the supersession ' +
        'set (issue 12)',
      async () => {
        const pool = await schemaAt(3);
        const reflection = LEGACY_REFLECTION;
        await pool.query(
          `INSERT INTO "${schema}".om_memory_records (memory_id, tenant_id, conversation_id, agent_id, enabled,
            state_version, observation_count, last_observation_seq,
           active_reflection, active_reflection_tokens, reflection_structured_json, reflection_through_seq,
           reflection_created_at, created_at, updated_at)
         VALUES ($1, 'acme', 'conv-1', 'agent-x', true, 3, 3, 3, $2, 9, $3::jsonb, 3, now(), now(), now())`,
          [memoryId, reflection, JSON.stringify(parseReflection(reflection))],
        );
        for (const [seq, content] of LEGACY_OBSERVATIONS) {
          await pool.query(
            `INSERT INTO "${schema}".om_observations VALUES ($1, $2, $3, 2, 0.5, now(), 1, 1, 'op_old')`,
            [memoryId, seq, content],
          );
        }
        const store = await open();
        await expectSeededSupersessionSet(store, memoryId);
        expect(await store.scopeGeneration(memoryId)).toBe(0);
      },
    );

    it('upgrades a version-3 schema to the dead status: operations kept, dead ones stored and counted', async () => {
      const pool = await schemaAt(3);
      const insert = `INSERT INTO "${schema}".om_operation_log (operation_id, memory_id, tenant_id, conversation_id,
        agent_id, run_id, tool_call_id, scope_sequence,
        operation_type, status, payload_json, error_text, attempt, available_at, created_at, updated_at)
        VALUES ($1, $2, 't', 'c', 'a', 'r', 's', $3, 'observe', $4, '{}', '', 0, now(), now(), now())`;
      await pool.query(insert, ['op_a', memoryId, 1, 'applied']);
      await pool.query(insert, ['op_b', memoryId, 2, 'queued']);
      await expect(pool.query(insert, ['op_x', memoryId, 3, 'dead'])).rejects.toThrow(/om_operation_log_status_check/);
      const store = await open();
      expect((await store.listOperations(memoryId)).map((item) => [item.operationId, item.status])).toEqual([
        ['op_a', 'applied'],
        ['op_b', 'queued'],
      ]);
      const claimed = await store.claimOperation({ memoryId, leaseOwner: 'w', leaseMs: 60_000 });
      await store.markOperationDead({
        operationId: claimed!.operationId,
        memoryId,
        leaseOwner: 'w',
        errorText: 'gave up',
      });
      expect(await store.countDeadOperations(memoryId)).toBe(1);
      const indexes = await pool.query(
        `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND indexname = 'om_operation_log_dead_idx'`,
        [schema],
      );
      expect(indexes.rowCount).toBe(1);
    });

    it(
      'upgrades a version-5 schema to the import operation type: imports are logged, other types still ' + 'refused',
      async () => {
        const pool = await schemaAt(5);
        const insert = `INSERT INTO "${schema}".om_operation_log (operation_id, memory_id, tenant_id, conversation_id,
          agent_id, run_id, tool_call_id, scope_sequence,
        operation_type, status, payload_json, error_text, attempt, available_at, created_at, updated_at)
        VALUES ($1, $2, 't', 'c', 'a', 'r', 's', $3, $4, 'applied', '{}', '', 1, now(), now(), now())`;
        await expect(pool.query(insert, ['op_i', memoryId, 1, 'import'])).rejects.toThrow(
          /om_operation_log_operation_type_check/,
        );
        const store = await open();
        const { observations } = await store.importObservations!({
          scope,
          memoryId,
          observations: [{ content: 'kept', importance: 0.7, tokenCount: 1 }],
          runId: 'r',
          toolCallId: 't',
          operationId: 'op_import',
        });
        expect(observations.map((item) => item.seq)).toEqual([1]);
        expect((await store.listOperations(memoryId)).map((item) => item.operationType)).toEqual(['import']);
        await expect(pool.query(insert, ['op_x', memoryId, 9, 'teleport'])).rejects.toThrow(
          /om_operation_log_operation_type_check/,
        );
      },
    );

    it('refuses a schema newer than it knows, and an invalid schema name', async () => {
      const pool = rawPool();
      await migratePostgresSchema(pool, schema);
      await pool.query(
        `INSERT INTO "${schema}".schema_migrations (version, description) VALUES (99, 'from the future')`,
      );
      await expect(createPostgresStore({ connectionString, schema })).rejects.toThrow(/newer than/);
      await expect(createPostgresStore({ connectionString, schema: 'Bad-Name' })).rejects.toSatisfy(
        isCode('OPTION_INVALID'),
      );
    });

    it('never gives one operation to two of four concurrent claimers, and keeps each scope in order', async () => {
      const stores = await Promise.all([open(), open(), open(), open()]);
      const scopes = Array.from({ length: 20 }, (_, index) => scopeOf(index));
      // A scope's 10 operations are enqueued together (from every pool), so the oldest queued
      // operation is usually the next one of a scope already held: the case to get right.
      for (const target of scopes)
        await Promise.all(Array.from({ length: 10 }, (_, index) => enqueue(stores[index % 4]!, target)));
      const held = new Map<string, string>();
      const claimedOrder = new Map<string, number[]>();
      const claims: Operation[] = [];
      const violations: string[] = [];
      const worker = async (store: MemoryStore, owner: string): Promise<void> => {
        while (claims.length < 200) {
          // Half the claimers take any scope, half ask for a random one.
          const wanted =
            owner === 'w2' || owner === 'w3' ? { memoryId: memoryIdOf(scopes[Math.floor(Math.random() * 20)]!) } : {};
          const operation = await store.claimOperation({ ...wanted, leaseOwner: owner, leaseMs: 60_000 });
          if (!operation) {
            await sleep(2);
            continue;
          }
          claims.push(operation);
          if (held.has(operation.memoryId))
            violations.push(`${operation.operationId} claimed while ${held.get(operation.memoryId)} was held`);
          held.set(operation.memoryId, operation.operationId);
          claimedOrder.set(operation.memoryId, [
            ...(claimedOrder.get(operation.memoryId) ?? []),
            operation.scopeSequence,
          ]);
          await sleep(Math.random() * 3);
          // Released from the map before the commit, so a legal next claim is never flagged.
          held.delete(operation.memoryId);
          await store.completeWithoutChange({
            operationId: operation.operationId,
            memoryId: operation.memoryId,
            leaseOwner: owner,
            note: 'done',
          });
        }
      };
      await Promise.all(stores.map((store, index) => worker(store, `w${index}`)));
      expect(violations).toEqual([]);
      expect(claims).toHaveLength(200);
      expect(new Set(claims.map((operation) => operation.operationId)).size).toBe(200);
      expect(claims.every((operation) => operation.attempt === 1)).toBe(true);
      for (const target of scopes)
        expect(claimedOrder.get(memoryIdOf(target))).toEqual(Array.from({ length: 10 }, (_, index) => index + 1));
      expect(await stores[0]!.countPendingOperations()).toBe(0);
    });

    it('requeues a claim whose lease expired (by the database clock) and rejects the stale worker', async () => {
      const [first, second] = await Promise.all([open(), open()]);
      await first!.appendMessages({
        scope,
        memoryId,
        messages: [{ messageKey: 'k1', role: 'user', name: '', toolCallId: '', content: 'a', tokenCount: 1 }],
      });
      await enqueue(first!, scope);
      const stale = await first!.claimOperation({ memoryId, leaseOwner: 'slow', leaseMs: 200 });
      expect(await second!.requeueStaleOperations({ graceSeconds: 0 })).toBe(0);
      await sleep(300);
      expect(await second!.requeueStaleOperations({ graceSeconds: 0 })).toBe(1);
      const fresh = await second!.claimOperation({ leaseOwner: 'fast', leaseMs: 60_000 });
      expect(fresh).toMatchObject({ operationId: stale!.operationId, attempt: 2, leaseOwner: 'fast' });
      const apply = (store: MemoryStore, leaseOwner: string, content: string) =>
        store.completeObservation({
          operationId: stale!.operationId,
          memoryId: stale!.memoryId,
          leaseOwner,
          observations: [{ content, importance: 1, tokenCount: 1 }],
          throughMessageSeq: 1,
          markerIds: { start: generateId('mk'), end: generateId('mk') },
        });
      await expect(apply(first!, 'slow', 'stale')).rejects.toSatisfy(isCode('OPERATION_LEASE_LOST'));
      await apply(second!, 'fast', 'fresh');
      await expect(apply(second!, 'fast', 'again')).rejects.toSatisfy(isCode('OPERATION_LEASE_LOST'));
      expect((await first!.listObservations(memoryId)).map((item) => item.content)).toEqual(['fresh']);
      expect((await first!.listMarkers(memoryId)).map((item) => item.markerType)).toEqual([
        'observation_start',
        'observation_end',
      ]);
    });

    it('loses no write and passes no limit when pools write one scope concurrently', async () => {
      const stores = await Promise.all([open(), open(), open()]);
      const limits = { maxEntries: 10, maxTotalBytes: 100_000 };
      const results = await Promise.allSettled(
        Array.from({ length: 30 }, (_, index) =>
          stores[index % 3]!.setWorkingMemoryEntry({
            scope,
            memoryId,
            key: `k${index}`,
            valueJson: `${index}`,
            limits,
          }),
        ),
      );
      expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(10);
      expect(
        results.every((result) => result.status === 'fulfilled' || isCode('WORKING_MEMORY_LIMIT')(result.reason)),
      ).toBe(true);
      expect(await stores[0]!.listWorkingMemoryEntries(memoryId)).toHaveLength(10);
      await Promise.all(
        Array.from({ length: 60 }, (_, index) =>
          stores[index % 3]!.appendMessages({
            scope,
            memoryId,
            messages: [
              { messageKey: `m${index}`, role: 'user', name: '', toolCallId: '', content: `${index}`, tokenCount: 1 },
            ],
          }),
        ),
      );
      expect((await stores[1]!.listUnobservedMessages(memoryId, 1000)).map((item) => item.seq)).toEqual(
        Array.from({ length: 60 }, (_, index) => index + 1),
      );
      expect((await stores[2]!.getRecord(memoryId))?.lastMessageSeq).toBe(60);
    });

    it('forgets a scope in every table, in one transaction', async () => {
      const store = await open();
      const other = scopeOf(99);
      for (const target of [scope, other]) {
        await store.updateSettings({
          scope: target,
          memoryId: memoryIdOf(target),
          enabled: true,
          runId: 'r',
          toolCallId: 't',
          operationId: generateId('op'),
        });
        await store.appendMessages({
          scope: target,
          memoryId: memoryIdOf(target),
          messages: [{ messageKey: 'k', role: 'user', name: '', toolCallId: '', content: 'canary', tokenCount: 1 }],
        });
        await enqueue(store, target);
        const claimed = await store.claimOperation({ memoryId: memoryIdOf(target), leaseOwner: 'w', leaseMs: 60_000 });
        await store.completeObservation({
          operationId: claimed!.operationId,
          memoryId: claimed!.memoryId,
          leaseOwner: 'w',
          observations: [{ content: 'canary', importance: 1, tokenCount: 1 }],
          throughMessageSeq: 1,
          markerIds: { start: generateId('mk'), end: generateId('mk') },
        });
        await store.setWorkingMemoryEntry({
          scope: target,
          memoryId: memoryIdOf(target),
          key: 'k',
          valueJson: '"canary"',
          limits: { maxEntries: 5, maxTotalBytes: 1000 },
        });
      }
      await store.forget(memoryId);
      const pool = rawPool();
      const tables = [
        'om_memory_records',
        'om_operation_log',
        'om_markers',
        'om_observations',
        'om_messages',
        'working_memory_entries',
      ];
      for (const table of tables) {
        const counts = await pool.query(
          `SELECT count(*) FILTER (WHERE memory_id = $1)::int AS gone, count(*)::int AS total FROM ` +
            `"${schema}".${table}`,
          [memoryId],
        );
        expect({ table, ...counts.rows[0] }).toMatchObject({ table, gone: 0 });
        expect(counts.rows[0].total).toBeGreaterThan(0);
      }
    });

    it('deletes each settled operation once when two replicas delete at once, beside a forget', async () => {
      const [first, second] = [await open(), await open()];
      const scopes = Array.from({ length: 6 }, (_, index) => scopeOf(index));
      for (const target of scopes) {
        const targetId = memoryIdOf(target);
        for (let step = 0; step < 4; step++) {
          await first!.updateSettings({
            scope: target,
            memoryId: targetId,
            enabled: true,
            runId: 'r',
            toolCallId: 't',
            operationId: generateId('op'),
          });
          await first!.appendMessages({
            scope: target,
            memoryId: targetId,
            messages: [{ messageKey: `k${step}`, role: 'user', name: '', toolCallId: '', content: 'x', tokenCount: 1 }],
          });
          await enqueue(first!, target);
          const claimed = await first!.claimOperation({ memoryId: targetId, leaseOwner: 'w', leaseMs: 60_000 });
          await first!.completeObservation({
            operationId: claimed!.operationId,
            memoryId: targetId,
            leaseOwner: 'w',
            observations: [{ content: `fact ${step}`, importance: 0.5, tokenCount: 1 }],
            throughMessageSeq: step + 1,
            markerIds: { start: generateId('mk'), end: generateId('mk') },
          });
        }
      }
      // 8 operations a scope, the newest kept: 7 × 5 scopes (the sixth is forgotten meanwhile).
      const drain = async (store: MemoryStore): Promise<number> => {
        for (let total = 0; ;) {
          const deleted = await store.deleteSettledOperations!({ olderThanSeconds: 0, limit: 3 });
          if (deleted === 0) return total;
          total += deleted;
        }
      };
      const [one, two] = await Promise.all([drain(first!), drain(second!), second!.forget(memoryIdOf(scopes[5]!))]);
      expect(one + two).toBeLessThanOrEqual(7 * 6);
      expect(one + two).toBeGreaterThanOrEqual(7 * 5);
      const pool = rawPool();
      const left = await pool.query<{ memory_id: string; operations: number; markers: number }>(
        `SELECT o.memory_id, count(*)::int AS operations, (SELECT count(*)::int FROM "${schema}".om_markers AS m
           WHERE m.memory_id = o.memory_id) AS markers
         FROM "${schema}".om_operation_log AS o GROUP BY o.memory_id ORDER BY o.memory_id`,
      );
      expect(left.rows.map((row) => [row.operations, row.markers])).toEqual(Array.from({ length: 5 }, () => [1, 2]));
      expect(left.rows.map((row) => row.memory_id)).not.toContain(memoryIdOf(scopes[5]!));
    });

    it('works on a caller-supplied pool and leaves it open on dispose', async () => {
      const pool = rawPool();
      const store = await createPostgresStore({ pool, schema });
      await store.setWorkingMemoryEntry({
        scope,
        memoryId,
        key: 'k',
        valueJson: '1',
        limits: { maxEntries: 5, maxTotalBytes: 1000 },
      });
      await store.dispose();
      await expect(store.getWorkingMemoryEntry(memoryId, 'k')).rejects.toSatisfy(isCode('STORE_DISPOSED'));
      expect((await pool.query(`SELECT entry_json FROM "${schema}".working_memory_entries`)).rows).toEqual([
        { entry_json: '1' },
      ]);
    });
  });
});
