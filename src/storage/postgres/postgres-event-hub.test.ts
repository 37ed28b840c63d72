import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresTestSchemas, postgresTestUrl } from '../../../test/support/postgres-schema.js';
import type { PostgresTestSchemas } from '../../../test/support/postgres-schema.js';
import type { RunEvent } from '../run-store.js';
import { createPostgresEventHub } from './postgres-event-hub.js';
import type { PostgresEventHub } from './postgres-event-hub.js';

const url = postgresTestUrl();

function event(runId: string, seq: number): RunEvent {
  return {
    id: `${runId}:${seq}`,
    runId,
    seq,
    type: 'test.event',
    timestamp: new Date().toISOString(),
    payload: { seq },
  };
}

/** Resolves with the events a subscriber receives until `count` arrived. */
function collect(
  hub: PostgresEventHub,
  runId: string,
  count: number,
): { events: RunEvent[]; done: Promise<RunEvent[]> } {
  const events: RunEvent[] = [];
  const done = new Promise<RunEvent[]>((resolve) => {
    hub.subscribe(runId, (received) => {
      events.push(received);
      if (events.length === count) resolve(events);
    });
  });
  return { events, done };
}

const within = <T>(promise: Promise<T>, ms: number): Promise<T> =>
  Promise.race([
    promise,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`nothing arrived within ${ms} ms`)), ms)),
  ]);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!url)('postgres event hub', () => {
  const connectionString = url ?? '';
  let schemas: PostgresTestSchemas;
  const hubs: PostgresEventHub[] = [];
  // Each replica gets its own pool, named so a test can find its connections.
  const replica = async (name: string, schema: string): Promise<PostgresEventHub> => {
    const named = new URL(connectionString);
    named.searchParams.set('application_name', name);
    const hub = await createPostgresEventHub({ connectionString: named.toString(), schema });
    hubs.push(hub);
    return hub;
  };
  beforeAll(() => {
    schemas = createPostgresTestSchemas(connectionString);
  });
  afterEach(async () => {
    for (const hub of hubs.splice(0)) await hub.close();
  });
  afterAll(async () => {
    await schemas.dropAll();
  });

  it("wakes a subscriber on another replica, and the publisher's own subscribers once", async () => {
    const schema = schemas.next();
    const [a, b] = await Promise.all([replica('hub_a', schema), replica('hub_b', schema)]);
    const remote = collect(b!, 'run_1', 3);
    const local = collect(a!, 'run_1', 3);
    const otherRun = collect(b!, 'run_2', 1);
    for (const seq of [0, 1, 2]) a!.publish(event('run_1', seq));
    const received = await within(remote.done, 20_000);
    expect(received.map((item) => [item.runId, item.seq]).sort()).toEqual([
      ['run_1', 0],
      ['run_1', 1],
      ['run_1', 2],
    ]);
    expect(received.every((item) => item.id === `run_1:${item.seq}`)).toBe(true);
    // The local subscriber got the full events at once; their echoes are not delivered again.
    expect(local.events.map((item) => item.payload)).toEqual([{ seq: 0 }, { seq: 1 }, { seq: 2 }]);
    await sleep(200);
    expect(local.events).toHaveLength(3);
    expect(otherRun.events).toEqual([]);
  });

  it('keeps schemas apart, and re-listens after its connection is killed', async () => {
    const schema = schemas.next();
    const name = `hub_${process.pid}_r`;
    const [a, b, elsewhere] = await Promise.all([
      replica('hub_a', schema),
      replica(name, schema),
      replica('hub_c', schemas.next()),
    ]);
    const isolated = collect(elsewhere!, 'run_1', 1);
    const reconnected = collect(b!, 'run_1', 1);
    const admin = new pg.Pool({ connectionString, max: 1 });
    try {
      const killed = await admin.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
        [name],
      );
      expect(killed.rowCount).toBeGreaterThan(0);
    } finally {
      await admin.end();
    }
    expect((await within(reconnected.done, 20_000))[0]?.type).toBe('reconnected');
    const woken = collect(b!, 'run_1', 1);
    a!.publish(event('run_1', 7));
    expect((await within(woken.done, 20_000))[0]).toMatchObject({ runId: 'run_1', seq: 7 });
    await sleep(100);
    expect(isolated.events).toEqual([]);
  });
});
