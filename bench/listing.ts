/**
 * List latency of the inspector's API (issue 15), SQLite and Postgres side by side: a page of
 * a tenant's scopes at 10,000 scopes (first page, a page from the middle, and a word search),
 * and a page of one scope's observations at 10,000 observations (first page, from the
 * middle, with a word), plus a page of the operation log, and the scope's detail as the
 * inspector polls it (its open operations only) against the same read of its whole log. Postgres tables are analyzed after
 * the bulk fill, as autovacuum would do. Measured through the
 * observational-memory service, as the HTTP routes call it (the HTTP layer adds its own
 * constant cost). Postgres needs `HARNESS_TEST_POSTGRES_URL`; it uses a fresh schema, dropped
 * afterwards.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { resolveScope } from '../src/core/scope.js';
import type { Scope } from '../src/core/scope.js';
import { createObservationalMemory } from '../src/memory/observational-memory.js';
import type { ObservationalMemory } from '../src/memory/observational-memory.js';
import { createPostgresStore } from '../src/storage/postgres/index.js';
import { createSqliteStore } from '../src/storage/sqlite/sqlite-store.js';
import type { MemoryStore } from '../src/storage/store.js';
import { measure, report } from './measure.js';

const SCOPES = 10_000;
const OBSERVATIONS = 10_000;
/** Operations logged in the busy scope besides its bulk import. */
const OPERATIONS = 2_000;
const TARGET = 'p99 reported (issue 15)';

/** Prints the listing figures. */
export async function benchListing(): Promise<void> {
  console.log(
    `\n# Listing (issue 15): pages of 50 at ${SCOPES.toLocaleString('en')} scopes and at ` +
      `${OBSERVATIONS.toLocaleString('en')} observations in one scope`,
  );
  const directory = mkdtempSync(join(tmpdir(), 'harness-memory-bench-listing-'));
  const url = process.env['HARNESS_TEST_POSTGRES_URL'];
  const schema = `hm_bench_list_${process.pid}_${randomBytes(4).toString('hex')}`;
  try {
    const sqlite = createSqliteStore({ path: join(directory, 'listing.db') });
    try {
      await listingFigures('sqlite', sqlite);
    } finally {
      await sqlite.dispose();
    }
    if (!url) {
      console.log('postgres: skipped, HARNESS_TEST_POSTGRES_URL is unset');
      return;
    }
    const postgres = await createPostgresStore({ connectionString: url, schema, max: 8 });
    const admin = new pg.Pool({ connectionString: url, max: 1 });
    try {
      // As autovacuum would after a bulk load: the planner sees the tables as they now are.
      await listingFigures('postgres', postgres, () =>
        admin.query(
          `ANALYZE "${schema}".om_memory_records, "${schema}".om_observations, "${schema}".om_operation_log, ` +
            `"${schema}".working_memory_entries`,
        ),
      );
    } finally {
      await postgres.dispose();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
      await admin.end();
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

async function listingFigures(
  backend: string,
  store: MemoryStore,
  afterFill: () => Promise<unknown> = async () => undefined,
): Promise<void> {
  const memory = createObservationalMemory({ store, defaultEnabled: true });
  const started = process.hrtime.bigint();
  await fillScopes(memory);
  const busy = resolveScope({ tenantId: 'bench-list', conversationId: 'zz-busy', agentId: 'agent' });
  await memory.importObservations(
    busy,
    Array.from({ length: OBSERVATIONS }, (_, index) => ({
      content: `Observation ${index}: the user mentioned topic ${index % 97} while working on task ${index % 13}.`,
      importance: (index % 10) / 10,
    })),
  );
  // Each import is logged as one applied operation: a log as long as a scope's many turns make.
  for (let index = 0; index < OPERATIONS; index++)
    await memory.importObservations(busy, [{ content: `Later fact ${index}.` }]);
  await afterFill();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  console.log(`${backend}: filled in ${seconds.toFixed(1)} s`);

  const middle = (await memory.listScopes('bench-list', { limit: 200 })).nextCursor ?? undefined;
  const options = { samples: 300, warmup: 20 };
  report(
    await measure(`${backend}: scopes, first page`, () => memory.listScopes('bench-list', { limit: 50 }), options),
    TARGET,
  );
  report(
    await measure(
      `${backend}: scopes, a later page`,
      () => memory.listScopes('bench-list', { limit: 50, ...(middle ? { cursor: middle } : {}) }),
      options,
    ),
    TARGET,
  );
  report(
    await measure(
      `${backend}: scopes, word search`,
      () => memory.listScopes('bench-list', { limit: 50, query: 'conv-77' }),
      options,
    ),
    TARGET,
  );
  const laterObservations = await pageCursor(memory, busy);
  report(await measure(`${backend}: observations, first page`, () => memory.observationPage(busy), options), TARGET);
  report(
    await measure(
      `${backend}: observations, a later page`,
      () => memory.observationPage(busy, laterObservations ? { cursor: laterObservations } : {}),
      options,
    ),
    TARGET,
  );
  report(
    await measure(
      `${backend}: observations, word search`,
      () => memory.observationPage(busy, { query: 'topic 42' }),
      options,
    ),
    TARGET,
  );
  report(await measure(`${backend}: operations, first page`, () => memory.operationPage(busy), options), TARGET);
  // The scope's detail (GET /v1/memory/{t}/{c}/{a}), which the inspector polls every 2 s: with the
  // open operations only, as the route reads it, and with the whole operation log.
  const detail = { samples: 100, warmup: 5 };
  const open = await measure(
    `${backend}: scope detail, open operations`,
    () => memory.inspect(busy, { operations: 'open' }),
    detail,
  );
  const whole = await measure(`${backend}: scope detail, every operation`, () => memory.inspect(busy), detail);
  report(open, TARGET);
  report(whole, TARGET);
  console.log(
    `${backend}: scope detail median, every operation / open ones: ${(whole.medianMs / open.medianMs).toFixed(1)}x`,
  );
}

/** The cursor of a page halfway through the busy scope's observations. */
async function pageCursor(memory: ObservationalMemory, scope: Scope): Promise<string | undefined> {
  let cursor: string | undefined;
  for (let page = 0; page < OBSERVATIONS / 200 / 2; page++) {
    cursor =
      (await memory.observationPage(scope, { limit: 200, ...(cursor ? { cursor } : {}) })).nextCursor ?? undefined;
  }
  return cursor;
}

/** 10,000 scopes of one tenant (and a few of another), one observation each, 16 writes at a time. */
async function fillScopes(memory: ObservationalMemory): Promise<void> {
  const write = (tenantId: string, index: number) =>
    memory.importObservations(
      { tenantId, conversationId: `conv-${String(index).padStart(5, '0')}`, agentId: `agent-${index % 3}` },
      [{ content: `fact ${index}` }],
    );
  for (let start = 0; start < SCOPES; start += 16) {
    await Promise.all(
      Array.from({ length: Math.min(16, SCOPES - start) }, (_, offset) => write('bench-list', start + offset)),
    );
  }
  for (let index = 0; index < 100; index++) await write('bench-other', index);
}
