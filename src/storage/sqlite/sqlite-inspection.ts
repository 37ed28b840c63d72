/**
 * The SQLite store's listing and correction: pages of a tenant's scopes, of a scope's
 * observations and operations, and the hand correction of one observation. Every page is
 * read from an index (records by tenant and ids, observations and operations by scope and
 * position).
 * @module
 */
import type { Database, Statement } from 'better-sqlite3';
import type { MemoryRecord, Observation } from '../../core/observation.js';
import type { Scope } from '../../core/scope.js';
import { toObservation, toOperation, toRecord, toScopeSummary } from '../_memory-rows.js';
import type { ObservationRow, OperationRow, RecordRow, ScopeRow, StoreInput } from '../_memory-rows.js';
import { likePattern, planCorrection } from '../correction-plan.js';
import type { MemoryStore, Operation, ScopeListQuery, ScopeSummary } from '../store.js';
import { SQL_NOW } from './sqlite-statements.js';
import type { SqliteStatements } from './sqlite-statements.js';

/** The most words a search may hold (each is one `LIKE` test). */
export const MAX_SEARCH_WORDS = 8;

const SCOPE_COLUMNS = `
  r.memory_id, r.tenant_id, r.conversation_id, r.agent_id, r.enabled, r.observation_count, r.updated_at,
  CASE WHEN w.earliest_expiry <= ${SQL_NOW} THEN (SELECT COUNT(*) FROM working_memory_entries e
    WHERE e.memory_id = r.memory_id AND (e.expires_at IS NULL OR e.expires_at > ${SQL_NOW}))
    ELSE COALESCE(w.entry_count, 0) END AS entries,
  (SELECT COUNT(*) FROM om_operation_log o WHERE o.memory_id = r.memory_id
    AND o.status IN ('queued', 'processing')) AS pending,
  (SELECT COUNT(*) FROM om_operation_log o WHERE o.memory_id = r.memory_id AND o.status = 'dead') AS dead,
  (SELECT MAX(e.updated_at) FROM working_memory_entries e WHERE e.memory_id = r.memory_id
    AND (e.expires_at IS NULL OR e.expires_at > ${SQL_NOW})) AS entries_updated_at`;

/** The listing and correction half of the SQLite store, over its connection and statements. */
export interface SqliteInspection {
  findObservations(memoryId: string, options: Parameters<MemoryStore['findObservations']>[1]): Observation[];
  listOperationPage(memoryId: string, options: Parameters<MemoryStore['listOperationPage']>[1]): Operation[];
  listScopes(query: ScopeListQuery): ScopeSummary[];
  /** Runs inside the store's write transaction. */
  correctObservation(
    input: StoreInput<'correctObservation'>,
    now: string,
  ): { record: MemoryRecord; observation: Observation | null } | undefined;
}

/** Prepares the statements of the listing half, and registers `hm_fold`, the case folding of searches. */
export function createSqliteInspection(db: Database, statements: SqliteStatements): SqliteInspection {
  // SQLite's own lower() folds ASCII only; searches fold the way JavaScript does.
  db.function('hm_fold', { deterministic: true }, (text: unknown) => String(text).toLowerCase());
  const byWords = new Map<string, Statement>();
  const prepared = (key: string, sql: () => string): Statement => {
    let statement = byWords.get(key);
    if (!statement) {
      statement = db.prepare(sql());
      byWords.set(key, statement);
    }
    return statement;
  };
  const wordTests = (column: string, count: number, prefix: string): string =>
    Array.from({ length: count }, (_, index) => ` AND hm_fold(${column}) LIKE @${prefix}${index} ESCAPE '\\'`).join('');
  const wordParams = (words: readonly string[] | undefined, prefix: string): Record<string, string> =>
    Object.fromEntries((words ?? []).map((word, index) => [`${prefix}${index}`, likePattern(word)]));

  const selectObservation = db.prepare<[string, number], ObservationRow>(
    'SELECT * FROM om_observations WHERE memory_id = ? AND seq = ?',
  );
  const deleteObservation = db.prepare<[string, number]>('DELETE FROM om_observations WHERE memory_id = ? AND seq = ?');
  const replaceObservation = db.prepare(
    'UPDATE om_observations SET content = @content, token_count = @tokenCount, importance = @importance, ' +
      'operation_id = @operationId WHERE memory_id = @memoryId AND seq = @seq',
  );
  const deleteLinksOf = db.prepare<[string, number, number], { kind: string }>(
    'DELETE FROM om_reflection_links WHERE memory_id = ? AND (first_seq = ? OR second_seq = ?) RETURNING kind',
  );
  const applyCorrection = db.prepare<[Record<string, unknown>], RecordRow>(`
    UPDATE om_memory_records SET
      observation_count = observation_count + @countDelta,
      active_observation_tokens = active_observation_tokens + @activeDelta,
      unreflected_observation_tokens = unreflected_observation_tokens + @unreflectedDelta,
      supersession_count = supersession_count - @droppedSupersessions,
      contradiction_count = contradiction_count - @droppedContradictions,
      correction_count = correction_count + 1,
      state_version = state_version + 1, updated_at = @now
    WHERE memory_id = @memoryId
    RETURNING memory_id`);
  // Run after applyCorrection: the active total it copies is the corrected one.
  const dropReflection = db.prepare<[string]>(`
    UPDATE om_memory_records SET
      active_reflection = NULL, reflection_structured_json = NULL, active_reflection_tokens = NULL,
      reflection_through_seq = NULL, reflection_created_at = NULL,
      unreflected_observation_tokens = active_observation_tokens
    WHERE memory_id = ?`);

  return {
    findObservations: (memoryId, options) => {
      const count = options.words?.length ?? 0;
      const statement = prepared(`observations:${count}`, () =>
        [
          'SELECT * FROM om_observations WHERE memory_id = @memoryId AND seq < @beforeSeq',
          wordTests('content', count, 'word'),
          ' ORDER BY seq DESC LIMIT @limit',
        ].join(''),
      );
      const rows = statement.all({
        memoryId,
        beforeSeq: options.beforeSeq ?? Number.MAX_SAFE_INTEGER,
        limit: options.limit,
        ...wordParams(options.words, 'word'),
      }) as ObservationRow[];
      return rows.map(toObservation);
    },

    listOperationPage: (memoryId, options) => {
      const statement = prepared(`operations:${options.status === undefined ? 'any' : 'status'}`, () =>
        [
          'SELECT * FROM om_operation_log WHERE memory_id = @memoryId AND scope_sequence < @beforeSequence',
          options.status === undefined ? '' : ' AND status = @status',
          ' ORDER BY scope_sequence DESC LIMIT @limit',
        ].join(''),
      );
      const rows = statement.all({
        memoryId,
        beforeSequence: options.beforeSequence ?? Number.MAX_SAFE_INTEGER,
        limit: options.limit,
        ...(options.status === undefined ? {} : { status: options.status }),
      }) as OperationRow[];
      return rows.map((row): Operation => toOperation(row));
    },

    listScopes: (query) => {
      const count = query.words?.length ?? 0;
      const statement = prepared(`scopes:${count}:${query.enabled === undefined ? 'any' : 'enabled'}`, () =>
        [
          `SELECT ${SCOPE_COLUMNS} FROM om_memory_records r`,
          ' LEFT JOIN working_memory_versions w ON w.memory_id = r.memory_id',
          ' WHERE r.tenant_id = @tenantId',
          ' AND (r.conversation_id > @afterConversation',
          ' OR (r.conversation_id = @afterConversation AND r.agent_id > @afterAgent))',
          query.enabled === undefined ? '' : ' AND COALESCE(r.enabled, @whenUnset) = @enabled',
          count === 0
            ? ''
            : Array.from(
                { length: count },
                (_, index) =>
                  ` AND (hm_fold(r.conversation_id) LIKE @word${index} ESCAPE '\\'` +
                  ` OR hm_fold(r.agent_id) LIKE @word${index} ESCAPE '\\')`,
              ).join(''),
          ' ORDER BY r.conversation_id, r.agent_id LIMIT @limit',
        ].join(''),
      );
      const rows = statement.all({
        tenantId: query.tenantId,
        afterConversation: query.after?.conversationId ?? '',
        afterAgent: query.after?.agentId ?? '',
        limit: query.limit,
        ...(query.enabled === undefined
          ? {}
          : { enabled: query.enabled.value ? 1 : 0, whenUnset: query.enabled.whenUnset ? 1 : 0 }),
        ...wordParams(query.words, 'word'),
      }) as ScopeRow[];
      return rows.map(toScopeSummary);
    },

    correctObservation: (input, now) =>
      correct(
        {
          statements,
          selectObservation,
          deleteObservation,
          replaceObservation,
          deleteLinksOf,
          applyCorrection,
          dropReflection,
        },
        input,
        now,
      ),
  };
}

function scopeColumns(scope: Scope): { tenantId: string; conversationId: string; agentId: string } {
  return { tenantId: scope.tenantId, conversationId: scope.conversationId, agentId: scope.agentId };
}

/** The statements a correction runs. */
interface CorrectionStatements {
  readonly statements: SqliteStatements;
  readonly selectObservation: Statement<[string, number], ObservationRow>;
  readonly deleteObservation: Statement<[string, number]>;
  readonly replaceObservation: Statement;
  readonly deleteLinksOf: Statement<[string, number, number], { kind: string }>;
  readonly applyCorrection: Statement<[Record<string, unknown>], RecordRow>;
  readonly dropReflection: Statement<[string]>;
}

/** Replaces or deletes one observation, inside the store's write transaction; undefined when there is none. */
function correct(
  corrections: CorrectionStatements,
  input: StoreInput<'correctObservation'>,
  now: string,
): { record: MemoryRecord; observation: Observation | null } | undefined {
  const { statements, selectObservation, deleteObservation, replaceObservation, deleteLinksOf } = corrections;
  const { applyCorrection, dropReflection } = corrections;
  const { memoryId, seq, operationId } = input;
  const existingRow = selectObservation.get(memoryId, seq);
  const record = statements.selectRecord.get(memoryId);
  if (!existingRow || !record) return undefined;
  const plan = planCorrection(
    toObservation(existingRow),
    input.change,
    record.reflection_through_seq ?? 0,
    operationId,
  );
  if (plan.observation === null) deleteObservation.run(memoryId, seq);
  else
    replaceObservation.run({
      memoryId,
      seq,
      content: plan.observation.content,
      tokenCount: plan.observation.tokenCount,
      importance: plan.observation.importance,
      operationId,
    });
  const dropped = plan.dropsLinks ? deleteLinksOf.all(memoryId, seq, seq) : [];
  applyCorrection.get({
    memoryId,
    countDelta: plan.countDelta,
    activeDelta: plan.activeTokensDelta,
    unreflectedDelta: plan.unreflectedTokensDelta,
    droppedSupersessions: dropped.filter((link) => link.kind === 'supersession').length,
    droppedContradictions: dropped.filter((link) => link.kind === 'contradiction').length,
    now,
  });
  if (plan.dropsReflection) dropReflection.run(memoryId);
  statements.insertOperation.get({
    operationId,
    memoryId,
    ...scopeColumns(input.scope),
    runId: input.runId,
    toolCallId: input.toolCallId,
    operationType: 'correct',
    status: 'applied',
    payloadJson: JSON.stringify(plan.payload),
    attempt: 1,
    leaseOwner: null,
    leaseExpiresAt: null,
    now,
  });
  const updated = statements.selectRecord.get(memoryId) as RecordRow;
  return { record: toRecord(updated), observation: plan.observation };
}
