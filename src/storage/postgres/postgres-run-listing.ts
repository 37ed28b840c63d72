/**
 * The Postgres run store's listing: a tenant's runs newest first, from the
 * (tenant_id, created_at, run_id) index, in one prepared statement.
 * @module
 */
import { toRunRecord } from '../_run-rows.js';
import type { RunRow } from '../_run-rows.js';
import type { RunListQuery, RunRecord } from '../run-store.js';
import { readStatement } from './postgres-connection.js';
import type { Queryable } from './postgres-connection.js';

/** Lists a page of runs of the schema behind `prefix` (`"schema".`). */
export function createPostgresRunListing(
  prefix: string,
): (target: Queryable, query: RunListQuery) => Promise<RunRecord[]> {
  const text = `
    SELECT * FROM ${prefix}harness_runs
    WHERE tenant_id = $1
      AND ($2::text IS NULL OR conversation_id = $2)
      AND ($3::text IS NULL OR agent_id = $3)
      AND ($4::text IS NULL OR status = $4)
      AND ($5::timestamptz IS NULL OR (created_at, run_id) < ($5::timestamptz, $6::text))
    ORDER BY created_at DESC, run_id DESC
    LIMIT $7`;
  return async (target, runQuery) => {
    const result = await readStatement<RunRow & Record<string, unknown>>(target, text, [
      runQuery.tenantId,
      runQuery.conversationId ?? null,
      runQuery.agentId ?? null,
      runQuery.status ?? null,
      runQuery.before?.createdAt ?? null,
      runQuery.before?.runId ?? '',
      runQuery.limit,
    ]);
    return result.rows.map(toRunRecord);
  };
}
