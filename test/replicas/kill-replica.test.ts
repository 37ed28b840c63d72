/**
 * Killing a replica (SIGKILL) while its observe operation is `processing` leaves nothing
 * half-applied, and another replica finishes the work once the lease has expired.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryIdOf, resolveScope } from '../../src/core/scope.js';
import { createPostgresTestSchemas, postgresTestUrl } from '../support/postgres-schema.js';
import type { PostgresTestSchemas } from '../support/postgres-schema.js';
import { audit, coveredSeqs, postgresEnv, range, startReplicas, stopReplicas, waitFor } from './replica-support.js';
import type { AuditRows, OperationRow, Replica } from './replica-support.js';

const url = postgresTestUrl();

/** The lease (`stale_operation_seconds`): short, so the test waits little for its expiry. */
const LEASE_SECONDS = 3;
const scope = resolveScope({ tenantId: 'tenant-k', conversationId: 'conv-kill', agentId: 'agent-x' });
const memoryId = memoryIdOf(scope);

/** The rows of the scope only. */
function ofScope(rows: AuditRows) {
  return {
    record: rows.records.find((row) => row.memory_id === memoryId),
    operations: rows.operations.filter((row) => row.memory_id === memoryId),
    messages: rows.messages.filter((row) => row.memory_id === memoryId),
    observations: rows.observations.filter((row) => row.memory_id === memoryId),
    markers: rows.markers.filter((row) => row.memory_id === memoryId),
  };
}

describe.skipIf(!url)('replicas: a replica killed mid-operation', () => {
  const connectionString = url ?? '';
  let schemas: PostgresTestSchemas;
  let schema: string;
  let pool: pg.Pool;
  let directory: string;
  let replicas: Replica[] = [];

  beforeAll(async () => {
    schemas = createPostgresTestSchemas(connectionString);
    schema = schemas.next();
    pool = new pg.Pool({ connectionString, max: 2 });
    directory = mkdtempSync(join(tmpdir(), 'hm-replica-kill-'));
    replicas = await startReplicas(
      3,
      postgresEnv(connectionString, schema, {
        HARNESS_MEMORY_STALE_OPERATION_SECONDS: String(LEASE_SECONDS),
        // The first observer call over a transcript containing SLOW, on whichever replica, hangs.
        REPLICA_SLOW_FILE: join(directory, 'slow-claimed'),
        REPLICA_SLOW_MS: '60000',
      }),
    );
  }, 40_000);
  afterAll(async () => {
    await stopReplicas(replicas);
    await pool?.end();
    await schemas?.dropAll();
    if (directory) rmSync(directory, { recursive: true, force: true });
  }, 30_000);

  const observe = (replica: Replica, runId: string, id: string, content: string) =>
    replica.apiJson('/test/observe', {
      method: 'POST',
      json: {
        tenant_id: scope.tenantId,
        conversation_id: scope.conversationId,
        agent_id: scope.agentId,
        run_id: runId,
        messages: [{ id, role: 'user', content }],
      },
    });

  it('leaves nothing half-applied, and a survivor applies the operation after the lease expires', async () => {
    const [first, second] = replicas as [Replica, Replica, Replica];
    // Earlier, completed work in the scope, which must stay as it was.
    for (let index = 0; index < 3; index++) {
      const answer = await observe(first, `run-before-${index}`, `m${index}`, `before the kill, message ${index}`);
      expect(answer).toMatchObject({ status: 200, body: { status: 'applied' } });
    }
    const before = ofScope(await audit(pool, schema));
    expect(before.record).toMatchObject({ last_message_seq: 3, observed_through_message_seq: 3 });

    // The slow operation: whichever replica claims it (the one asked, or a background worker
    // of another) hangs in the observer; that one is the victim.
    const slowAnswer = observe(second, 'run-slow', 'm3', 'SLOW: the deploy moves to Thursday').then(
      (answer) => ({ answer, error: undefined }),
      (error: unknown) => ({ answer: undefined, error }),
    );
    const victim = await waitFor(
      'a replica to start the slow observer call',
      async () => replicas.find((replica) => replica.lines.some((line) => line['slowObserver'] === true)),
      10_000,
      20,
    );
    const processing = await pool.query<OperationRow & { lease_left_ms: number }>(
      `SELECT *, (extract(epoch FROM lease_expires_at - clock_timestamp()) * 1000)::int AS lease_left_ms ` +
        `FROM "${schema}".om_operation_log WHERE run_id = 'run-slow'`,
    );
    const slow = processing.rows[0];
    expect(slow).toMatchObject({ status: 'processing', attempt: 1 });
    expect(slow?.lease_owner).toEqual(expect.any(String));
    expect(slow?.lease_left_ms).toBeGreaterThan(0);

    expect(await victim.kill()).toEqual({ code: null, signal: 'SIGKILL' });
    const survivors = replicas.filter((replica) => replica !== victim);

    // Right after the kill, inside the lease: the operation is still `processing`, and the
    // scope is exactly as before it apart from the new, unobserved message.
    const during = ofScope(await audit(pool, schema));
    expect(during.operations.find((row) => row.run_id === 'run-slow')).toMatchObject({
      status: 'processing',
      attempt: 1,
      lease_owner: slow?.lease_owner,
    });
    expect(during.observations).toEqual(before.observations);
    expect(during.markers).toEqual(before.markers);
    expect(during.record).toMatchObject({ ...before.record, last_message_seq: 4, observed_through_message_seq: 3 });
    expect(during.messages.map((row) => [row.seq, row.observed])).toEqual([
      [1, true],
      [2, true],
      [3, true],
      [4, false],
    ]);

    // New work on the scope is accepted by a survivor and queued behind the stuck operation.
    const after = await observe(survivors[0] as Replica, 'run-after', 'm4', 'after the kill, message 4');
    expect(after).toMatchObject({ status: 200, body: { status: 'queued' } });

    // A survivor's worker requeues the operation once its lease has expired (by the
    // database clock), claims it again and applies it; the queued one follows.
    await waitFor(
      'the scope’s operations to be applied',
      async () => {
        const rows = ofScope(await audit(pool, schema));
        return rows.operations.every((row) => row.status === 'applied') ? rows : undefined;
      },
      LEASE_SECONDS * 1000 + 10_000,
    );
    const final = ofScope(await audit(pool, schema));
    const applied = final.operations.find((row) => row.run_id === 'run-slow');
    expect(applied).toMatchObject({ status: 'applied', attempt: 2, lease_owner: null });
    expect(applied?.updated_at.getTime()).toBeGreaterThanOrEqual(
      slow?.lease_expires_at?.getTime() ?? Number.POSITIVE_INFINITY,
    );
    expect(final.operations.find((row) => row.run_id === 'run-after')).toMatchObject({ status: 'applied', attempt: 1 });
    expect(final.operations.map((row) => row.scope_sequence)).toEqual(range(5));

    // Every message observed exactly once; the earlier observations untouched.
    expect(final.messages.every((row) => row.observed)).toBe(true);
    expect(coveredSeqs(await audit(pool, schema), memoryId)).toEqual(range(5));
    expect(final.observations.slice(0, before.observations.length)).toEqual(before.observations);
    expect(final.record).toMatchObject({
      last_message_seq: 5,
      observed_through_message_seq: 5,
      observation_count: final.observations.length,
    });
    const observing = new Set(final.observations.map((row) => row.operation_id));
    expect(final.markers).toHaveLength(observing.size * 2);
    expect(observing.has(applied?.operation_id ?? '')).toBe(true);

    // The client got an error when the request itself was running the operation on the killed
    // replica; otherwise (a background worker, on any replica, claimed it first) `queued`.
    const { answer, error } = await slowAnswer;
    if (error === undefined) expect(answer).toMatchObject({ status: 200, body: { status: 'queued' } });
    else expect(victim).toBe(second);
    for (const survivor of survivors) expect(survivor.stderr()).toBe('');
  }, 40_000);
});
