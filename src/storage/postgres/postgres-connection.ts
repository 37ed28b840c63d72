/**
 * Connection plumbing shared by the Postgres stores: the pool, the schema prefix, query and
 * transaction helpers, advisory-lock keys and error mapping.
 * @module
 */
import { createHash } from 'node:crypto';
import { POSTGRES_SCHEMA_PATTERN, reservedSchemaProblem } from '../../core/postgres-schema-name.js';
import {
  invalidOption,
  requireObject,
  requireOptions,
  requireString,
  requireTimerMs,
} from '../../core/require-option.js';
import pg from 'pg';
import type { ClientBase, CustomTypesConfig, Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { StoreError } from '../../core/errors.js';
import { isConnectionLost, noteLostConnection, pgCodeOf } from './postgres-errors.js';
import { isoTimeOfJson, isoTimeOfText, TIMESTAMPTZ_OID } from './postgres-time.js';

/** How a Postgres store reaches its database. */
export interface PostgresConnectionOptions {
  /** A libpq-style URL, e.g. `postgres://user@host:5432/db`. Ignored when `pool` is given. */
  connectionString?: string;
  /** An existing pool to use. The store never ends a pool it did not create. */
  pool?: Pool;
  /**
   * The schema holding the tables: `^[a-z_][a-z0-9_]{0,62}$`, created if missing.
   * @default 'public'
   */
  schema?: string;
  /** Size of the pool the store creates (not used with `pool`). @default 10 */
  max?: number;
  /**
   * How long the pool the store creates waits for a new connection before the query fails
   * (`STORE_FAILED`), so an unreachable server does not hang requests (not used with `pool`).
   * @default 10000
   */
  connectionTimeoutMs?: number;
  /**
   * Whether the short reads of a turn go pipelined on one extra connection (the read lane,
   * shared by the stores on one pool) instead of one pooled connection each. The lane's
   * connection is made with the pool's settings but does not pass through the pool's
   * `connect` listeners, so with your own `pool` it is off unless you turn it on.
   * @default true with `connectionString`, false with `pool`
   */
  readLane?: boolean;
}

/** An opened connection: the pool, whether we own it, and the quoted schema prefix. */
export interface PostgresConnection {
  readonly pool: Pool;
  readonly ownsPool: boolean;
  readonly schema: string;
  /** `"schema".`, to put before every table name. */
  readonly prefix: string;
  /** Whether reads take the read lane (see {@link PostgresConnectionOptions.readLane}). */
  readonly readLane: boolean;
}

/** Anything that can run a query: the pool, a client inside a transaction, or the read lane's client. */
export type Queryable = Pool | ClientBase;

const INT8_OID = 20;

/**
 * Per-query type parsers. Passing them with each query, instead of `pg.types.setTypeParser`,
 * leaves other users of `pg` in the same process untouched, and works on a caller's pool.
 * int8 and count() become numbers (our counters stay far below 2^53); timestamptz becomes
 * an ISO-8601 string with milliseconds, as `Date.toISOString()` writes it.
 */
export const PG_TYPES: CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (oid === INT8_OID) return (value: string) => Number(value);
    if (oid === TIMESTAMPTZ_OID) return isoTimeOfText;
    return pg.types.getTypeParser(oid, format ?? 'text');
  }) as CustomTypesConfig['getTypeParser'],
};

/**
 * A row a database function returned as JSON, as the pool would have returned it: JSON writes
 * times with microseconds and an offset, the pool (PG_TYPES) as ISO 8601 with milliseconds.
 */
export function rowFromJson<R extends object>(value: unknown, times: readonly string[]): R {
  const row = { ...(value as Record<string, unknown>) };
  for (const column of times) {
    const time = row[column];
    if (typeof time === 'string') row[column] = isoTimeOfJson(time);
  }
  return row as R;
}

/**
 * Throws unless `schema` is a plain lower-case identifier (it is spliced into SQL, quoted) that
 * Postgres leaves to users: not `pg_*`, which it refuses to create, nor `information_schema`,
 * which pg_dump skips.
 */
export function validateSchemaName(schema: string, store: string): string {
  // The caller's mistake, not a storage failure to retry: OPTION_INVALID.
  if (!POSTGRES_SCHEMA_PATTERN.test(schema)) {
    throw invalidOption(
      store,
      'schema',
      `must match ${POSTGRES_SCHEMA_PATTERN.source} (lower-case letters, digits, underscores; at most 63); got ` +
        JSON.stringify(schema),
      'Use a name such as harness or harness_prod.',
    );
  }
  const why = reservedSchemaProblem(schema);
  if (why !== undefined) {
    throw invalidOption(
      store,
      'schema',
      `${why}; got ${JSON.stringify(schema)}`,
      'Use a name such as harness or harness_prod.',
    );
  }
  return schema;
}

/** Opens (or adopts) a pool for a store. */
export function openPostgresConnection(
  options: PostgresConnectionOptions,
  store: string,
  factory = 'createPostgresStore',
): PostgresConnection {
  requireOptions(factory, options, 'Pass { connectionString } or { pool }.');
  if (options.pool !== undefined)
    requireObject(
      factory,
      'pool',
      options.pool,
      ['query', 'connect'],
      'Pass a pg.Pool, or a connectionString instead.',
    );
  else
    requireString(
      factory,
      'connectionString',
      options.connectionString,
      'Pass a postgres:// URL (for example postgres://user@127.0.0.1:5432/db) or an existing pool.',
    );
  const schema = validateSchemaName(options.schema ?? 'public', store);
  if (options.readLane !== undefined && typeof options.readLane !== 'boolean') {
    throw new StoreError({
      store,
      message: `Option readLane must be true or false; got ${JSON.stringify(options.readLane)}.`,
      data: { option: 'readLane' },
    });
  }
  const max = options.max ?? 10;
  if (!Number.isSafeInteger(max) || max < 1) {
    throw new StoreError({
      store,
      message: `Option max must be a positive integer; got ${max}.`,
      data: { option: 'max' },
    });
  }
  if (options.pool)
    return Object.freeze({
      pool: options.pool,
      ownsPool: false,
      schema,
      prefix: `"${schema}".`,
      readLane: options.readLane ?? false,
    });
  const pool = new pg.Pool(
    ownPoolSettings(
      options.connectionString ?? '',
      max,
      requireTimerMs('createPostgresStore', 'connectionTimeoutMs', options.connectionTimeoutMs, 1),
    ),
  );
  // An idle client whose server connection drops makes the pool emit 'error'; unhandled, that
  // would crash the process. The pool has already discarded the client; the next query reconnects.
  pool.on('error', () => {});
  return Object.freeze({ pool, ownsPool: true, schema, prefix: `"${schema}".`, readLane: options.readLane ?? true });
}

/**
 * The settings of a pool harness-memory opens itself: a connection dropped silently (NAT,
 * failover) is noticed by TCP keepalive, a connect that gets no answer fails after
 * `connectionTimeoutMs`, and a transaction left idle by a stalled client is ended by the
 * server after a minute, so it does not hold a scope's lock for ever. The connect timeout is
 * the client's, not the pool's: the pool's would also fail a query that waits for a free
 * connection of a busy pool.
 */
export function ownPoolSettings(connectionString: string, max: number, connectionTimeoutMs = 10_000): pg.PoolConfig {
  class TimedClient extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      super({ ...config, connectionTimeoutMillis: connectionTimeoutMs });
      // Appended to what pg read from the config, the connection string or PGOPTIONS, which
      // would each replace an `options` given in the config. pg is pinned; a test checks it.
      const parameters = (this as unknown as { connectionParameters: { options?: string } }).connectionParameters;
      parameters.options = [parameters.options, OWN_SEARCH_PATH_OPTION, OWN_ISOLATION_OPTION].filter(Boolean).join(' ');
    }
  }
  return {
    connectionString,
    max,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    idle_in_transaction_session_timeout: 60_000,
    Client: TimedClient,
  };
}

/**
 * The startup option every connection of a pool the stores open sends: only built-in functions
 * and types are then found on the path (the stores name their own objects with the schema), so
 * a function another role creates in a schema on the default path (`public`, writable by every
 * role before Postgres 15) never stands in for a built-in one.
 */
const OWN_SEARCH_PATH_OPTION = '-c search_path=pg_catalog,pg_temp';

/**
 * The other startup option: READ COMMITTED, whatever the role, the database or the connection
 * string make the default. The database functions take the scope's lock and then read what
 * earlier writers committed; under REPEATABLE READ or SERIALIZABLE their snapshot would
 * predate the lock. Sent after the caller's options, so it wins; the space is escaped, as the
 * server splits the options on spaces.
 */
const OWN_ISOLATION_OPTION = '-c default_transaction_isolation=read\\ committed';

/** What every transaction of the stores begins with: see {@link OWN_ISOLATION_OPTION}, for a caller's pool. */
export const BEGIN_READ_COMMITTED = 'BEGIN ISOLATION LEVEL READ COMMITTED';

/** Names of prepared statements, by statement text. */
const statementNames = new Map<string, string>();

/**
 * The name a statement is prepared under on each connection: the same text always gets the
 * same name, so the server parses and plans it once per connection, not on every call.
 */
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `hm_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    statementNames.set(text, name);
  }
  return name;
}

/**
 * Runs one statement with {@link PG_TYPES}. A statement with parameters is prepared once per
 * connection (named); one without (DDL, `BEGIN`) goes as a simple query.
 */
export async function query<R extends QueryResultRow>(
  target: Queryable,
  text: string,
  values: readonly unknown[] = [],
): Promise<QueryResult<R>> {
  if (values.length === 0) return target.query<R>({ text, types: PG_TYPES });
  return target.query<R>({ name: statementName(text), text, values: [...values], types: PG_TYPES });
}

// deadlock_detected and serialization_failure: the transaction did nothing, so it is retried.
const RETRYABLE_CODES = new Set(['40P01', '40001']);
const MAX_ATTEMPTS = 4;

/**
 * Runs `work` in a READ COMMITTED transaction on one client, committing on success and
 * rolling back on any error. Deadlocks and serialization failures are retried a few times.
 * `begin` replaces the `BEGIN` with a simple query that starts with it (say, the `BEGIN` and a
 * lock in one round trip); it must begin with {@link BEGIN_READ_COMMITTED}.
 *
 * A transaction whose connection is lost is not made again (whoever killed it may have meant
 * it): the client is destroyed, and the error says whether the transaction was rolled back
 * (lost before `COMMIT` was sent) or may have committed (lost under the `COMMIT`).
 */
export async function transaction<T>(
  pool: Pool,
  work: (client: PoolClient) => Promise<T>,
  options: { begin?: (client: PoolClient) => string } = {},
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    let broken: Error | undefined;
    let committing = false;
    // The pool takes its own 'error' listener off a client it lends. A connection lost in the
    // transaction (a restart, pg_terminate_backend) fails the statement under way and then
    // emits 'error', which without a listener is an uncaught exception: the process would die.
    const onError = (error: Error): void => {
      broken ??= error;
    };
    client.on('error', onError);
    try {
      await client.query(options.begin ? options.begin(client) : BEGIN_READ_COMMITTED);
      const result = await work(client);
      committing = true;
      await client.query('COMMIT');
      return result;
    } catch (error) {
      if (isConnectionLost(error)) {
        // Nothing can roll back on a lost connection: the server ends its transaction itself.
        broken ??= error as Error;
        noteLostConnection(error, committing ? 'unknown' : 'rolled-back');
        throw error;
      }
      try {
        await client.query('ROLLBACK');
      } catch (rollbackError) {
        // A client that cannot roll back is unusable; release(error) destroys it.
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      }
      if (attempt < MAX_ATTEMPTS && RETRYABLE_CODES.has(pgCodeOf(error) ?? '')) continue;
      throw error;
    } finally {
      client.removeListener('error', onError);
      client.release(broken);
    }
  }
}

/**
 * `<prefix><name>($1::<type 1>, …)`: a call of one of the schema's functions with each
 * parameter cast to the type the function declares. Untyped parameters let Postgres choose
 * among overloads, so a role that may create functions in the schema could add a closer match
 * that would then run with the harness's rights; a call that matches exactly cannot be taken.
 */
export function functionCall(prefix: string, name: string, types: readonly string[]): string {
  return `${prefix}${name}(${types.map((type, index) => `$${index + 1}::${type}`).join(', ')})`;
}

/** A signed 64-bit key (as a decimal string for `::bigint`) derived from `text`. */
export function lockKey64(text: string): string {
  return createHash('sha256').update(text).digest().readBigInt64BE(0).toString();
}

/** A signed 32-bit key derived from `text`. */
export function lockKey32(text: string): number {
  return createHash('sha256').update(text).digest().readInt32BE(0);
}

/**
 * The first key of the per-scope transaction locks of `kind` in `schema` (the second is
 * `hashtext` of the id). The two-int form lives in a different key space from the one-bigint
 * migration lock; the first key is the schema's namespace, so scopes of different schemas
 * never contend. Database functions that take the lock are passed this.
 */
export function scopeLockClass(schema: string, kind: 'memory' | 'conversation'): number {
  return lockKey32(`harness-memory:${kind}:${schema}`);
}

/** SQL taking the per-scope transaction lock on `$<param>` (a memory id); see {@link scopeLockClass}. */
export function scopeLockSql(schema: string, kind: 'memory' | 'conversation', param: number): string {
  return `SELECT pg_advisory_xact_lock(${scopeLockClass(schema, kind)}, hashtext($${param}))`;
}

/** `BEGIN` and the lock of {@link scopeLockSql} for `id` in one simple query (the id quoted by the client). */
export function beginWithScopeLock(
  schema: string,
  kind: 'memory' | 'conversation',
  id: string,
  client: PoolClient,
): string {
  return (
    `${BEGIN_READ_COMMITTED}; SELECT pg_advisory_xact_lock(${scopeLockClass(schema, kind)}, ` +
    `hashtext(${client.escapeLiteral(id)}))`
  );
}

/**
 * `SELECT <call> AS result` that calls only in a READ COMMITTED transaction, and says which it
 * was (`read_committed`). For a database function that takes a scope's lock and then reads:
 * under a stricter level its snapshot would predate the lock. The pools the stores open always
 * start in READ COMMITTED; a caller's pool may not. Run it with {@link callReadCommitted}.
 */
export function readCommittedCall(call: string): string {
  const level = `current_setting('transaction_isolation') = 'read committed'`;
  return `SELECT ${level} AS read_committed, CASE WHEN ${level} THEN ${call} END AS result`;
}

/**
 * Runs a {@link readCommittedCall} statement: one round trip in READ COMMITTED; on a
 * connection that defaults to another level (where it called nothing), again inside a
 * READ COMMITTED transaction.
 */
export async function callReadCommitted<R extends QueryResultRow>(
  pool: Pool,
  text: string,
  values: readonly unknown[],
): Promise<QueryResult<R>> {
  let result: QueryResult<R & { read_committed: boolean }>;
  try {
    result = await query<R & { read_committed: boolean }>(pool, text, values);
  } catch (error) {
    // The functions called this way write: not made again, the answer may have been lost after the commit.
    noteLostConnection(error, 'unknown');
    throw error;
  }
  if (result.rows[0]?.read_committed !== false) return result;
  return transaction(pool, (client) => query<R>(client, text, values));
}

/**
 * Runs one statement that is a write of its own (an implicit transaction). On a caller's pool
 * that defaults to REPEATABLE READ or SERIALIZABLE a concurrent write of the same rows fails it
 * with a serialization failure, which leaves it undone: it is then made again in a READ
 * COMMITTED transaction, where that cannot happen (a deadlock is retried there too).
 */
export async function writeStatement<R extends QueryResultRow>(
  pool: Pool,
  text: string,
  values: readonly unknown[] = [],
): Promise<QueryResult<R>> {
  try {
    return await query<R>(pool, text, values);
  } catch (error) {
    // Not made again on a lost connection: the write may have committed before its answer was lost.
    noteLostConnection(error, 'unknown');
    if (!RETRYABLE_CODES.has(pgCodeOf(error) ?? '')) throw error;
    return transaction(pool, (client) => query<R>(client, text, values));
  }
}

/**
 * Runs one read-only statement (a `SELECT`, or a call of a function that only reads). On a pool,
 * a read whose connection was lost before its answer came (a killed backend, a failover, an
 * idle-connection killer, a restarted pgbouncer) is made again on a new connection, once: the
 * pool destroyed the lost client, and idle clients the same event cut off, which fail at once,
 * are destroyed on the way (at most as many as the pool held idle). On a client (a caller's
 * transaction) and after any other error, nothing is made again. The normal path is the one
 * round trip of {@link query}.
 */
export async function readStatement<R extends QueryResultRow>(
  target: Queryable,
  text: string,
  values: readonly unknown[] = [],
): Promise<QueryResult<R>> {
  try {
    return await query<R>(target, text, values);
  } catch (error) {
    if (!isConnectionLost(error) || !isPool(target)) throw error;
    return readAgain<R>(target, text, values);
  }
}

async function readAgain<R extends QueryResultRow>(
  pool: Pool,
  text: string,
  values: readonly unknown[],
): Promise<QueryResult<R>> {
  let stale = pool.idleCount;
  for (;;) {
    try {
      return await query<R>(pool, text, values);
    } catch (error) {
      if (!isConnectionLost(error) || stale-- <= 0) {
        noteLostConnection(error, 'read');
        throw error;
      }
    }
  }
}

// A pool has counts of its clients; a client (pg.Client, a PoolClient) has none.
function isPool(target: Queryable): target is Pool {
  return typeof (target as Partial<Pool>).idleCount === 'number';
}

export { isConnectionLost, pgCodeOf, toStoreError } from './postgres-errors.js';
export { disposedError } from '../_store-guard.js';
