/**
 * Postgres for tests: the server comes from `HARNESS_TEST_POSTGRES_URL`; each test file gets
 * its own schema names (`hm_test_<pid>_<random>`, with a suffix per store), dropped afterwards.
 * @module
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The test server's URL, or undefined (after a warning saying why the tests skip). */
export function postgresTestUrl(): string | undefined {
  const url = process.env.HARNESS_TEST_POSTGRES_URL;
  if (url) return url;
  console.warn('HARNESS_TEST_POSTGRES_URL is unset: skipping Postgres tests');
  return undefined;
}

/** Unique schema names for one test file, and their removal. */
export interface PostgresTestSchemas {
  readonly url: string;
  /** The file's base name, `hm_test_<pid>_<random>`. */
  readonly base: string;
  /** A new schema name under the base (not created: the stores create it). */
  next(): string;
  /** Drops one schema and everything in it. */
  drop(schema: string): Promise<void>;
  /** Empties every table of a schema but `schema_migrations`: far cheaper than a new schema per test. */
  empty(schema: string): Promise<void>;
  /** Drops every schema under the base, then closes the helper's connection pool. */
  dropAll(): Promise<void>;
}

/** Creates the helper; call `dropAll()` in `afterAll`. */
export function createPostgresTestSchemas(url: string): PostgresTestSchemas {
  const base = `hm_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  let counter = 0;
  const drop = async (schema: string): Promise<void> => {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  };
  return {
    url,
    base,
    next: () => `${base}_${++counter}`,
    drop,
    // DELETE, not TRUNCATE: on these small tables it takes milliseconds where TRUNCATE's new
    // files and exclusive locks take a few hundred.
    async empty(schema) {
      const tables = await pool.query<{ name: string }>(
        `SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 AND tablename <> 'schema_migrations'`,
        [schema],
      );
      if (tables.rows.length > 0)
        await pool.query(tables.rows.map((row) => `DELETE FROM "${schema}"."${row.name}";`).join(' '));
    },
    async dropAll() {
      try {
        const found = await pool.query<{ name: string }>(
          'SELECT nspname AS name FROM pg_namespace WHERE starts_with(nspname, $1)',
          [base],
        );
        for (const row of found.rows) await drop(row.name);
      } finally {
        await pool.end();
      }
    },
  };
}

/** The text of a statement as `query` was handed it (a string or a config object). */
function statementText(config: unknown): string {
  return typeof config === 'string' ? config : (config as { text: string }).text;
}

/**
 * Records the text of every statement sent through `pool.query` from now on (the store's round
 * trips); `before`, when given, runs before each one is sent, and that statement waits for it.
 */
export function recordStatements(pool: pg.Pool, before?: (text: string) => Promise<void>): string[] {
  const statements: string[] = [];
  const original = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const text = statementText(args[0]);
    statements.push(text);
    return before ? before(text).then(() => original(...args)) : original(...args);
  };
  return statements;
}

/** Records the text of every statement sent on a client checked out of `pool` (a transaction's). */
export function recordCheckedOut(pool: pg.Pool): string[] {
  const statements: string[] = [];
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { connect: (...args: unknown[]) => unknown }).connect = (...args: unknown[]) => {
    // pool.query checks out with a callback; a transaction awaits the promise form.
    if (args.length > 0) return connect(...args);
    return (connect() as Promise<pg.PoolClient>).then((client) => {
      const query = client.query.bind(client) as (...queryArgs: unknown[]) => unknown;
      (client as unknown as { query: (...queryArgs: unknown[]) => unknown }).query = (...queryArgs: unknown[]) => {
        statements.push(statementText(queryArgs[0]));
        return query(...queryArgs);
      };
      return client;
    });
  };
  return statements;
}
