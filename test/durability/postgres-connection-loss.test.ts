/**
 * A Postgres connection lost in the middle of a memory-store transaction (a server restart, a
 * failover, `pg_terminate_backend`) fails that call and nothing else: the client's late
 * 'error' event once had no listener, and the process died of it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresTestSchemas, postgresTestUrl } from '../support/postgres-schema.js';
import { jsonLine, runChild } from './durability-support.js';

const url = postgresTestUrl();

describe.skipIf(!url)('postgres: a connection lost inside a transaction', () => {
  const schemas = createPostgresTestSchemas(url ?? '');
  afterAll(() => schemas.dropAll());

  it('fails the call with STORE_FAILED and keeps the process and the store working', async () => {
    const result = await runChild('./postgres-connection-loss-child.ts', {
      HM_PG_URL: url ?? '',
      HM_PG_SCHEMA: schemas.next(),
    });
    expect(result.code, result.stderr).toBe(0);
    expect(jsonLine(result.stdout)).toEqual({ forget: 'STORE_FAILED', after: 'ok' });
  });
});
