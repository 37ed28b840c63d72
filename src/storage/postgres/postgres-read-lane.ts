/**
 * The read lane: short reads of a turn (version checks, a record, the newest history) sent
 * pipelined on one connection of their own, so the reads a turn makes together share one
 * round trip and one server backend instead of taking one pooled connection each.
 * @module
 */
import pg from 'pg';
import type { Pool, QueryResult, QueryResultRow } from 'pg';
import { isConnectionLost, pgCodeOf, query, readStatement } from './postgres-connection.js';

/** A holder's handle on the lane of a pool. */
export interface PostgresReadLane {
  /**
   * Runs one short read-only statement (prepared, with the stores' type parsers). It goes
   * pipelined on the lane's connection; on the pool when the lane has `maxInFlight` reads
   * waiting or cannot connect. A read the lane's connection lost is read again on the pool, and
   * a read on the pool that lost its connection once more on a new one; an error of the
   * statement itself is thrown.
   */
  read<R extends QueryResultRow>(text: string, values: readonly unknown[]): Promise<QueryResult<R>>;
  /** Gives up this holder's share; the last holder's release closes the connection. Idempotent. */
  release(): Promise<void>;
}

/** Tuning of {@link acquireReadLane}; the defaults suit every store. The first holder's options set the lane's. */
export interface ReadLaneOptions {
  /** Reads waiting on the lane before further reads go to the pool. @default 16 */
  readonly maxInFlight?: number;
  /** Idle time after which the lane's connection is closed (reopened on the next read). @default 10000 */
  readonly idleMs?: number;
  /** How long reads go to the pool after the lane failed to connect. @default 1000 */
  readonly retryAfterMs?: number;
}

interface LaneState {
  client: RefClient | undefined;
  holders: number;
  inFlight: number;
  lastUsed: number;
  downUntil: number;
  idleTimer: NodeJS.Timeout | undefined;
  maxInFlight: number;
  readonly idleMs: number;
  readonly retryAfterMs: number;
}

const lanes = new WeakMap<Pool, LaneState>();

/** What pg's client has and its type declarations leave out: holding the process open or not. */
type RefClient = pg.Client & { ref(): void; unref(): void };

/**
 * Takes a share of the pool's read lane, creating it on first use. Stores on the same pool
 * (the memory store and the run store of a harness) share one lane, so a turn's reads of
 * both go together. The lane's connection is opened with the pool's own settings on the
 * first read, is never counted in the pool's `max`, and does not keep the process alive
 * while idle.
 */
export function acquireReadLane(pool: Pool, options: ReadLaneOptions = {}): PostgresReadLane {
  let state = lanes.get(pool);
  if (!state) {
    state = {
      client: undefined,
      holders: 0,
      inFlight: 0,
      lastUsed: 0,
      downUntil: 0,
      idleTimer: undefined,
      maxInFlight: options.maxInFlight ?? 16,
      idleMs: options.idleMs ?? 10_000,
      retryAfterMs: options.retryAfterMs ?? 1_000,
    };
    lanes.set(pool, state);
  }
  const lane = state;
  lane.holders++;
  let released = false;
  return {
    read: (text, values) => readOn(pool, lane, text, values),
    async release() {
      if (released) return;
      released = true;
      if (--lane.holders > 0) return;
      lanes.delete(pool);
      await close(lane, lane.client);
    },
  };
}

/** A lane that sends every read to the pool (the stores' reads when `readLane` is off). */
export function poolReads(pool: Pool): PostgresReadLane {
  return {
    read: (text, values) => readStatement(pool, text, values),
    release: async () => {},
  };
}

async function readOn<R extends QueryResultRow>(
  pool: Pool,
  lane: LaneState,
  text: string,
  values: readonly unknown[],
): Promise<QueryResult<R>> {
  if (lane.holders === 0 || lane.inFlight >= lane.maxInFlight || pool.ending || performance.now() < lane.downUntil)
    return readStatement<R>(pool, text, values);
  const client = lane.client ?? open(pool, lane);
  if (!client.pipeline) {
    // The pool's client class does not pipeline (pg-native, say): reads queued on one
    // connection would wait for each other, so every read goes to the pool instead.
    lane.maxInFlight = 0;
    void close(lane, client);
    return readStatement<R>(pool, text, values);
  }
  if (lane.inFlight++ === 0) client.ref();
  lane.lastUsed = performance.now();
  try {
    return await query<R>(client, text, values);
  } catch (error) {
    // An error with a SQLSTATE that is not a lost connection is the statement's own. Any other
    // (a socket error such as EPIPE, pg's "Connection terminated unexpectedly") is the
    // connection's: a read is safe to make again.
    if (!isConnectionLost(error) && pgCodeOf(error) !== undefined) throw error;
    void close(lane, client);
    return readStatement<R>(pool, text, values);
  } finally {
    if (--lane.inFlight === 0 && lane.client === client) client.unref();
  }
}

function open(pool: Pool, lane: LaneState): RefClient {
  const Client = (pool as Pool & { Client?: typeof pg.Client }).Client ?? pg.Client;
  // The pool hides its password from enumeration: pass it on by name.
  const client = new Client({ ...pool.options, password: pool.options.password, pipeline: true }) as RefClient;
  lane.client = client;
  const drop = (): void => void close(lane, client);
  client.on('error', drop);
  client.on('end', drop);
  client.connect().catch(() => {
    lane.downUntil = performance.now() + lane.retryAfterMs;
    drop();
  });
  lane.idleTimer ??= setInterval(() => {
    if (lane.client && lane.inFlight === 0 && performance.now() - lane.lastUsed >= lane.idleMs)
      void close(lane, lane.client);
  }, lane.idleMs);
  lane.idleTimer.unref();
  return client;
}

async function close(lane: LaneState, client: RefClient | undefined): Promise<void> {
  if (!client) return;
  if (lane.client === client) {
    lane.client = undefined;
    clearInterval(lane.idleTimer);
    lane.idleTimer = undefined;
  }
  client.removeAllListeners('end');
  // Errors after the end (a reset socket) must not become unhandled 'error' events.
  client.removeAllListeners('error');
  client.on('error', () => {});
  // Held open until it has closed: whoever awaits the close (a store's dispose) must see it resolve.
  client.ref();
  await client.end().catch(() => {});
}
