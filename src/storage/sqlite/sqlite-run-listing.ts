/**
 * The SQLite run store's listing: a tenant's runs newest first, from the
 * (tenant_id, created_at, run_id) index.
 * @module
 */
import type { Database } from 'better-sqlite3';
import { toRunRecord } from '../_run-rows.js';
import type { RunRow } from '../_run-rows.js';
import type { RunListQuery, RunRecord } from '../run-store.js';

/** Prepares the listing statement; the result lists a page. */
export function createSqliteRunListing(db: Database): (query: RunListQuery) => RunRecord[] {
  const statement = db.prepare<[Record<string, unknown>], RunRow>(`
    SELECT * FROM harness_runs INDEXED BY harness_runs_tenant_created_idx
    WHERE tenant_id = @tenantId
      AND (@conversationId IS NULL OR conversation_id = @conversationId)
      AND (@agentId IS NULL OR agent_id = @agentId)
      AND (@status IS NULL OR status = @status)
      AND (@beforeAt IS NULL OR created_at < @beforeAt OR (created_at = @beforeAt AND run_id < @beforeId))
    ORDER BY created_at DESC, run_id DESC
    LIMIT @limit`);
  return (query) =>
    statement
      .all({
        tenantId: query.tenantId,
        conversationId: query.conversationId ?? null,
        agentId: query.agentId ?? null,
        status: query.status ?? null,
        beforeAt: query.before?.createdAt ?? null,
        beforeId: query.before?.runId ?? '',
        limit: query.limit,
      })
      .map(toRunRecord);
}
