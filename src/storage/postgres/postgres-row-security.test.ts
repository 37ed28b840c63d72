import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresTestSchemas, postgresTestUrl } from '../../../test/support/postgres-schema.js';
import { scriptedObserver } from '../../../test/support/scripted-models.js';
import { memoryIdOf, resolveScope, scopeOfMemoryId } from '../../core/scope.js';
import { createObservationalMemory } from '../../memory/observational-memory.js';
import { createWorkingMemory } from '../../memory/working-memory.js';
import type { RunStore } from '../run-store.js';
import { ownPoolSettings } from './postgres-connection.js';
import { PINNED_FUNCTIONS, POSTGRES_SCHEMA_VERSION } from './postgres-migrations.js';
import type { MemoryStore } from '../store.js';
import { createPostgresRunStore } from './postgres-run-store.js';
import { createPostgresStore } from './postgres-store.js';
import { newRun } from '../run-store.suite.js';

const url = postgresTestUrl();
/** `acme` and `acme:eu` share a beginning, as tenant ids may: a prefix test must still tell them apart. */
const TENANTS = ['acme', 'acme:eu', 'globex'] as const;

/**
 * The reliability catalogue's E39: a role that neither owns the tables nor has BYPASSRLS sees
 * only the rows of the tenants `harness_tenant_roles` names for it, none without one, cannot
 * write another tenant's rows nor widen what it may reach; the harness's own role (the owner)
 * is not held to it.
 */
describe.skipIf(!url)('postgres: row-level security for roles other than the harness', () => {
  const connectionString = url ?? '';
  const schemas = createPostgresTestSchemas(connectionString);
  const schema = schemas.next();
  const role = `hm_rls_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Pool({ connectionString, max: 1 });
  let restricted: pg.Client;
  let store: MemoryStore;
  let runStore: RunStore;

  beforeAll(async () => {
    store = await createPostgresStore({ connectionString, schema, max: 2 });
    runStore = await createPostgresRunStore({ connectionString, schema, max: 2 });
    const memory = createObservationalMemory({
      store,
      observer: scriptedObserver((input) => `IMPORTANCE:0.6\nnoted ${input.messages.length} messages`),
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    const workingMemory = createWorkingMemory({ store });
    for (const tenantId of TENANTS) {
      const input = { tenantId, conversationId: 'conv-1' };
      const memoryId = memoryIdOf(resolveScope(input));
      await memory.observe({ scope: input, messages: [{ id: 'm1', role: 'user', content: `${tenantId} says hi` }] });
      await workingMemory.set(input, 'plan', `${tenantId} plan`);
      const run = await runStore.createRun({
        ...newRun(`run-${tenantId}`),
        scope: resolveScope(input),
        status: 'running',
      });
      await runStore.appendEvent(run.runId, 'run.started', { tenant: tenantId });
      await runStore.appendMessages(memoryId, [
        { messageId: `${tenantId}-m1`, runId: run.runId, role: 'user', content: 'hello', tokenCount: 1 },
      ]);
      // A forgotten conversation leaves its generations behind.
      const gone = { tenantId, conversationId: 'conv-gone' };
      await memory.observe({ scope: gone, messages: [{ id: 'g1', role: 'user', content: 'soon gone' }] });
      await memory.forget(gone);
      await runStore.forgetConversation(memoryIdOf(resolveScope(gone)));
      // No reflection runs here: its links are written as a reflection would leave them.
      await admin.query(
        `INSERT INTO "${schema}".om_reflection_links (memory_id, kind, first_seq, second_seq, detail, operation_id,
           created_at) VALUES ($1, 'supersession', 2, 1, 'newer', 'op-reflect', now())`,
        [memoryId],
      );
    }
    await admin.query(`CREATE ROLE "${role}" LOGIN`);
    await admin.query(`GRANT USAGE ON SCHEMA "${schema}" TO "${role}"`);
    await admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "${schema}" TO "${role}"`);
    restricted = new pg.Client({ connectionString: asRole(connectionString, role) });
    await restricted.connect();
  });

  afterAll(async () => {
    await restricted?.end();
    await runStore?.dispose();
    await store?.dispose();
    await schemas.dropAll();
    await admin.query(`DROP OWNED BY "${role}"`).catch(() => undefined);
    await admin.query(`DROP ROLE IF EXISTS "${role}"`);
    await admin.end();
  });

  /** Every table of tenant data: all of the schema's but the migrations' and the role mapping. */
  const tables = async (): Promise<string[]> =>
    (
      await admin.query<{ name: string }>(
        `SELECT tablename AS name FROM pg_tables WHERE schemaname = $1
           AND tablename NOT IN ('schema_migrations', 'harness_tenant_roles') ORDER BY tablename`,
        [schema],
      )
    ).rows.map((row) => row.name);

  /** The tenant of each row of `table`, read by the owner (who sees every row) and told apart in code. */
  const tenantsOfRows = async (table: string, client: pg.ClientBase | pg.Pool = admin): Promise<string[]> => {
    if (table === 'harness_run_events') {
      const { rows } = await client.query<{ run_id: string }>(`SELECT run_id FROM "${schema}".${table}`);
      return rows.map((row) => row.run_id.slice('run-'.length)).sort();
    }
    const { rows } = await client.query<{ memory_id: string }>(`SELECT memory_id FROM "${schema}".${table}`);
    return rows.map((row) => scopeOfMemoryId(row.memory_id)?.tenantId ?? `not a memory id: ${row.memory_id}`).sort();
  };

  /** Lets the restricted role reach exactly `tenantIds` (the owner keeps the mapping). */
  const allow = async (...tenantIds: string[]): Promise<void> => {
    await admin.query(`DELETE FROM "${schema}".harness_tenant_roles WHERE role_name = $1`, [role]);
    for (const tenantId of tenantIds)
      await admin.query(`INSERT INTO "${schema}".harness_tenant_roles (role_name, tenant_id) VALUES ($1, $2)`, [
        role,
        tenantId,
      ]);
  };

  it('puts a tenant policy on every table of tenant data, and the owner still sees every tenant', async () => {
    const { rows } = await admin.query<{ name: string; enabled: boolean; policies: string }>(
      `SELECT c.relname AS name, c.relrowsecurity AS enabled,
         (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid)::text AS policies
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname <> 'schema_migrations' ORDER BY c.relname`,
      [schema],
    );
    expect(rows.length).toBeGreaterThanOrEqual(13);
    expect(rows.filter((row) => !row.enabled || row.policies !== '1').map((row) => row.name)).toEqual([]);
    for (const table of await tables()) {
      const found = new Set(await tenantsOfRows(table));
      expect([table, ...found].join(' ')).toBe([table, ...TENANTS].join(' '));
    }
  });

  it('shows a restricted role no row while no tenant is mapped to it, whatever its session sets', async () => {
    await allow();
    await restricted.query(`SELECT set_config('harness.tenant_id', 'acme', false)`);
    for (const table of await tables()) {
      const { rows } = await restricted.query<{ count: string }>(`SELECT count(*) FROM "${schema}".${table}`);
      expect(`${table}: ${rows[0]?.count}`).toBe(`${table}: 0`);
    }
  });

  it("shows a restricted role exactly its tenants' rows, and a cross-tenant SELECT returns 0 rows", async () => {
    for (const allowed of [['acme'], ['acme:eu'], ['globex'], ['acme', 'globex']]) {
      await allow(...allowed);
      for (const table of await tables()) {
        const all = await tenantsOfRows(table);
        const seen = await tenantsOfRows(table, restricted);
        expect(`${allowed.join('+')} ${table}: ${seen.join(',')}`).toBe(
          `${allowed.join('+')} ${table}: ${all.filter((tenant) => allowed.includes(tenant)).join(',')}`,
        );
      }
      for (const other of TENANTS.filter((tenant) => !allowed.includes(tenant))) {
        const { rows } = await restricted.query(
          `SELECT r.memory_id FROM "${schema}".om_memory_records r WHERE r.tenant_id = $1
           UNION ALL SELECT r.memory_id FROM "${schema}".om_memory_records r
           JOIN "${schema}".om_observations o ON o.memory_id = r.memory_id WHERE r.tenant_id = $1`,
          [other],
        );
        expect(rows).toEqual([]);
      }
    }
  });

  it('lets a restricted role read only its own mapping and change none of it', async () => {
    await allow('acme');
    await admin.query(
      `INSERT INTO "${schema}".harness_tenant_roles (role_name, tenant_id) VALUES ('someone_else', 'globex')`,
    );
    const { rows } = await restricted.query<{ role_name: string; tenant_id: string }>(
      `SELECT role_name, tenant_id FROM "${schema}".harness_tenant_roles`,
    );
    expect(rows).toEqual([{ role_name: role, tenant_id: 'acme' }]);
    await expect(
      restricted.query(`INSERT INTO "${schema}".harness_tenant_roles (role_name, tenant_id) VALUES ($1, 'globex')`, [
        role,
      ]),
    ).rejects.toThrow(/row-level security/);
    const changed = await restricted.query(
      `UPDATE "${schema}".harness_tenant_roles SET tenant_id = 'globex' WHERE role_name = $1`,
      [role],
    );
    expect(changed.rowCount).toBe(0);
    expect(await tenantsOfRows('om_observations', restricted)).toEqual(['acme']);
  });

  it("refuses a restricted role's writes to another tenant's rows", async () => {
    await allow('acme');
    const globex = memoryIdOf(resolveScope({ tenantId: 'globex', conversationId: 'conv-1' }));
    await expect(
      restricted.query(`INSERT INTO "${schema}".om_scope_generations (memory_id, generation) VALUES ($1, 1)`, [
        memoryIdOf(resolveScope({ tenantId: 'globex', conversationId: 'conv-new' })),
      ]),
    ).rejects.toThrow(/row-level security/);
    const updated = await restricted.query(
      `UPDATE "${schema}".working_memory_entries SET entry_json = '"stolen"' WHERE memory_id = $1`,
      [globex],
    );
    expect(updated.rowCount).toBe(0);
    const deleted = await restricted.query(`DELETE FROM "${schema}".harness_run_events WHERE run_id = 'run-globex'`);
    expect(deleted.rowCount).toBe(0);
    // Nor may a row of its own tenant name another tenant's scope: the harness would act on it.
    await expect(
      restricted.query(
        `INSERT INTO "${schema}".om_operation_log (memory_id, scope_sequence, operation_id, tenant_id, conversation_id,
           agent_id, run_id, tool_call_id, operation_type, status, payload_json, error_text, attempt, created_at,
           updated_at, available_at)
         SELECT $1, 1000, 'op-planted', 'acme', conversation_id, agent_id, 'run', 'call', 'observe', 'queued', '{}', '',
           0, created_at, updated_at, updated_at
         FROM "${schema}".om_operation_log WHERE tenant_id = 'acme' LIMIT 1`,
        [globex],
      ),
    ).rejects.toThrow(/row-level security/);
    // Moving its own row to another tenant is refused too.
    const acme = memoryIdOf(resolveScope({ tenantId: 'acme', conversationId: 'conv-1' }));
    await expect(
      restricted.query(`UPDATE "${schema}".working_memory_entries SET memory_id = $1 WHERE memory_id = $2`, [
        globex,
        acme,
      ]),
    ).rejects.toThrow(/row-level security/);
    expect(await tenantsOfRows('working_memory_entries')).toEqual([...TENANTS].sort());
  });

  it('lets a restricted role read the schema version and change none of it', async () => {
    const { rows } = await restricted.query<{ version: number }>(
      `SELECT max(version) AS version FROM "${schema}".schema_migrations`,
    );
    expect(rows[0]?.version).toBe(POSTGRES_SCHEMA_VERSION);
    await expect(
      restricted.query(`INSERT INTO "${schema}".schema_migrations (version, description) VALUES (999, 'planted')`),
    ).rejects.toThrow(/row-level security/);
    expect((await restricted.query(`DELETE FROM "${schema}".schema_migrations`)).rowCount).toBe(0);
  });

  it("keeps the harness's function calls its own when another role may create functions in the schema", async () => {
    const functions = await admin.query<{ name: string; config: string[] | null }>(
      `SELECT p.oid::regprocedure::text AS name, p.proconfig AS config FROM pg_proc p
       JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname = ANY($2) ORDER BY 1`,
      [schema, PINNED_FUNCTIONS],
    );
    // Every one of them, wm_set_entry in its two forms.
    expect(functions.rows.length).toBe(PINNED_FUNCTIONS.length + 1);
    expect(
      functions.rows
        .filter((row) => !(row.config ?? []).includes('search_path=pg_catalog, pg_temp'))
        .map((row) => row.name),
    ).toEqual([]);

    // A closer overload of a function the harness calls, planting a mapping when the harness
    // (the owner) runs it; a store opened afterwards prepares its statements with it in place.
    await admin.query(`GRANT CREATE ON SCHEMA "${schema}" TO "${role}"`);
    const texts = Array.from({ length: 11 }, (_, index) => `a${index + 1} text`).join(', ');
    await restricted.query(
      `CREATE FUNCTION "${schema}".wm_set_entry(${texts}) RETURNS jsonb LANGUAGE plpgsql AS $planted$
       BEGIN
         INSERT INTO "${schema}".harness_tenant_roles SELECT DISTINCT '${role}', tenant_id FROM "${schema}".om_memory_records
           ON CONFLICT DO NOTHING;
         RETURN '{}'::jsonb;
       END $planted$`,
    );
    const fresh = await createPostgresStore({ connectionString, schema, max: 1 });
    try {
      await allow('acme');
      const workingMemory = createWorkingMemory({ store: fresh });
      const globex = { tenantId: 'globex', conversationId: 'conv-1' };
      await workingMemory.set(globex, 'plan', 'still the harness');
      expect((await workingMemory.get(globex, 'plan')).value).toBe('"still the harness"');
      const mapped = await admin.query<{ tenant_id: string }>(
        `SELECT tenant_id FROM "${schema}".harness_tenant_roles WHERE role_name = $1`,
        [role],
      );
      expect(mapped.rows.map((row) => row.tenant_id)).toEqual(['acme']);
    } finally {
      await fresh.dispose();
      await admin.query(`DROP FUNCTION "${schema}".wm_set_entry(${texts})`);
      await admin.query(`REVOKE CREATE ON SCHEMA "${schema}" FROM "${role}"`);
    }
  });

  it('leaves the functions of others in a shared schema as they were, aggregates too', async () => {
    const shared = schemas.next();
    await admin.query(`CREATE SCHEMA "${shared}"`);
    await admin.query(`CREATE FUNCTION "${shared}".app_count() RETURNS integer LANGUAGE sql AS 'SELECT 1'`);
    await admin.query(`CREATE AGGREGATE "${shared}".app_min(integer) (sfunc = int4smaller, stype = integer)`);
    const opened = await createPostgresStore({ connectionString, schema: shared, max: 1 });
    try {
      const { rows } = await admin.query<{ name: string; config: string[] | null }>(
        `SELECT p.proname AS name, p.proconfig AS config FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = $1 AND p.proname LIKE 'app_%' ORDER BY 1`,
        [shared],
      );
      expect(rows).toEqual([
        { name: 'app_count', config: null },
        { name: 'app_min', config: null },
      ]);
    } finally {
      await opened.dispose();
    }
  });

  it("starts the stores' own connections with only the built-ins on the search path, keeping other options", async () => {
    const withOptions = new URL(connectionString);
    withOptions.searchParams.set('options', '-c statement_timeout=4321');
    const cases: Array<{ dsn: string; timeout: string; env?: string }> = [
      { dsn: connectionString, timeout: '0' },
      { dsn: withOptions.toString(), timeout: '4321ms' },
      { dsn: connectionString, timeout: '1234ms', env: '-c statement_timeout=1234' },
    ];
    // A connection string new URL() cannot read but pg can: a socket folder as the host.
    const socket = '/var/run/postgresql';
    if (existsSync(`${socket}/.s.PGSQL.5432`))
      cases.push({
        dsn: `postgres://postgres@/test?host=${socket}&options=-c%20statement_timeout%3D2345`,
        timeout: '2345ms',
      });
    for (const { dsn, timeout, env } of cases) {
      const before = process.env['PGOPTIONS'];
      if (env === undefined) delete process.env['PGOPTIONS'];
      else process.env['PGOPTIONS'] = env;
      const pool = new pg.Pool(ownPoolSettings(dsn, 1));
      try {
        const shown = await pool.query<{ search_path: string; statement_timeout: string }>(
          `SELECT current_setting('search_path') AS search_path, current_setting('statement_timeout') AS statement_timeout`,
        );
        expect(shown.rows[0]).toEqual({ search_path: 'pg_catalog,pg_temp', statement_timeout: timeout });
      } finally {
        await pool.end();
        if (before === undefined) delete process.env['PGOPTIONS'];
        else process.env['PGOPTIONS'] = before;
      }
    }
  });

  it('refuses to open the stores as a role held to the policies, naming it and what to do', async () => {
    const owner = (await admin.query<{ name: string }>('SELECT current_user AS name')).rows[0]?.name;
    const opened = createPostgresStore({ connectionString: asRole(connectionString, role), schema, max: 1 });
    await expect(opened).rejects.toMatchObject({
      code: 'STORE_FAILED',
      message: expect.stringContaining(`The database role ${role} is held to the row-level security`),
      data: { schema, role, owner },
    });
    await expect(
      createPostgresRunStore({ connectionString: asRole(connectionString, role), schema, max: 1 }),
    ).rejects.toMatchObject({ code: 'STORE_FAILED', message: expect.stringContaining('grant') });
  });
});

function asRole(connectionString: string, role: string): string {
  const target = new URL(connectionString);
  target.username = role;
  target.password = '';
  return target.toString();
}
