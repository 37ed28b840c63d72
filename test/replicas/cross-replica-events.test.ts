/**
 * Run state and events across replicas: an SSE client on replica B receives every event of a
 * run executed on replica A, live and in order; and what cancelling from another replica does.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsOf, typesOf } from '../e2e/e2e-harness.js';
import { openSse } from '../e2e/sse-client.js';
import type { SseFrame } from '../e2e/sse-client.js';
import { createPostgresTestSchemas, postgresTestUrl } from '../support/postgres-schema.js';
import type { PostgresTestSchemas } from '../support/postgres-schema.js';
import { postgresEnv, startReplicas, stopReplicas, waitFor } from './replica-support.js';
import type { Replica } from './replica-support.js';

const url = postgresTestUrl();

interface StoredEvent {
  seq: number;
  type: string;
  payload_json: Record<string, unknown>;
}

describe.skipIf(!url)('replicas: run events and run control across replicas', () => {
  const connectionString = url ?? '';
  let schemas: PostgresTestSchemas;
  let schema: string;
  let pool: pg.Pool;
  let replicas: Replica[] = [];

  beforeAll(async () => {
    schemas = createPostgresTestSchemas(connectionString);
    schema = schemas.next();
    pool = new pg.Pool({ connectionString, max: 2 });
    replicas = await startReplicas(3, postgresEnv(connectionString, schema));
  }, 40_000);
  afterAll(async () => {
    await stopReplicas(replicas);
    await pool?.end();
    await schemas?.dropAll();
  }, 30_000);

  const startRun = async (replica: Replica, prompt: string, conversation: string): Promise<string> => {
    const { status, body } = await replica.apiJson('/v1/runs', {
      method: 'POST',
      json: { prompt, tenant_id: 'tenant-e', conversation_id: conversation },
    });
    expect(status).toBe(202);
    return String(body['run_id']);
  };
  const storedEvents = async (runId: string): Promise<StoredEvent[]> =>
    (
      await pool.query<StoredEvent>(
        `SELECT seq, type, payload_json FROM "${schema}".harness_run_events WHERE run_id = $1 ORDER BY seq`,
        [runId],
      )
    ).rows;

  it('streams every event of a run executed on A to a client on B, in order, as it happens', async () => {
    const [a, b, c] = replicas as [Replica, Replica, Replica];
    // Four steps (three working_memory tool calls, then the answer), 150 ms per model turn.
    const runId = await startRun(a, 'steps=4 delay=150', 'conv-sse');
    const onB = await openSse(`${b.url}/v1/runs/${runId}/events`);
    expect(onB.status).toBe(200);
    // A second client, on C, joins mid-run and resumes after the events it has seen.
    const bFrames: SseFrame[] = [];
    const bDone = onB.collect({
      timeoutMs: 20_000,
      until: (frame) => {
        bFrames.push(frame);
        return false;
      },
    });
    await waitFor('three events on B', async () => (bFrames.length >= 3 ? true : undefined), 10_000, 10);
    const resumeAt = bFrames[2]?.id ?? '';
    const onC = await openSse(`${c.url}/v1/runs/${runId}/events`, { lastEventId: resumeAt });
    const [frames, cFrames] = await Promise.all([bDone, onC.collect({ timeoutMs: 20_000 })]);

    // The history, read after completion from the database and, as SSE, from A itself.
    const stored = await storedEvents(runId);
    const replay = await (await openSse(`${a.url}/v1/runs/${runId}/events`)).collect({ timeoutMs: 10_000 });
    const events = eventsOf(frames);
    expect(events.map((event) => event.id)).toEqual(stored.map((row) => `${runId}:${row.seq}`));
    expect(stored.map((row) => row.seq)).toEqual(stored.map((_, index) => index));
    expect(events.map((event) => ({ type: event.type, payload: event.payload }))).toEqual(
      stored.map((row) => ({ type: row.type, payload: row.payload_json })),
    );
    expect(frames.map((frame) => frame.data)).toEqual(replay.map((frame) => frame.data));
    expect(typesOf(frames).at(-1)).toBe('run.completed');
    expect(typesOf(frames).filter((type) => type === 'run.completed')).toHaveLength(1);
    expect(typesOf(frames).filter((type) => type === 'tool.call.completed')).toHaveLength(3);
    expect(typesOf(frames)).toContain('memory.observe.completed');
    expect(cFrames.map((frame) => frame.data)).toEqual(frames.slice(3).map((frame) => frame.data));

    // Delivered live, woken by NOTIFY (the replicas' SSE heartbeat, which also re-reads the
    // store, is 15 s): B's frames arrived over the run's ~600 ms of model turns, each soon
    // after it was stored.
    const spread = (frames.at(-1)?.receivedAt ?? 0) - (frames[0]?.receivedAt ?? 0);
    expect(spread).toBeGreaterThan(300);
    const lags = events.map((event, index) => (frames[index]?.receivedAt ?? 0) - Date.parse(event.timestamp));
    // Well under the 15 s heartbeat, whatever the machine's load: NOTIFY woke the stream.
    expect(Math.max(...lags)).toBeLessThan(10_000);

    // Run state is the same on every replica.
    for (const replica of replicas) {
      const { body } = await replica.apiJson(`/v1/runs/${runId}`);
      expect(body).toMatchObject({
        run_id: runId,
        status: 'completed',
        steps: 4,
        output: 'final answer after 4 steps',
      });
    }
    // The run's working-memory writes are visible through any replica.
    const working = await c.apiJson('/v1/memory/tenant-e/conv-sse/default/working');
    expect((working.body['entries'] as Array<{ key: string }>).map((entry) => entry.key)).toEqual([
      'step-0',
      'step-1',
      'step-2',
    ]);
  }, 30_000);

  it(
    'cancel reaches only the replica executing the run: another replica answers 409 run_not_local and the ' +
      'run goes on',
    async () => {
      const [a, b] = replicas as [Replica, Replica, Replica];
      const runId = await startRun(a, 'steps=4 delay=200', 'conv-cancel-remote');
      await waitFor(
        'the run to be running',
        async () => ((await b.apiJson(`/v1/runs/${runId}`)).body['status'] === 'running' ? true : undefined),
        10_000,
        20,
      );
      const remote = await b.apiJson(`/v1/runs/${runId}/cancel`, { method: 'POST' });
      expect(remote).toMatchObject({ status: 409, body: { error: { code: 'run_not_local' } } });
      const frames = await (await openSse(`${b.url}/v1/runs/${runId}/events`)).collect({ timeoutMs: 20_000 });
      expect(typesOf(frames).at(-1)).toBe('run.completed');
      expect(typesOf(frames)).not.toContain('run.cancelled');

      // The same request on the executing replica cancels.
      const local = await startRun(a, 'steps=4 delay=200', 'conv-cancel-local');
      await waitFor(
        'the run to be running',
        async () => ((await a.apiJson(`/v1/runs/${local}`)).body['status'] === 'running' ? true : undefined),
        10_000,
        20,
      );
      const cancelled = await a.apiJson(`/v1/runs/${local}/cancel`, { method: 'POST' });
      expect(cancelled).toMatchObject({ status: 202, body: { run_id: local, status: 'cancelled' } });
      const localFrames = await (await openSse(`${b.url}/v1/runs/${local}/events`)).collect({ timeoutMs: 10_000 });
      expect(typesOf(localFrames).at(-1)).toBe('run.cancelled');
    },
    30_000,
  );
});
