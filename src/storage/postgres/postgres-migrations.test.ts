import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresTestSchemas, postgresTestUrl } from '../../../test/support/postgres-schema.js';
import { createWorkingMemory } from '../../memory/working-memory.js';
import { POSTGRES_SCHEMA_VERSION } from './postgres-migrations.js';
import { ownPoolSettings } from './postgres-connection.js';
import { createPostgresStore } from './postgres-store.js';

const url = postgresTestUrl();

describe.skipIf(!url)('postgres migrations: privileges', () => {
  const connectionString = url ?? '';
  const schemas = createPostgresTestSchemas(connectionString);
  const role = `hm_test_role_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Pool({ connectionString, max: 1 });
  afterAll(async () => {
    await schemas.dropAll();
    await admin.query(`DROP OWNED BY "${role}"`).catch(() => undefined);
    await admin.query(`DROP ROLE IF EXISTS "${role}"`);
    await admin.end();
  });

  it('migrates a schema the role owns without CREATE on the database', async () => {
    const schema = schemas.next();
    await admin.query(`CREATE ROLE "${role}" LOGIN`);
    await admin.query(`CREATE SCHEMA "${schema}" AUTHORIZATION "${role}"`);
    const asRole = new URL(connectionString);
    asRole.username = role;
    asRole.password = '';
    const database = asRole.pathname.slice(1);
    const { rows } = await admin.query<{ allowed: boolean }>(
      `SELECT has_database_privilege($1, $2, 'CREATE') AS allowed`,
      [role, database],
    );
    expect(rows[0]?.allowed).toBe(false);

    const store = await createPostgresStore({ connectionString: asRole.toString(), schema, max: 2 });
    try {
      const workingMemory = createWorkingMemory({ store });
      await workingMemory.set({ conversationId: 'c1' }, 'plan', 'ship it');
      expect((await workingMemory.get({ conversationId: 'c1' }, 'plan')).value).toBe('"ship it"');
      const version = await admin.query<{ version: number }>(
        `SELECT max(version) AS version FROM "${schema}".schema_migrations`,
      );
      expect(version.rows[0]?.version).toBe(POSTGRES_SCHEMA_VERSION);
    } finally {
      await store.dispose();
    }
  });
});

describe('postgres connection: an unreachable server', () => {
  it('fails to open within connectionTimeoutMs (STORE_FAILED) when the server never answers', async () => {
    const sockets: Socket[] = [];
    // Accepts the connection and never says a word, as a server behind a dead route would.
    const silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    try {
      const started = Date.now();
      await expect(
        createPostgresStore({
          connectionString: `postgres://nobody@127.0.0.1:${port}/nothing`,
          schema: 'unreachable',
          connectionTimeoutMs: 300,
        }),
      ).rejects.toMatchObject({ code: 'STORE_FAILED' });
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it('refuses a connectionTimeoutMs a timer cannot wait', async () => {
    await expect(
      createPostgresStore({ connectionString: 'postgres://x@127.0.0.1:1/x', connectionTimeoutMs: Number.NaN }),
    ).rejects.toMatchObject({ code: 'OPTION_INVALID' });
  });
});

describe.skipIf(!url)('postgres connection: a busy pool', () => {
  it('lets a query wait for a free connection longer than the connect timeout', async () => {
    const pool = new pg.Pool(ownPoolSettings(url ?? '', 1, 200));
    try {
      const held = await pool.connect();
      const waiting = pool.query('SELECT 1 AS one');
      await new Promise((resolve) => setTimeout(resolve, 400));
      held.release();
      expect((await waiting).rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  });
});
