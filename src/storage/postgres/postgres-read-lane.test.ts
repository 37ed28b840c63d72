import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPostgresTestSchemas, postgresTestUrl } from '../../../test/support/postgres-schema.js';
import type { PostgresTestSchemas } from '../../../test/support/postgres-schema.js';
import { HarnessMemoryError } from '../../core/errors.js';
import { acquireReadLane } from './postgres-read-lane.js';
import { createPostgresStore } from './postgres-store.js';
import type { PostgresReadLane } from './postgres-read-lane.js';

const url = postgresTestUrl();
const PID = 'SELECT pg_backend_pid() AS pid, $1::int AS tag';

describe.skipIf(!url)('postgres read lane', () => {
  const connectionString = url ?? '';
  const pools: pg.Pool[] = [];
  const held: PostgresReadLane[] = [];
  const poolOf = (options: pg.PoolConfig = {}): pg.Pool => {
    const pool = new pg.Pool({ connectionString, max: 4, ...options });
    pools.push(pool);
    return pool;
  };
  const laneOf = (pool: pg.Pool, options?: Parameters<typeof acquireReadLane>[1]): PostgresReadLane => {
    const lane = acquireReadLane(pool, options);
    held.push(lane);
    return lane;
  };
  const pidOf = async (lane: PostgresReadLane, tag = 0): Promise<number> =>
    (await lane.read<{ pid: number }>(PID, [tag])).rows[0]!.pid;
  /** Waits until the server has no backend `pid` any more. */
  const disconnected = (pool: pg.Pool, pid: number): Promise<void> =>
    vi.waitFor(
      async () => expect((await pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount).toBe(0),
      { timeout: 15_000, interval: 20 },
    );
  afterEach(async () => {
    for (const lane of held.splice(0)) await lane.release();
    for (const pool of pools.splice(0)) await pool.end();
  });
  let schemas: PostgresTestSchemas;
  beforeAll(() => {
    schemas = createPostgresTestSchemas(connectionString);
  });
  afterAll(async () => {
    await schemas.dropAll();
  });

  it('sends reads made together on one connection of its own, outside the pool', async () => {
    const pool = poolOf();
    const lane = laneOf(pool);
    const pids = await Promise.all([1, 2, 3].map((tag) => pidOf(lane, tag)));
    expect(new Set(pids).size).toBe(1);
    const pooled = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    expect(pids[0]).not.toBe(pooled);
    expect(pool.totalCount).toBe(1);
  });

  it('sends reads beyond maxInFlight to the pool', async () => {
    const pool = poolOf();
    const lane = laneOf(pool, { maxInFlight: 2 });
    const lanePid = await pidOf(lane);
    const pids = await Promise.all([1, 2, 3, 4, 5].map((tag) => pidOf(lane, tag)));
    expect(pids.slice(0, 2)).toEqual([lanePid, lanePid]);
    expect(pids.slice(2)).not.toContain(lanePid);
  });

  it("throws a statement's own error and keeps its connection", async () => {
    const lane = laneOf(poolOf());
    const before = await pidOf(lane);
    await expect(lane.read('SELECT 1 / $1::int AS quotient', [0])).rejects.toMatchObject({ code: '22012' });
    expect(await pidOf(lane)).toBe(before);
  });

  it('reads again on the pool when its connection is lost under a read, then reconnects', async () => {
    const pool = poolOf();
    const lane = laneOf(pool);
    const lanePid = await pidOf(lane);
    const blocker = await pool.connect();
    try {
      // The lane's read waits on a lock the test holds, so its connection can be killed mid-read.
      await blocker.query('SELECT pg_advisory_lock(424242)');
      const read = lane.read<{ pid: number }>(
        'SELECT pg_advisory_xact_lock_shared($1::bigint), pg_backend_pid() AS pid',
        [424242],
      );
      await vi.waitFor(
        async () => {
          const waiting = await pool.query(
            `SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`,
            [lanePid],
          );
          expect(waiting.rowCount).toBe(1);
        },
        { timeout: 15_000, interval: 20 },
      );
      await pool.query('SELECT pg_terminate_backend($1)', [lanePid]);
      await disconnected(pool, lanePid);
      await blocker.query('SELECT pg_advisory_unlock(424242)');
      const answered = (await read).rows[0]!.pid;
      expect(answered).not.toBe(lanePid);
    } finally {
      blocker.release();
    }
    const reopened = await pidOf(lane);
    expect(reopened).not.toBe(lanePid);
    expect(await pidOf(lane)).toBe(reopened);
  });

  it('is shared by the holders of one pool and closed by the last release', async () => {
    const pool = poolOf();
    const first = laneOf(pool);
    const second = laneOf(pool);
    const pid = await pidOf(first);
    expect(await pidOf(second)).toBe(pid);
    await first.release();
    await first.release();
    expect(await pidOf(second)).toBe(pid);
    await second.release();
    await disconnected(pool, pid);
    // A new holder opens a new lane.
    expect(await pidOf(laneOf(pool))).not.toBe(pid);
  });

  it('closes its connection when idle and opens another on the next read', async () => {
    const pool = poolOf();
    const lane = laneOf(pool, { idleMs: 30 });
    const pid = await pidOf(lane);
    await disconnected(pool, pid);
    const next = await pidOf(lane);
    expect(next).not.toBe(pid);
  });

  /** Runs `lines` in a child process (the lane module imported as `acquireReadLane`); its output and exit. */
  const inChild = async (
    lines: readonly string[],
  ): Promise<{ output: string; code: number | null; signal: string | null }> => {
    const module = fileURLToPath(new URL('./postgres-read-lane.ts', import.meta.url));
    const script = [
      `import pg from 'pg';`,
      `const { acquireReadLane } = await import(${JSON.stringify(module)});`,
      `const pool = new pg.Pool({ connectionString: ${JSON.stringify(connectionString)}, allowExitOnIdle: true });`,
      ...lines,
    ].join('\n');
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('../../..', import.meta.url)),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    // A child the lane kept alive is killed after 20 s, and the test fails on its exit signal.
    const kill = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const exit = await new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      child.on('exit', (code, signal) => resolve({ code, signal })),
    );
    clearTimeout(kill);
    return { output, ...exit };
  };

  it('does not keep the process alive while idle, and holds it until a release has closed the connection', async () => {
    // The child reads once and releases nothing; its pool lets the process exit when idle, and
    // the lane would close its connection only after ten minutes.
    const idle = await inChild([
      `const lane = acquireReadLane(pool, { idleMs: 600000 });`,
      `const answer = await lane.read('SELECT $1::int AS one', [1]);`,
      `console.log('read', answer.rows[0].one);`,
    ]);
    expect(idle).toEqual({ output: 'read 1\n', code: 0, signal: null });
    // A release awaited with nothing else in the event loop still resolves (a store's dispose).
    const released = await inChild([
      `const lane = acquireReadLane(pool);`,
      `await lane.read('SELECT 1 AS one', []);`,
      `await lane.read('SELECT $1::int AS one', [1]);`,
      `await lane.release();`,
      `await pool.end();`,
      `console.log('released');`,
    ]);
    expect(released).toEqual({ output: 'released\n', code: 0, signal: null });
  });

  it("sends every read to the pool when the pool's client class does not pipeline", async () => {
    class NoPipeline extends pg.Client {
      constructor(config: pg.ClientConfig = {}) {
        super({ ...config, pipeline: false });
      }
    }
    const pool = poolOf({ Client: NoPipeline, max: 1 });
    const lane = laneOf(pool);
    const pooled = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const pids = await Promise.all([1, 2, 3].map((tag) => pidOf(lane, tag)));
    expect(pids).toEqual([pooled, pooled, pooled]);
    expect(await pidOf(lane)).toBe(pooled);
  });

  it('answers from the pool while its own connection cannot be made', async () => {
    // The pool's clients reach the server; the lane's (pipelined) client is sent to a closed port.
    class LaneUnreachable extends pg.Client {
      constructor(config: pg.ClientConfig = {}) {
        super(
          config.pipeline ? { host: '127.0.0.1', port: 1, user: 'postgres', database: 'test', pipeline: true } : config,
        );
      }
    }
    const pool = poolOf({ Client: LaneUnreachable });
    const lane = laneOf(pool);
    const answers = await Promise.all([1, 2, 3].map((tag) => lane.read<{ tag: number }>(PID, [tag])));
    expect(answers.map((answer) => answer.rows[0]!.tag)).toEqual([1, 2, 3]);
    expect((await lane.read<{ tag: number }>(PID, [4])).rows[0]!.tag).toBe(4);
    await lane.release();
  });

  it("takes a caller's pool as it is unless readLane is on, and refuses a readLane that is not a boolean", async () => {
    const schema = schemas.next();
    const connections = async (pool: pg.Pool, name: string): Promise<number> =>
      (await pool.query('SELECT 1 FROM pg_stat_activity WHERE application_name = $1', [name])).rowCount ?? 0;
    const named = (name: string): pg.Pool => {
      const address = new URL(connectionString);
      address.searchParams.set('application_name', name);
      return poolOf({ connectionString: address.toString(), max: 2 });
    };
    for (const readLane of [undefined, true]) {
      const name = `lane_option_${process.pid}_${String(readLane)}`;
      const pool = named(name);
      const store = await createPostgresStore({ pool, schema, ...(readLane === undefined ? {} : { readLane }) });
      try {
        await Promise.all(['a', 'b', 'c'].map((id) => store.getRecord(id)));
        await store.getWorkingMemoryEntry('a', 'key');
        expect(await connections(pool, name)).toBe(pool.totalCount + (readLane ? 1 : 0));
      } finally {
        await store.dispose();
      }
    }
    await expect(
      createPostgresStore({ connectionString, schema, readLane: 'yes' as unknown as boolean }),
    ).rejects.toSatisfy(
      (error: unknown) =>
        HarnessMemoryError.isInstance(error) && error.code === 'STORE_FAILED' && /readLane/.test(error.message),
    );
  });
});
