/**
 * Every statement of the SQLite store, prepared once per connection. Times come from the
 * database clock: each transaction reads `now` once and passes it to the statements.
 * @module
 */
import type { Database, Statement } from 'better-sqlite3';
import type {
  MarkerRow,
  MessageRow,
  ObservationRow,
  OperationRow,
  RecordRow,
  ReflectionLinkRow,
  WorkingMemoryRow,
} from '../_memory-rows.js';

/** SQL expression for the database clock as ISO-8601 UTC with milliseconds (`Date.toISOString()` format). */
export const SQL_NOW = `strftime('%Y-%m-%dT%H:%M:%fZ','now')`;

type Named<T> = [T];

/** Where an operation sits in the log. */
export interface OperationKey {
  readonly memory_id: string;
  readonly scope_sequence: number;
}

/** A claim's candidate, and whether it is queued or a processing one whose lease expired. */
export interface ClaimCandidate extends OperationKey {
  readonly status: 'queued' | 'processing';
}

/** The prepared statements of one connection. */
export interface SqliteStatements {
  /** The database clock, read once per transaction. */
  readonly now: Statement<[], string>;

  readonly insertRecordIfMissing: Statement<
    Named<{ memoryId: string; tenantId: string; conversationId: string; agentId: string; now: string }>
  >;
  readonly selectRecord: RecordRowStatement<[string]>;
  readonly updateSettings: RecordRowStatement<
    Named<{ memoryId: string; stateVersion: number; enabled: number; configJson: string; now: string }>
  >;
  readonly updateLastMessageSeq: RecordRowStatement<
    Named<{
      memoryId: string;
      stateVersion: number;
      lastMessageSeq: number;
      clearedThrough: number;
      addedTokens: number;
      now: string;
    }>
  >;
  readonly applyObservations: RecordRowStatement<
    Named<{
      memoryId: string;
      stateVersion: number;
      throughSeq: number;
      count: number;
      lastObservationSeq: number;
      tokens: number;
      now: string;
    }>
  >;
  readonly applyReflection: RecordRowStatement<
    Named<{
      memoryId: string;
      stateVersion: number;
      raw: string;
      structuredJson: string;
      tokenCount: number;
      throughSeq: number;
      createdAt: string;
      addedSupersessions: number;
      addedContradictions: number;
      rejected: number;
      now: string;
    }>
  >;
  /** Counts links restored without a reflection (an import's `restore`). */
  readonly addLinkCounts: RecordRowStatement<
    Named<{
      memoryId: string;
      stateVersion: number;
      addedSupersessions: number;
      addedContradictions: number;
      rejected: number;
      now: string;
    }>
  >;
  /** Adds a supersession or contradiction to the scope's set; no change when the pair is there already. */
  readonly insertReflectionLink: Statement<Named<ReflectionLinkRow>>;
  readonly listReflectionLinks: Statement<[string], ReflectionLinkRow>;
  /** The scope's generation; none before its first forget. */
  readonly selectScopeGeneration: Statement<[string], number>;
  /** $1 memoryId, $2 the new generation. */
  readonly writeScopeGeneration: Statement<[string, number]>;

  readonly insertMessage: Statement<
    Named<{
      memoryId: string;
      seq: number;
      messageKey: string;
      role: string;
      name: string;
      toolCallId: string;
      content: string;
      tokenCount: number;
    }>
  >;
  readonly listUnobservedMessages: Statement<Named<{ memoryId: string; throughSeq: number }>, MessageRow>;
  readonly markMessagesObserved: Statement<[string, number, number]>;

  readonly insertObservation: Statement<Named<ObservationRow>>;
  readonly listObservations: Statement<[string, number], ObservationRow>;
  /** Written as JSON text. */
  readonly insertMarker: Statement<Named<MarkerRow & { payload_json: string }>>;
  readonly listMarkers: Statement<[string], MarkerRow>;

  readonly insertOperation: Statement<
    Named<{
      operationId: string;
      memoryId: string;
      tenantId: string;
      conversationId: string;
      agentId: string;
      runId: string;
      toolCallId: string;
      operationType: string;
      status: string;
      payloadJson: string;
      attempt: number;
      leaseOwner: string | null;
      leaseExpiresAt: string | null;
      now: string;
    }>,
    OperationRow
  >;
  /** 1 when the scope has a queued or processing operation. */
  readonly hasPendingOperation: Statement<[string], number>;
  /**
   * The scope's head (its processing operation, else its oldest queued one) when a claim may
   * take it: queued and available, or processing under a lease that expired by `now` (its
   * holder died or stalled), which the scope's claim takes over.
   */
  readonly claimCandidateOfScope: Statement<Named<{ now: string; memoryId: string }>, ClaimCandidate>;
  /** The oldest claimable among the 64 oldest available queued operations: the usual case, at once. */
  readonly claimCandidateOfAnyScope: Statement<Named<{ now: string }>, OperationKey>;
  /**
   * The oldest claimable operation when those 64 hold none, found scope by scope (each
   * scope's first queued operation is its only candidate), so its cost follows the number of
   * scopes with pending operations, not how long their queues are.
   */
  readonly claimHeadOfAnyScope: Statement<Named<{ now: string }>, OperationKey>;
  readonly claimOperation: Statement<
    Named<{ memoryId: string; scopeSequence: number; leaseOwner: string; leaseExpiresAt: string; now: string }>,
    OperationRow
  >;
  /** Claims a processing operation whose lease expired by `now` again, for a new holder. */
  readonly takeOverOperation: Statement<
    Named<{ memoryId: string; scopeSequence: number; leaseOwner: string; leaseExpiresAt: string; now: string }>,
    OperationRow
  >;
  /**
   * Ends a lease: only the holder, only before expiry by the database clock. The operation
   * is found among its scope's pending ones: there is no index on operation ids. `run()`
   * when the row is not needed.
   */
  readonly finishLeasedOperation: Statement<
    Named<{
      operationId: string;
      memoryId: string;
      leaseOwner: string;
      status: string;
      errorText: string;
      availableAt: string | null;
      /** 1 to take the attempt back (it never started), else 0. */
      refund: number;
      now: string;
    }>,
    OperationRow
  >;
  readonly requeueStaleOperations: Statement<Named<{ now: string; cutoff: string }>>;
  /** A dead operation back to `queued` at the end of its scope's log, attempts reset. */
  readonly retryDeadOperation: Statement<Named<{ memoryId: string; operationId: string; now: string }>, OperationRow>;
  readonly countDeadOperationsOfScope: Statement<[string], number>;
  readonly listOperations: Statement<[string], OperationRow>;
  readonly listOpenOperations: Statement<[{ memoryId: string }], OperationRow>;
  readonly countPendingOperations: Statement<[], number>;
  readonly countPendingOperationsOfScope: Statement<[string], number>;

  /** The entry, unless it expired. */
  readonly selectEntry: Statement<[string, string], WorkingMemoryRow>;
  /**
   * What a set decides from, in one step: the scope's entry count and bytes (null without a
   * usage row), the entry's bytes and creation time (null when the key is absent), now, the
   * scope's version and its earliest expiry (null when no entry expires).
   */
  readonly entrySetBasis: Statement<
    Named<{ memoryId: string; key: string }>,
    [number | null, number | null, number | null, string | null, string, number | null, string | null]
  >;
  /** `[entry_count, total_bytes, earliest_expiry, now]` of the scope's working memory. */
  readonly workingMemoryUsage: Statement<[string], [number, number, string | null, string]>;
  /** Stores the scope's entry count, bytes and earliest expiry with a new version. */
  readonly writeWorkingMemoryUsage: Statement<[string, number, number, number, string | null]>;
  /**
   * Stores the scope's entry count and bytes with a new version, its earliest expiry as it
   * was (a scope without a usage row gets none).
   */
  readonly writeWorkingMemoryUsageKeepingExpiry: Statement<[string, number, number, number]>;
  /** Creates or replaces an entry with its expiry; a replaced one keeps its `created_at`. */
  readonly upsertEntry: Statement<
    Named<{ memoryId: string; key: string; valueJson: string; now: string; expiresAt: string | null }>
  >;
  /**
   * Replaces an entry known to exist, as `[entry_json, updated_at, expires_at, memory_id, entry_key]`;
   * its `created_at` stays.
   */
  readonly replaceEntry: Statement<[string, string, string | null, string, string]>;
  /** Deletes an entry; returns `[bytes, expires_at]`, none when the key was absent. */
  readonly deleteEntry: Statement<[string, string], [number, string | null]>;
  /** Deletes the scope's entries expired at the time given; returns the bytes of each. */
  readonly purgeExpiredEntries: Statement<[string, string], number>;
  /** The earliest expiry among the scope's entries, null when none expires. */
  readonly selectEarliestExpiry: Statement<[string], string | null>;
  readonly selectWorkingMemoryVersion: Statement<[string], number>;
  /**
   * Unexpired rows as `[entry_key, entry_json, created_at, updated_at, expires_at]`: read
   * every turn, so no per-row objects.
   */
  readonly listEntries: Statement<[string], [string, string, string, string, string | null]>;

  /** One `DELETE … WHERE memory_id = ?` per table. */
  readonly forgetScope: readonly Statement<[string]>[];
}

// A scope's next queued operation, when no other of its operations is processing and it is
// the oldest queued one: operations of one scope run strictly in sequence order. The
// repeated `status IN ('queued', 'processing')` lets SQLite use the partial index of pending
// operations, which it only does when the query names the index's condition.
const PENDING = `status IN ('queued', 'processing')`;
// The error text of an operation whose lease expired while processing, requeued or taken over.
const STALE_REQUEUED = 'requeued after stale processing operation';
const CLAIMABLE = `
  q.status = 'queued' AND q.available_at <= @now
  AND NOT EXISTS (SELECT 1 FROM om_operation_log AS p WHERE p.memory_id = q.memory_id AND p.${PENDING} AND p.status =
    'processing')
  AND NOT EXISTS (SELECT 1 FROM om_operation_log AS o WHERE o.memory_id = q.memory_id AND o.${PENDING} AND o.status =
    'queued' AND o.scope_sequence < q.scope_sequence)`;

// An entry readers see: its expiry, when it has one, is later than now (the same text format).
const UNEXPIRED = `(expires_at IS NULL OR expires_at > ${SQL_NOW})`;

/** A working-memory entry's size for the limits: the UTF-8 bytes of its key and value. */
export const ENTRY_BYTES = 'length(CAST(entry_key AS BLOB)) + length(CAST(entry_json AS BLOB))';

// The state_version in WHERE is the compare-and-swap: no row comes back if it moved.
const BUMP =
  `state_version = state_version + 1, updated_at = @now WHERE memory_id = @memoryId AND ` +
  `state_version = @stateVersion RETURNING *`;

/** A statement whose rows are `om_memory_records` rows. */
export interface RecordRowStatement<P extends unknown[]> {
  get(...params: P): RecordRow | undefined;
}

// Record rows are read several times per observe and once per turn. Read as arrays and
// mapped by column position, they skip better-sqlite3's lookup of every column name in
// every row.
function recordRows<P extends unknown[]>(statement: Statement<P, unknown[]>): RecordRowStatement<P> {
  const names = statement.columns().map((column) => column.name);
  const at = (name: keyof RecordRow): number => {
    const index = names.indexOf(name);
    if (index < 0) throw new Error(`om_memory_records has no column ${name}.`);
    return index;
  };
  const p = {
    memoryId: at('memory_id'),
    tenantId: at('tenant_id'),
    conversationId: at('conversation_id'),
    agentId: at('agent_id'),
    enabled: at('enabled'),
    stateVersion: at('state_version'),
    configJson: at('config_json'),
    observedThrough: at('observed_through_message_seq'),
    lastMessageSeq: at('last_message_seq'),
    unobservedTokens: at('unobserved_message_tokens'),
    clearedThrough: at('messages_cleared_through_seq'),
    observationCount: at('observation_count'),
    lastObservationSeq: at('last_observation_seq'),
    activeTokens: at('active_observation_tokens'),
    unreflectedTokens: at('unreflected_observation_tokens'),
    reflection: at('active_reflection'),
    reflectionTokens: at('active_reflection_tokens'),
    structured: at('reflection_structured_json'),
    reflectionThrough: at('reflection_through_seq'),
    reflectionCreatedAt: at('reflection_created_at'),
    supersessionCount: at('supersession_count'),
    contradictionCount: at('contradiction_count'),
    rejectedReferenceCount: at('rejected_reference_count'),
    correctionCount: at('correction_count'),
    createdAt: at('created_at'),
    updatedAt: at('updated_at'),
  };
  statement.raw(true);
  return {
    get: (...params) => {
      const v = statement.get(...params);
      if (v === undefined) return undefined;
      return {
        memory_id: v[p.memoryId] as string,
        tenant_id: v[p.tenantId] as string,
        conversation_id: v[p.conversationId] as string,
        agent_id: v[p.agentId] as string,
        enabled: v[p.enabled] as number | null,
        state_version: v[p.stateVersion] as number,
        config_json: v[p.configJson],
        observed_through_message_seq: v[p.observedThrough] as number,
        last_message_seq: v[p.lastMessageSeq] as number,
        unobserved_message_tokens: v[p.unobservedTokens] as number,
        messages_cleared_through_seq: v[p.clearedThrough] as number,
        observation_count: v[p.observationCount] as number,
        last_observation_seq: v[p.lastObservationSeq] as number,
        active_observation_tokens: v[p.activeTokens] as number,
        unreflected_observation_tokens: v[p.unreflectedTokens] as number,
        active_reflection: v[p.reflection] as string | null,
        active_reflection_tokens: v[p.reflectionTokens] as number | null,
        reflection_structured_json: v[p.structured],
        reflection_through_seq: v[p.reflectionThrough] as number | null,
        reflection_created_at: v[p.reflectionCreatedAt] as string | null,
        supersession_count: v[p.supersessionCount] as number,
        contradiction_count: v[p.contradictionCount] as number,
        rejected_reference_count: v[p.rejectedReferenceCount] as number,
        correction_count: v[p.correctionCount] as number,
        created_at: v[p.createdAt] as string,
        updated_at: v[p.updatedAt] as string,
      };
    },
  };
}

/** Prepares every statement; call after the migrations. */
export function prepareStatements(db: Database): SqliteStatements {
  // Row and parameter types come from SqliteStatements; better-sqlite3 cannot check them.
  const prepare = <P extends unknown[], R = unknown>(sql: string): Statement<P, R> =>
    db.prepare(sql) as unknown as Statement<P, R>;
  const records = <P extends unknown[]>(sql: string): RecordRowStatement<P> => recordRows(prepare<P, unknown[]>(sql));
  const pluck = <P extends unknown[], R>(sql: string): Statement<P, R> => prepare<P, R>(sql).pluck();
  const statements: SqliteStatements = {
    now: pluck(`SELECT ${SQL_NOW}`),

    insertRecordIfMissing: prepare(`
      INSERT INTO om_memory_records (memory_id, tenant_id, conversation_id, agent_id, enabled, state_version,
        config_json, created_at, updated_at)
      VALUES (@memoryId, @tenantId, @conversationId, @agentId, NULL, 1, '{}', @now, @now)
      ON CONFLICT DO NOTHING`),
    selectRecord: records('SELECT * FROM om_memory_records WHERE memory_id = ?'),
    updateSettings: records(`UPDATE om_memory_records SET enabled = @enabled, config_json = @configJson, ${BUMP}`),
    updateLastMessageSeq: records(
      `UPDATE om_memory_records SET last_message_seq = @lastMessageSeq, messages_cleared_through_seq = ` +
        `@clearedThrough, unobserved_message_tokens = unobserved_message_tokens + @addedTokens, ${BUMP}`,
    ),
    applyObservations: records(`
      UPDATE om_memory_records SET
        observed_through_message_seq = @throughSeq,
        unobserved_message_tokens = (SELECT COALESCE(SUM(token_count), 0) FROM om_messages WHERE memory_id = @memoryId
          AND seq > @throughSeq),
        observation_count = observation_count + @count,
        last_observation_seq = @lastObservationSeq,
        active_observation_tokens = active_observation_tokens + @tokens,
        unreflected_observation_tokens = unreflected_observation_tokens + @tokens,
        ${BUMP}`),
    applyReflection: records(`
      UPDATE om_memory_records SET
        active_reflection = @raw,
        reflection_structured_json = @structuredJson,
        active_reflection_tokens = @tokenCount,
        reflection_through_seq = @throughSeq,
        reflection_created_at = @createdAt,
        unreflected_observation_tokens = (SELECT COALESCE(SUM(token_count), 0) FROM om_observations WHERE memory_id =
          @memoryId AND seq > @throughSeq),
        supersession_count = supersession_count + @addedSupersessions,
        contradiction_count = contradiction_count + @addedContradictions,
        rejected_reference_count = rejected_reference_count + @rejected,
        ${BUMP}`),
    addLinkCounts: records(`
      UPDATE om_memory_records SET
        supersession_count = supersession_count + @addedSupersessions,
        contradiction_count = contradiction_count + @addedContradictions,
        rejected_reference_count = rejected_reference_count + @rejected,
        ${BUMP}`),
    insertReflectionLink: prepare(`
      INSERT INTO om_reflection_links (memory_id, kind, first_seq, second_seq, detail, operation_id, created_at)
      VALUES (@memory_id, @kind, @first_seq, @second_seq, @detail, @operation_id, @created_at)
      ON CONFLICT DO NOTHING`),
    listReflectionLinks: prepare('SELECT * FROM om_reflection_links WHERE memory_id = ?'),
    selectScopeGeneration: pluck('SELECT generation FROM om_scope_generations WHERE memory_id = ?'),
    writeScopeGeneration: prepare(
      `INSERT INTO om_scope_generations (memory_id, generation) VALUES (?, ?) ON CONFLICT (memory_id) DO ` +
        `UPDATE SET generation = excluded.generation`,
    ),

    insertMessage: prepare(`
      INSERT INTO om_messages (memory_id, seq, message_key, role, name, tool_call_id, content, token_count, observed)
      VALUES (@memoryId, @seq, @messageKey, @role, @name, @toolCallId, @content, @tokenCount, 0)
      ON CONFLICT (memory_id, message_key) DO NOTHING`),
    listUnobservedMessages: prepare(`
      SELECT m.* FROM om_messages AS m JOIN om_memory_records AS r ON r.memory_id = m.memory_id
      WHERE m.memory_id = @memoryId AND m.seq > r.observed_through_message_seq AND m.seq <= @throughSeq
      ORDER BY m.seq`),
    markMessagesObserved: prepare(
      `UPDATE om_messages SET observed = 1, content = '' WHERE memory_id = ? AND seq > ? AND seq <= ? AND observed = 0`,
    ),

    insertObservation: prepare(`
      INSERT INTO om_observations (memory_id, seq, content, token_count, importance, created_at, source_start_seq,
        source_end_seq, source, source_seqs_json, operation_id)
      VALUES (@memory_id, @seq, @content, @token_count, @importance, @created_at, @source_start_seq, @source_end_seq,
        @source, @source_seqs_json, @operation_id)`),
    listObservations: prepare('SELECT * FROM om_observations WHERE memory_id = ? AND seq > ? ORDER BY seq'),
    insertMarker: prepare(`
      INSERT INTO om_markers (memory_id, marker_position, marker_id, marker_type, cycle_id, message_index_start,
        message_index_end, token_count, payload_json, created_at)
      SELECT @memory_id, COALESCE(MAX(marker_position), 0) + 1, @marker_id, @marker_type, @cycle_id,
        @message_index_start, @message_index_end, @token_count, @payload_json, @created_at
      FROM om_markers WHERE memory_id = @memory_id`),
    // marker_position is insertion order; created_at can tie within a transaction.
    listMarkers: prepare('SELECT * FROM om_markers WHERE memory_id = ? ORDER BY marker_position'),

    insertOperation: prepare(`
      INSERT INTO om_operation_log (
        operation_id, memory_id, tenant_id, conversation_id, agent_id, run_id, tool_call_id, scope_sequence,
        operation_type, status, payload_json, error_text, attempt, lease_owner, lease_expires_at, available_at,
          created_at, updated_at)
      SELECT @operationId, @memoryId, @tenantId, @conversationId, @agentId, @runId, @toolCallId,
        COALESCE(MAX(scope_sequence), 0) + 1,
        @operationType, @status, @payloadJson, '', @attempt, @leaseOwner, @leaseExpiresAt, @now, @now, @now
      FROM om_operation_log WHERE memory_id = @memoryId
      RETURNING *`),
    hasPendingOperation: pluck(
      `SELECT 1 FROM om_operation_log INDEXED BY om_operation_log_pending_idx WHERE memory_id = ? AND ` +
        `${PENDING} LIMIT 1`,
    ),
    // Without INDEXED BY the planner walks the scope's whole history through the primary key.
    // The index's order ('processing' before 'queued', then the sequence) gives the head first.
    claimCandidateOfScope: prepare(`
      SELECT h.memory_id, h.scope_sequence, h.status FROM (
        SELECT memory_id, scope_sequence, status, available_at, lease_expires_at
        FROM om_operation_log INDEXED BY om_operation_log_pending_idx
        WHERE memory_id = @memoryId AND ${PENDING} ORDER BY status, scope_sequence LIMIT 1) AS h
      WHERE (h.status = 'queued' AND h.available_at <= @now)
        OR (h.status = 'processing' AND h.lease_expires_at <= @now)`),
    // Oldest available first: the order of the partial index of queued operations. Read whole,
    // a backlog queued behind scopes whose first operation waits (a backoff, an open circuit)
    // cost a pass over every row at each poll: 60 ms at 100,000 queued.
    claimCandidateOfAnyScope: prepare(`
      SELECT q.memory_id, q.scope_sequence FROM (
        SELECT memory_id, scope_sequence, status, available_at, created_at
        FROM om_operation_log INDEXED BY om_operation_log_queued_idx
        WHERE status = 'queued' AND available_at <= @now ORDER BY available_at, created_at LIMIT 64) AS q
      WHERE ${CLAIMABLE} ORDER BY q.available_at, q.created_at LIMIT 1`),
    // Walks the scopes with pending operations through their index, one seek each.
    claimHeadOfAnyScope: prepare(`
      WITH RECURSIVE scopes(m) AS (
        SELECT (SELECT memory_id FROM om_operation_log INDEXED BY om_operation_log_pending_idx
          WHERE ${PENDING} ORDER BY memory_id LIMIT 1)
        UNION ALL
        SELECT (SELECT memory_id FROM om_operation_log INDEXED BY om_operation_log_pending_idx
          WHERE memory_id > scopes.m AND ${PENDING} ORDER BY memory_id LIMIT 1)
        FROM scopes WHERE scopes.m IS NOT NULL
      )
      SELECT q.memory_id, q.scope_sequence FROM scopes JOIN om_operation_log AS q
        ON q.memory_id = scopes.m AND q.scope_sequence = (
          SELECT o.scope_sequence FROM om_operation_log AS o INDEXED BY om_operation_log_pending_idx
          WHERE o.memory_id = scopes.m AND o.${PENDING} AND o.status = 'queued' ORDER BY o.scope_sequence LIMIT 1)
      WHERE q.available_at <= @now
        AND NOT EXISTS (SELECT 1 FROM om_operation_log AS p INDEXED BY om_operation_log_pending_idx
          WHERE p.memory_id = scopes.m AND p.${PENDING} AND p.status = 'processing')
      ORDER BY q.available_at, q.created_at LIMIT 1`),
    claimOperation: prepare(`
      UPDATE om_operation_log SET status = 'processing', attempt = attempt + 1, lease_owner = @leaseOwner,
        lease_expires_at = @leaseExpiresAt, updated_at = @now
      WHERE memory_id = @memoryId AND scope_sequence = @scopeSequence AND status = 'queued'
      RETURNING *`),
    takeOverOperation: prepare(`
      UPDATE om_operation_log SET attempt = attempt + 1, lease_owner = @leaseOwner, lease_expires_at = @leaseExpiresAt,
        error_text = '${STALE_REQUEUED}', updated_at = @now
      WHERE memory_id = @memoryId AND scope_sequence = @scopeSequence AND status = 'processing'
        AND lease_expires_at <= @now
      RETURNING *`),
    finishLeasedOperation: prepare(`
      UPDATE om_operation_log INDEXED BY om_operation_log_pending_idx
      SET status = @status, error_text = @errorText, lease_owner = NULL, lease_expires_at = NULL,
        available_at = COALESCE(@availableAt, available_at), attempt = MAX(0, attempt - @refund), updated_at = @now
      WHERE memory_id = @memoryId AND ${PENDING} AND status = 'processing' AND operation_id = @operationId
        AND lease_owner = @leaseOwner AND lease_expires_at > @now
      RETURNING *`),
    requeueStaleOperations: prepare(`
      UPDATE om_operation_log SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
        error_text = '${STALE_REQUEUED}', updated_at = @now
      WHERE ${PENDING} AND status = 'processing' AND lease_expires_at <= @cutoff`),
    // The new sequence is read before the row changes, so it is the scope's next one.
    retryDeadOperation: prepare(`
      UPDATE om_operation_log
      SET scope_sequence = (SELECT MAX(scope_sequence) + 1 FROM om_operation_log WHERE memory_id = @memoryId),
        status = 'queued', attempt = 0, lease_owner = NULL, lease_expires_at = NULL, available_at = @now, updated_at =
          @now
      WHERE memory_id = @memoryId AND status = 'dead' AND operation_id = @operationId
      RETURNING *`),
    countDeadOperationsOfScope: pluck(`SELECT COUNT(*) FROM om_operation_log WHERE memory_id = ? AND status = 'dead'`),
    listOperations: prepare('SELECT * FROM om_operation_log WHERE memory_id = ? ORDER BY scope_sequence'),
    // Two arms, each on its partial index, so the applied rows are never visited. Named: without
    // statistics the planner walks the scope's whole log by primary key instead (1.1 ms against
    // 0.07 ms for a log of 10,000).
    listOpenOperations: prepare(
      `SELECT * FROM om_operation_log INDEXED BY om_operation_log_pending_idx
         WHERE memory_id = @memoryId AND status IN ('queued', 'processing')
       UNION ALL
       SELECT * FROM om_operation_log INDEXED BY om_operation_log_dead_idx
         WHERE memory_id = @memoryId AND status = 'dead'
       ORDER BY scope_sequence`,
    ),
    countPendingOperations: pluck(`SELECT COUNT(*) FROM om_operation_log WHERE ${PENDING}`),
    countPendingOperationsOfScope: pluck(`SELECT COUNT(*) FROM om_operation_log WHERE memory_id = ? AND ${PENDING}`),

    selectEntry: prepare(`SELECT * FROM working_memory_entries WHERE memory_id = ? AND entry_key = ? AND ${UNEXPIRED}`),
    entrySetBasis: prepare<
      Named<{ memoryId: string; key: string }>,
      [number | null, number | null, number | null, string | null, string, number | null, string | null]
    >(`
      SELECT v.entry_count, v.total_bytes, e.bytes, e.created_at, ${SQL_NOW}, v.version, v.earliest_expiry
      FROM (SELECT 1) LEFT JOIN working_memory_versions AS v ON v.memory_id = @memoryId
      LEFT JOIN (SELECT ${ENTRY_BYTES} AS bytes, created_at FROM working_memory_entries
        WHERE memory_id = @memoryId AND entry_key = @key) AS e`).raw(true),
    workingMemoryUsage: prepare<[string], [number, number, string | null, string]>(
      `SELECT entry_count, total_bytes, earliest_expiry, ${SQL_NOW} FROM working_memory_versions WHERE memory_id = ?`,
    ).raw(true),
    writeWorkingMemoryUsage: prepare(`
      INSERT INTO working_memory_versions (memory_id, version, entry_count, total_bytes, earliest_expiry)
      VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (memory_id) DO UPDATE SET version = excluded.version, entry_count = excluded.entry_count,
        total_bytes = excluded.total_bytes, earliest_expiry = excluded.earliest_expiry`),
    // Without earliest_expiry in its SET, the update leaves the index on it alone: a set that
    // keeps the scope's earliest expiry commits no page of that index.
    writeWorkingMemoryUsageKeepingExpiry: prepare(`
      INSERT INTO working_memory_versions (memory_id, version, entry_count, total_bytes) VALUES (?, ?, ?, ?)
      ON CONFLICT (memory_id) DO UPDATE SET version = excluded.version, entry_count = excluded.entry_count,
        total_bytes = excluded.total_bytes`),
    // created_at is set on insert only, so a replaced entry keeps it; the expiry is the new set's.
    upsertEntry: prepare(`
      INSERT INTO working_memory_entries (memory_id, entry_key, entry_json, created_at, updated_at, expires_at)
      VALUES (@memoryId, @key, @valueJson, @now, @now, @expiresAt)
      ON CONFLICT (memory_id, entry_key) DO UPDATE SET entry_json = excluded.entry_json, updated_at =
        excluded.updated_at, expires_at = excluded.expires_at`),
    // For a set that found the entry: an upsert would first try the insert and hit the conflict.
    replaceEntry: prepare(
      'UPDATE working_memory_entries SET entry_json = ?, updated_at = ?, expires_at = ? WHERE memory_id = ? AND entry_key = ?',
    ),
    deleteEntry: prepare<[string, string], [number, string | null]>(
      `DELETE FROM working_memory_entries WHERE memory_id = ? AND entry_key = ? RETURNING ${ENTRY_BYTES}, expires_at`,
    ).raw(true),
    purgeExpiredEntries: pluck(
      `DELETE FROM working_memory_entries WHERE memory_id = ? AND expires_at <= ? RETURNING ${ENTRY_BYTES}`,
    ),
    selectEarliestExpiry: pluck('SELECT MIN(expires_at) FROM working_memory_entries WHERE memory_id = ?'),
    selectWorkingMemoryVersion: pluck('SELECT version FROM working_memory_versions WHERE memory_id = ?'),
    // BINARY compares the UTF-8 bytes, which is the port's "byte order".
    listEntries: prepare<[string], [string, string, string, string, string | null]>(
      `SELECT entry_key, entry_json, created_at, updated_at, expires_at FROM working_memory_entries WHERE memory_id = ? ` +
        `AND ${UNEXPIRED} ORDER BY entry_key COLLATE BINARY`,
    ).raw(true),

    forgetScope: Object.freeze(
      [
        'om_observations',
        'om_messages',
        'om_markers',
        'om_reflection_links',
        'om_operation_log',
        'working_memory_entries',
        'working_memory_versions',
        'om_memory_records',
      ].map((table) => prepare(`DELETE FROM ${table} WHERE memory_id = ?`)),
    ),
  };
  return Object.freeze(statements);
}
