/**
 * Three harness processes on one Postgres schema, clients spread over them: 1,000 observe
 * operations across 50 scopes each apply exactly once, and concurrent working-memory writes
 * lose nothing (and the per-scope limit holds across replicas).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryIdOf, resolveScope } from '../../src/core/scope.js';
import { POSTGRES_MIGRATIONS } from '../../src/storage/postgres/postgres-migrations.js';
import { createPostgresTestSchemas, postgresTestUrl } from '../support/postgres-schema.js';
import type { PostgresTestSchemas } from '../support/postgres-schema.js';
import {
  audit,
  coveredSeqs,
  inParallel,
  pendingOperations,
  postgresEnv,
  range,
  startReplicas,
  stopReplicas,
  waitFor,
} from './replica-support.js';
import type { AuditRows, Replica } from './replica-support.js';

const url = postgresTestUrl();

const OPERATIONS = 1000;
const SCOPES = 50;
const PER_SCOPE = OPERATIONS / SCOPES;
const CLIENTS = 24;
const TENANT = 'tenant-r';
const scopeOf = (index: number) =>
  resolveScope({ tenantId: TENANT, conversationId: `conv-${index}`, agentId: 'agent-x' });

describe.skipIf(!url)('replicas: three harness processes on one Postgres', () => {
  const connectionString = url ?? '';
  let schemas: PostgresTestSchemas;
  let schema: string;
  let pool: pg.Pool;
  let replicas: Replica[] = [];

  beforeAll(async () => {
    schemas = createPostgresTestSchemas(connectionString);
    schema = schemas.next();
    pool = new pg.Pool({ connectionString, max: 2 });
    // A high reflect threshold keeps the log to observe operations; nothing else differs from `harness serve`.
    replicas = await startReplicas(
      3,
      postgresEnv(connectionString, schema, { HARNESS_MEMORY_REFLECT_THRESHOLD_TOKENS: '100000' }),
    );
  }, 40_000);
  afterAll(async () => {
    const exits = await stopReplicas(replicas);
    await pool?.end();
    await schemas?.dropAll();
    // Every replica shut down cleanly (closing its stdin stops the server and the worker).
    expect(exits.map((exit) => exit.code)).toEqual(replicas.map(() => 0));
  }, 30_000);

  it('migrates the schema once although the three replicas started together', async () => {
    const rows = await pool.query<{ version: number }>(
      `SELECT version FROM "${schema}".schema_migrations ORDER BY version`,
    );
    expect(rows.rows.map((row) => row.version)).toEqual(POSTGRES_MIGRATIONS.map((migration) => migration.version));
  });

  describe('1,000 observe operations across 50 scopes, sent to the three replicas', () => {
    let answers: Array<{ status: number; body: Record<string, any> }>;
    let rows: AuditRows;

    beforeAll(async () => {
      // Operation i: scope i % 50, that scope's message i / 50, replica i % 3, run id run-i.
      answers = await inParallel(OPERATIONS, CLIENTS, (index) => {
        const replica = replicas[index % replicas.length] as Replica;
        const scope = scopeOf(index % SCOPES);
        const k = Math.floor(index / SCOPES);
        return replica.apiJson('/test/observe', {
          method: 'POST',
          json: {
            tenant_id: scope.tenantId,
            conversation_id: scope.conversationId,
            agent_id: scope.agentId,
            run_id: `run-${index}`,
            messages: [
              {
                id: `m${k}`,
                role: k % 2 === 0 ? 'user' : 'assistant',
                content: `scope ${index % SCOPES} message ${k} from client ${index}`,
              },
            ],
          },
        });
      });
      // An observe answers `queued` when another replica held its scope: wait for the workers.
      await waitFor(
        'every operation to be final',
        async () => ((await pendingOperations(pool, schema)) === 0 ? true : undefined),
        20_000,
      );
      rows = await audit(pool, schema);
    }, 60_000);

    it('answers every request, on every replica', () => {
      expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
      for (const answer of answers) expect(['applied', 'queued']).toContain(answer.body['status']);
      for (const replica of replicas) {
        const own = answers.filter((answer) => answer.body['replica'] === replica.name);
        expect(own.length).toBeGreaterThanOrEqual(Math.floor(OPERATIONS / replicas.length));
        // Each replica applied some operations itself.
        expect(own.some((answer) => answer.body['status'] === 'applied')).toBe(true);
      }
      for (const replica of replicas) expect(replica.stderr()).toBe('');
    });

    it('logs exactly one operation per observe, applied once, on its first attempt', () => {
      expect(rows.operations).toHaveLength(OPERATIONS);
      expect(rows.operations.filter((row) => row.operation_type !== 'observe')).toEqual([]);
      expect(
        rows.operations.filter((row) => row.status !== 'applied' || row.attempt !== 1 || row.lease_owner !== null),
      ).toEqual([]);
      // Each client's operation (by its run id) is in the log once.
      expect(rows.operations.map((row) => row.run_id).sort()).toEqual(
        Array.from({ length: OPERATIONS }, (_, index) => `run-${index}`).sort(),
      );
      // Unique (memory_id, scope_sequence), and each scope's sequence is 1..20 without gaps.
      expect(new Set(rows.operations.map((row) => `${row.memory_id}#${row.scope_sequence}`)).size).toBe(OPERATIONS);
      for (let index = 0; index < SCOPES; index++) {
        const memoryId = memoryIdOf(scopeOf(index));
        expect(rows.operations.filter((row) => row.memory_id === memoryId).map((row) => row.scope_sequence)).toEqual(
          range(PER_SCOPE),
        );
      }
    });

    it('observes every message exactly once: disjoint source ranges covering all seqs of each scope', () => {
      expect(rows.records).toHaveLength(SCOPES);
      for (let index = 0; index < SCOPES; index++) {
        const memoryId = memoryIdOf(scopeOf(index));
        const messages = rows.messages.filter((row) => row.memory_id === memoryId);
        expect(messages.map((row) => row.message_key).sort()).toEqual(
          Array.from({ length: PER_SCOPE }, (_, k) => `id:m${k}`).sort(),
        );
        expect(messages.map((row) => row.seq)).toEqual(range(PER_SCOPE));
        expect(messages.every((row) => row.observed)).toBe(true);
        expect(coveredSeqs(rows, memoryId)).toEqual(range(PER_SCOPE));
        const record = rows.records.find((row) => row.memory_id === memoryId);
        const observations = rows.observations.filter((row) => row.memory_id === memoryId);
        expect(record).toMatchObject({
          last_message_seq: PER_SCOPE,
          observed_through_message_seq: PER_SCOPE,
          observation_count: observations.length,
          last_observation_seq: observations.length,
        });
      }
    });

    it('ties each observation to one applied operation of its scope, with one marker pair each', () => {
      const byId = new Map(rows.operations.map((row) => [row.operation_id, row]));
      const observing = new Set<string>();
      for (const observation of rows.observations) {
        const operation = byId.get(observation.operation_id);
        expect(operation?.memory_id).toBe(observation.memory_id);
        expect(observing.has(observation.operation_id)).toBe(false);
        observing.add(observation.operation_id);
      }
      // The other operations found their messages already observed by an earlier one.
      for (const operation of rows.operations.filter((row) => !observing.has(row.operation_id)))
        expect(operation.error_text).toBe('nothing to observe');
      const markers = new Map<string, string[]>();
      for (const marker of rows.markers)
        markers.set(marker.cycle_id, [...(markers.get(marker.cycle_id) ?? []), marker.marker_type]);
      expect([...markers.keys()].sort()).toEqual([...observing].sort());
      for (const types of markers.values()) expect(types).toEqual(['observation_start', 'observation_end']);
    });
  });

  describe('working memory written through the three replicas at once', () => {
    const wmScope = (name: string) => ({ tenant: TENANT, conversation: `wm-${name}`, agent: 'agent-x' });
    const path = (scope: { tenant: string; conversation: string; agent: string }, key = '') =>
      `/v1/memory/${scope.tenant}/${scope.conversation}/${scope.agent}/working${key === '' ? '' : `/${key}`}`;

    it('loses no write: distinct keys all land, and contended keys end at one written value', async () => {
      const scopes = ['a', 'b', 'c'].map(wmScope);
      const KEYS = 60;
      const CONTENDED = 3;
      // 180 distinct keys plus 90 writes to 3 contended keys, interleaved over the replicas.
      const writes = [
        ...scopes.flatMap((scope, s) =>
          Array.from({ length: KEYS }, (_, k) => ({ scope, key: `k${k}`, value: { scope: s, k } })),
        ),
        ...Array.from({ length: 90 }, (_, w) => ({
          scope: scopes[w % 3] as (typeof scopes)[number],
          key: `hot${Math.floor(w / 3) % CONTENDED}`,
          value: { writer: w },
        })),
      ];
      const answers = await inParallel(writes.length, CLIENTS, (index) => {
        const write = writes[index] as (typeof writes)[number];
        return (replicas[index % replicas.length] as Replica).apiJson(path(write.scope, write.key), {
          method: 'PUT',
          json: { value: write.value },
        });
      });
      expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);

      for (const [s, scope] of scopes.entries()) {
        // Every replica reads the same entries.
        const lists = await Promise.all(replicas.map((replica) => replica.apiJson(path(scope))));
        for (const list of lists) expect(list.body).toEqual(lists[0]?.body);
        const entries = (lists[0]?.body['entries'] ?? []) as Array<{ key: string; value: unknown }>;
        const values = new Map(entries.map((entry) => [entry.key, entry.value]));
        for (let k = 0; k < KEYS; k++) expect(values.get(`k${k}`)).toEqual({ scope: s, k });
        for (let hot = 0; hot < CONTENDED; hot++) {
          const written = writes
            .filter((write) => write.scope === scope && write.key === `hot${hot}`)
            .map((write) => write.value);
          expect(written).toContainEqual(values.get(`hot${hot}`));
        }
        expect(entries).toHaveLength(KEYS + CONTENDED);
      }
    }, 30_000);

    it('holds the entry limit across replicas: exactly 100 of 130 concurrent new keys are stored', async () => {
      const scope = wmScope('limit');
      const answers = await inParallel(130, CLIENTS, (index) =>
        (replicas[index % replicas.length] as Replica).apiJson(path(scope, `n${index}`), {
          method: 'PUT',
          json: { value: index },
        }),
      );
      const stored = answers.filter((answer) => answer.status === 200);
      const refused = answers.filter((answer) => answer.status !== 200);
      expect(stored).toHaveLength(100);
      expect(refused).toHaveLength(30);
      for (const answer of refused)
        expect(answer).toMatchObject({ status: 413, body: { error: { code: 'working_memory_limit' } } });
      const list = await (replicas[1] as Replica).apiJson(path(scope));
      expect(((list.body['entries'] ?? []) as unknown[]).length).toBe(100);
    }, 30_000);
  });
});
