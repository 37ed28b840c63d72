/**
 * The Postgres store's listing and correction: pages of a tenant's scopes, of a scope's
 * observations and operations, and the hand correction of one observation. Words of a search
 * travel as one array parameter, so each page is one prepared statement and one round trip.
 * @module
 */
import type { PoolClient } from 'pg';
import type { MemoryRecord, Observation } from '../../core/observation.js';
import { toObservation, toOperation, toRecord, toScopeSummary } from '../_memory-rows.js';
import type { ObservationRow, OperationRow, RecordRow, ScopeRow, StoreInput } from '../_memory-rows.js';
import { likePattern, planCorrection } from '../correction-plan.js';
import type { MemoryStore, Operation, ScopeListQuery, ScopeSummary } from '../store.js';
import { query, readStatement } from './postgres-connection.js';
import type { Queryable } from './postgres-connection.js';

/** The SQL of the listing half, for one schema prefix. */
function inspectionStatements(s: string) {
  // Every pattern of $words must match: no word may fail to.
  const allWords = (column: string, param: string): string =>
    `NOT EXISTS (SELECT 1 FROM unnest(${param}::text[]) AS word WHERE ${s}hm_fold(${column}) NOT LIKE word ESCAPE '\\')`;
  return {
    findObservations: `SELECT * FROM ${s}om_observations WHERE memory_id = $1 AND seq < $2
      AND ${allWords('content', '$3')} ORDER BY seq DESC LIMIT $4`,
    listOperationPage: `SELECT * FROM ${s}om_operation_log WHERE memory_id = $1 AND scope_sequence < $2
      AND ($3::text IS NULL OR status = $3) ORDER BY scope_sequence DESC LIMIT $4`,
    // The page is chosen first, so the counts are read for its rows only, whatever plan is picked.
    listScopes: `
      SELECT r.memory_id, r.tenant_id, r.conversation_id, r.agent_id, r.enabled, r.observation_count, r.updated_at,
        w.entries, w.entries_updated_at,
        (SELECT count(*) FROM ${s}om_operation_log o WHERE o.memory_id = r.memory_id
          AND o.status IN ('queued', 'processing')) AS pending,
        (SELECT count(*) FROM ${s}om_operation_log o WHERE o.memory_id = r.memory_id AND o.status = 'dead') AS dead
      FROM (
        SELECT * FROM ${s}om_memory_records r
        WHERE r.tenant_id = $1 AND (r.conversation_id COLLATE "C", r.agent_id COLLATE "C") > ($2, $3)
          AND ($4::boolean IS NULL OR COALESCE(r.enabled, $5::boolean) = $4::boolean)
          AND NOT EXISTS (SELECT 1 FROM unnest($6::text[]) AS word
            WHERE ${s}hm_fold(r.conversation_id) NOT LIKE word ESCAPE '\\'
              AND ${s}hm_fold(r.agent_id) NOT LIKE word ESCAPE '\\')
        ORDER BY r.conversation_id COLLATE "C", r.agent_id COLLATE "C" LIMIT $7) r
      CROSS JOIN LATERAL (
        SELECT count(*) FILTER (WHERE e.expires_at IS NULL OR e.expires_at > now()) AS entries,
          max(e.updated_at) FILTER (WHERE e.expires_at IS NULL OR e.expires_at > now()) AS entries_updated_at
        FROM ${s}working_memory_entries e WHERE e.memory_id = r.memory_id) w
      ORDER BY r.conversation_id COLLATE "C", r.agent_id COLLATE "C"`,
    selectObservation: `SELECT * FROM ${s}om_observations WHERE memory_id = $1 AND seq = $2`,
    deleteObservation: `DELETE FROM ${s}om_observations WHERE memory_id = $1 AND seq = $2`,
    replaceObservation: `UPDATE ${s}om_observations SET content = $3, token_count = $4, importance = $5,
      operation_id = $6 WHERE memory_id = $1 AND seq = $2`,
    deleteLinksOf: `DELETE FROM ${s}om_reflection_links WHERE memory_id = $1 AND (first_seq = $2 OR second_seq = $2)
      RETURNING kind`,
    /**
     * $1 memoryId, $2 count delta, $3 active delta, $4 unreflected delta, $5 and $6 the supersessions and
     * contradictions dropped.
     */
    applyCorrection: `UPDATE ${s}om_memory_records SET observation_count = observation_count + $2,
      active_observation_tokens = active_observation_tokens + $3,
      unreflected_observation_tokens = unreflected_observation_tokens + $4,
      supersession_count = supersession_count - $5, contradiction_count = contradiction_count - $6,
      correction_count = correction_count + 1, state_version = state_version + 1, updated_at = now()
      WHERE memory_id = $1 RETURNING *`,
    // Run after applyCorrection: the active total it copies is the corrected one.
    dropReflection: `UPDATE ${s}om_memory_records SET active_reflection = NULL, reflection_structured_json = NULL,
      active_reflection_tokens = NULL, reflection_through_seq = NULL, reflection_created_at = NULL,
      unreflected_observation_tokens = active_observation_tokens
      WHERE memory_id = $1 RETURNING *`,
    selectRecord: `SELECT * FROM ${s}om_memory_records WHERE memory_id = $1`,
  };
}

/** The listing and correction half of the Postgres store. */
export interface PostgresInspection {
  findObservations(
    target: Queryable,
    memoryId: string,
    options: Parameters<MemoryStore['findObservations']>[1],
  ): Promise<Observation[]>;
  listOperationPage(
    target: Queryable,
    memoryId: string,
    options: Parameters<MemoryStore['listOperationPage']>[1],
  ): Promise<Operation[]>;
  listScopes(target: Queryable, query: ScopeListQuery): Promise<ScopeSummary[]>;
  /**
   * Runs in a transaction holding the scope's lock; `logOperation` appends the applied
   * `correct` operation with the payload given.
   */
  correctObservation(
    client: PoolClient,
    input: StoreInput<'correctObservation'>,
    logOperation: (payload: Readonly<Record<string, unknown>>) => Promise<unknown>,
  ): Promise<{ record: MemoryRecord; observation: Observation | null } | undefined>;
}

/** The listing half for the schema behind `prefix` (`"schema".`). */
export function createPostgresInspection(prefix: string): PostgresInspection {
  const sql = inspectionStatements(prefix);
  const patterns = (words: readonly string[] | undefined): string[] => (words ?? []).map(likePattern);
  return {
    findObservations: async (target, memoryId, options) => {
      const result = await readStatement<ObservationRow & Record<string, unknown>>(target, sql.findObservations, [
        memoryId,
        options.beforeSeq ?? Number.MAX_SAFE_INTEGER,
        patterns(options.words),
        options.limit,
      ]);
      return result.rows.map(toObservation);
    },

    listOperationPage: async (target, memoryId, options) => {
      const result = await readStatement<OperationRow & Record<string, unknown>>(target, sql.listOperationPage, [
        memoryId,
        options.beforeSequence ?? Number.MAX_SAFE_INTEGER,
        options.status ?? null,
        options.limit,
      ]);
      return result.rows.map(toOperation);
    },

    listScopes: async (target, scopeQuery) => {
      const result = await readStatement<ScopeRow & Record<string, unknown>>(target, sql.listScopes, [
        scopeQuery.tenantId,
        scopeQuery.after?.conversationId ?? '',
        scopeQuery.after?.agentId ?? '',
        scopeQuery.enabled?.value ?? null,
        scopeQuery.enabled?.whenUnset ?? null,
        patterns(scopeQuery.words),
        scopeQuery.limit,
      ]);
      return result.rows.map(toScopeSummary);
    },

    correctObservation: async (client, input, logOperation) => {
      const { memoryId, seq, operationId } = input;
      const existing = (
        await query<ObservationRow & Record<string, unknown>>(client, sql.selectObservation, [memoryId, seq])
      ).rows[0];
      const record = (await query<RecordRow & Record<string, unknown>>(client, sql.selectRecord, [memoryId])).rows[0];
      if (!existing || !record) return undefined;
      const plan = planCorrection(
        toObservation(existing),
        input.change,
        record.reflection_through_seq ?? 0,
        operationId,
      );
      if (plan.observation === null) await query(client, sql.deleteObservation, [memoryId, seq]);
      else
        await query(client, sql.replaceObservation, [
          memoryId,
          seq,
          plan.observation.content,
          plan.observation.tokenCount,
          plan.observation.importance,
          operationId,
        ]);
      const dropped = plan.dropsLinks
        ? (await query<{ kind: string }>(client, sql.deleteLinksOf, [memoryId, seq])).rows
        : [];
      const corrected = (
        await query<RecordRow & Record<string, unknown>>(client, sql.applyCorrection, [
          memoryId,
          plan.countDelta,
          plan.activeTokensDelta,
          plan.unreflectedTokensDelta,
          dropped.filter((link) => link.kind === 'supersession').length,
          dropped.filter((link) => link.kind === 'contradiction').length,
        ])
      ).rows[0] as RecordRow;
      const updated = plan.dropsReflection
        ? ((await query<RecordRow & Record<string, unknown>>(client, sql.dropReflection, [memoryId]))
            .rows[0] as RecordRow)
        : corrected;
      await logOperation(plan.payload);
      return { record: toRecord(updated), observation: plan.observation };
    },
  };
}
