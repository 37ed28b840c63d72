/**
 * The SQL of the Postgres memory store, built once per schema prefix. Lease and availability
 * times use `clock_timestamp()` (the database's wall clock at that moment, not the start of
 * the transaction); row times use `now()`, one value per transaction.
 * @module
 */
import { functionCall, readCommittedCall } from './postgres-connection.js';
import { WM_SET_ENTRY_TYPES } from './postgres-entry-functions.js';

/** Statements of one schema, keyed by purpose. Parameters are documented where not obvious. */
export interface PostgresStatements {
  readonly selectRecord: string;
  /** $1 memoryId, $2..$4 scope. Inserts if missing and returns the row either way. */
  readonly ensureRecord: string;
  /** $1 memoryId, $2 stateVersion, $3 enabled, $4 config jsonb. */
  readonly updateSettings: string;
  /** $1 memoryId, $2 stateVersion, $3 lastMessageSeq, $4 the inserted messages' tokens. */
  readonly updateLastMessageSeq: string;
  /** $1 memoryId, $2 stateVersion, $3 throughSeq, $4 count, $5 lastObservationSeq, $6 tokens. */
  readonly applyObservations: string;
  /**
   * $1 memoryId, $2 stateVersion, $3 raw, $4 structured jsonb, $5 tokens, $6 throughSeq, $7 createdAt, $8
   * supersessions added, $9 contradictions added, $10 references rejected.
   */
  readonly applyReflection: string;
  /**
   * $1 memoryId, $2..$5 arrays (kind, first seq, second seq, detail), $6 operationId; pairs already in the set
   * are skipped; returns the `kind` of each row added.
   */
  readonly insertReflectionLinks: string;
  /**
   * Links restored without a reflection: $1 memoryId, $2 stateVersion, $3 supersessions added, $4 contradictions
   * added, $5 references rejected.
   */
  readonly addLinkCounts: string;
  readonly listReflectionLinks: string;
  readonly selectScopeGeneration: string;
  /** $1 memoryId, $2 the new generation. */
  readonly writeScopeGeneration: string;

  /** $1 memoryId, $2..$7 arrays (key, role, name, toolCallId, content, tokens), $8 last seq. */
  readonly insertMessages: string;
  readonly listUnobservedMessages: string;
  readonly markMessagesObserved: string;

  /**
   * $1 memoryId, $2 last seq, $3 source start, $4 source end, $5 operationId, $6..$10 arrays (content, tokens,
   * importance, source, cited seqs as JSON).
   */
  /**
   * The apply plan's observations: $1 memoryId, $2 seqs, $3 source start, $4 source end, $5 operation, then the
   * columns as arrays.
   */
  readonly insertObservations: string;
  /**
   * $1 memoryId, $2 seqs, $3 operation, then content, tokens, importance, source, cited seqs and created_at
   * (null: now) as arrays.
   */
  readonly importObservations: string;
  readonly listObservations: string;
  /** The first `$3` observations after seq `$2`: what the read lane may carry. */
  readonly listObservationsPage: string;
  /** Two markers; $1 memoryId, $2 cycleId, $3 tokens, then id, type, start, end, payload for each. */
  readonly insertMarkerPair: string;
  /** $1 markerId, $2 memoryId, $3 type, $4 cycleId, $5 start, $6 end, $7 tokens, $8 payload. */
  readonly insertMarker: string;
  readonly listMarkers: string;

  /** $1 id, $2 memoryId, $3..$5 scope, $6 runId, $7 toolCallId, $8 type, $9 status, $10 payload, $11 attempt. */
  readonly insertOperation: string;
  /**
   * $1 leaseOwner, $2 lease seconds (, $3 memoryId). A scope's claim also takes over its processing
   * operation when that one's lease expired (by the database clock): its holder died or stalled.
   */
  readonly claimOfScope: string;
  readonly claimOfAnyScope: string;
  /** $1 id, $2 leaseOwner, $3 status, $4 errorText, $5 retry seconds or null. */
  readonly finishLeased: string;
  /** $1 grace seconds. */
  readonly requeueStale: string;
  /** $1 memoryId, $2 operationId; run under the scope's lock, like an enqueue. */
  readonly retryDead: string;
  readonly countDeadOfScope: string;
  readonly listOperations: string;
  readonly listOpenOperations: string;
  readonly countPending: string;
  readonly countPendingOfScope: string;

  readonly selectEntry: string;
  /**
   * $1 lock class, $2 memoryId, $3-$5 tenant, conversation and agent ids, $6 key, $7 value JSON,
   * $8 the new version, $9 max entries, $10 max total bytes; `result` is `{entry}` or `{limit}`.
   */
  readonly setEntry: string;
  /** $1 memoryId, $2 key, $3 the new working-memory version if a row goes; returns `count`. */
  readonly deleteEntry: string;
  readonly selectWorkingMemoryVersion: string;
  readonly listEntries: string;

  /** One `DELETE … WHERE memory_id = $1` per table. */
  readonly forgetScope: readonly string[];
}

// A working-memory entry readers see: it never expires, or not yet by the database's clock.
const UNEXPIRED = '(expires_at IS NULL OR expires_at > now())';

// The error text of an operation whose lease expired while processing, requeued or taken over.
const STALE_REQUEUED = 'requeued after stale processing operation';

/** Builds the statements for tables under `s` (a quoted schema prefix such as `"hm".`). */
export function buildStatements(s: string): PostgresStatements {
  // The state_version in WHERE is the compare-and-swap: no row comes back if it moved.
  const bump =
    `state_version = state_version + 1, updated_at = now() WHERE memory_id = $1 AND state_version ` +
    `= $2 RETURNING *`;
  // A scope's next queued operation, when none of its operations is processing and no older
  // one is queued. Ordering needs no scope lock: seqs are assigned under the scope's lock
  // and committed in order, `applied`/`failed` are final, so an operation whose elders are
  // all final in the claimer's snapshot is the scope's head for good; and two claimers of the
  // same head are kept apart by its row lock (SKIP LOCKED, then re-checked status).
  const claimable = `
    q.status = 'queued' AND q.available_at <= clock_timestamp()
    AND NOT EXISTS (SELECT 1 FROM ${s}om_operation_log AS p WHERE p.memory_id = q.memory_id AND p.status = 'processing')
    AND NOT EXISTS (SELECT 1 FROM ${s}om_operation_log AS o WHERE o.memory_id = q.memory_id AND o.status = 'queued'
      AND o.scope_sequence < q.scope_sequence)`;
  const claim = (candidate: string): string => `
    UPDATE ${s}om_operation_log SET status = 'processing', attempt = attempt + 1, lease_owner = $1,
      lease_expires_at = clock_timestamp() + make_interval(secs => $2::double precision), updated_at = now()
    WHERE operation_id = (${candidate} LIMIT 1 FOR UPDATE SKIP LOCKED) AND status = 'queued'
    RETURNING *`;
  // The scope's head: its processing operation, else its oldest queued one. A claim of the scope
  // takes it when it is queued and available, or processing under a lease that expired by the
  // database clock (the worker's stale check would requeue it; without a worker nothing would).
  // The head is read without a lock, then locked alone (SKIP LOCKED: a head being claimed or
  // finished right now is left to that transaction) and checked again, so a claim never skips
  // past a locked head to the operation behind it.
  const head = `COALESCE(
      (SELECT h.operation_id FROM ${s}om_operation_log AS h WHERE h.memory_id = $3 AND h.status = 'processing' LIMIT 1),
      (SELECT h.operation_id FROM ${s}om_operation_log AS h WHERE h.memory_id = $3 AND h.status IN ('queued',
        'processing') AND h.status = 'queued' ORDER BY h.scope_sequence LIMIT 1))`;
  const takeable = (alias: string): string =>
    `((${alias}status = 'queued' AND ${alias}available_at <= clock_timestamp()) OR (${alias}status = 'processing' ` +
    `AND ${alias}lease_expires_at <= clock_timestamp()))`;
  return Object.freeze({
    selectRecord: `SELECT * FROM ${s}om_memory_records WHERE memory_id = $1`,
    ensureRecord: `
      WITH inserted AS (
        INSERT INTO ${s}om_memory_records (memory_id, tenant_id, conversation_id, agent_id, enabled, state_version,
          config_json, created_at, updated_at)
        VALUES ($1, $2, $3, $4, NULL, 1, '{}', now(), now())
        ON CONFLICT DO NOTHING RETURNING *)
      SELECT * FROM inserted UNION ALL SELECT * FROM ${s}om_memory_records WHERE memory_id = $1`,
    updateSettings: `UPDATE ${s}om_memory_records SET enabled = $3, config_json = $4::jsonb, ${bump}`,
    updateLastMessageSeq:
      `UPDATE ${s}om_memory_records SET last_message_seq = $3, ` +
      `unobserved_message_tokens = unobserved_message_tokens + $4, ${bump}`,
    applyObservations: `
      UPDATE ${s}om_memory_records SET
        observed_through_message_seq = $3,
        unobserved_message_tokens = (SELECT COALESCE(SUM(token_count), 0) FROM ${s}om_messages WHERE memory_id = $1
          AND seq > $3),
        observation_count = observation_count + $4,
        last_observation_seq = $5,
        active_observation_tokens = active_observation_tokens + $6,
        unreflected_observation_tokens = unreflected_observation_tokens + $6,
        ${bump}`,
    applyReflection: `
      UPDATE ${s}om_memory_records SET
        active_reflection = $3,
        reflection_structured_json = $4::jsonb,
        active_reflection_tokens = $5,
        reflection_through_seq = $6,
        reflection_created_at = $7::timestamptz,
        unreflected_observation_tokens = (SELECT COALESCE(SUM(token_count), 0) FROM ${s}om_observations WHERE
          memory_id = $1 AND seq > $6),
        supersession_count = supersession_count + $8,
        contradiction_count = contradiction_count + $9,
        rejected_reference_count = rejected_reference_count + $10,
        ${bump}`,
    insertReflectionLinks: `
      INSERT INTO ${s}om_reflection_links (memory_id, kind, first_seq, second_seq, detail, operation_id, created_at)
      SELECT $1, kind, first_seq, second_seq, detail, $6, now()
      FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::text[]) AS t(kind, first_seq, second_seq, detail)
      ON CONFLICT DO NOTHING
      RETURNING kind`,
    addLinkCounts: `
      UPDATE ${s}om_memory_records SET
        supersession_count = supersession_count + $3,
        contradiction_count = contradiction_count + $4,
        rejected_reference_count = rejected_reference_count + $5,
        ${bump}`,
    listReflectionLinks: `SELECT * FROM ${s}om_reflection_links WHERE memory_id = $1`,
    selectScopeGeneration: `SELECT generation FROM ${s}om_scope_generations WHERE memory_id = $1`,
    writeScopeGeneration: `
      INSERT INTO ${s}om_scope_generations (memory_id, generation) VALUES ($1, $2)
      ON CONFLICT (memory_id) DO UPDATE SET generation = excluded.generation`,

    // Keys already stored, and repeats within the batch, are skipped; the rest get the next
    // seqs in arrival order.
    insertMessages: `
      WITH input AS (
        SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[])
          WITH ORDINALITY AS t(message_key, role, name, tool_call_id, content, token_count, ord)),
      fresh AS (
        SELECT DISTINCT ON (message_key) * FROM input AS i
        WHERE NOT EXISTS (SELECT 1 FROM ${s}om_messages AS m WHERE m.memory_id = $1 AND m.message_key = i.message_key)
        ORDER BY message_key, ord)
      INSERT INTO ${s}om_messages (memory_id, seq, message_key, role, name, tool_call_id, content, token_count)
      SELECT $1, $8::bigint + row_number() OVER (ORDER BY ord), message_key, role, name, tool_call_id, content,
        token_count FROM fresh
      RETURNING token_count`,
    // $3: the token limit, or null for every message. The running sum is taken in the
    // database, so only the rows of the batch travel.
    listUnobservedMessages: `
      SELECT * FROM (
        SELECT m.*, SUM(m.token_count) OVER (ORDER BY m.seq) - m.token_count AS tokens_before,
          row_number() OVER (ORDER BY m.seq) AS position
        FROM ${s}om_messages AS m JOIN ${s}om_memory_records AS r ON r.memory_id = m.memory_id
        WHERE m.memory_id = $1 AND m.seq > r.observed_through_message_seq AND m.seq <= $2) AS u
      WHERE $3::bigint IS NULL OR u.tokens_before < $3::bigint OR u.position = 1
      ORDER BY u.seq`,
    // The keys stay so a message is never stored twice; the text does not linger once observed.
    markMessagesObserved:
      `UPDATE ${s}om_messages SET observed = true, content = '' WHERE memory_id = $1 AND ` +
      `seq <= $2 AND NOT observed`,

    insertObservations: `
      INSERT INTO ${s}om_observations (memory_id, seq, content, token_count, importance, created_at, source_start_seq,
        source_end_seq, source, source_seqs_json, operation_id)
      SELECT $1, seq, content, token_count, importance, now(), $3, $4, source, source_seqs_json, $5
      FROM unnest($2::bigint[], $6::text[], $7::bigint[], $8::double precision[], $9::text[], $10::jsonb[]) AS t(seq,
        content, token_count, importance, source, source_seqs_json)
      RETURNING *`,
    importObservations: `
      INSERT INTO ${s}om_observations (memory_id, seq, content, token_count, importance, created_at, source_start_seq,
        source_end_seq, source, source_seqs_json, operation_id)
      SELECT $1, seq, content, token_count, importance, COALESCE(created_at, now()), 0, 0, source, source_seqs_json, $3
      FROM unnest($2::bigint[], $4::text[], $5::bigint[], $6::double precision[], $7::text[], $8::jsonb[],
        $9::timestamptz[]) AS t(seq, content, token_count, importance, source, source_seqs_json, created_at)
      RETURNING *`,
    listObservations: `SELECT * FROM ${s}om_observations WHERE memory_id = $1 AND seq > $2 ORDER BY seq`,
    listObservationsPage: `SELECT * FROM ${s}om_observations WHERE memory_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
    insertMarkerPair: `
      INSERT INTO ${s}om_markers (marker_id, memory_id, marker_type, cycle_id, message_index_start, message_index_end,
        token_count, payload_json, created_at)
      VALUES ($4::text, $1::text, $5::text, $2::text, $6::bigint, $7::bigint, $3::bigint, $8::jsonb, now()),
        ($9::text, $1::text, $10::text, $2::text, $11::bigint, $12::bigint, $3::bigint, $13::jsonb, now())`,
    insertMarker: `
      INSERT INTO ${s}om_markers (marker_id, memory_id, marker_type, cycle_id, message_index_start, message_index_end,
        token_count, payload_json, created_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, now())`,
    // marker_position is insertion order; created_at ties within a transaction.
    listMarkers: `SELECT * FROM ${s}om_markers WHERE memory_id = $1 ORDER BY marker_position`,

    insertOperation: `
      INSERT INTO ${s}om_operation_log (
        operation_id, memory_id, tenant_id, conversation_id, agent_id, run_id, tool_call_id, scope_sequence,
        operation_type, status, payload_json, error_text, attempt, lease_owner, lease_expires_at, available_at,
          created_at, updated_at)
      SELECT $1, $2, $3, $4, $5, $6, $7, COALESCE(MAX(scope_sequence), 0) + 1, $8, $9, $10::jsonb, '', $11, NULL,
        NULL, now(), now(), now()
      FROM ${s}om_operation_log WHERE memory_id = $2
      RETURNING *`,
    claimOfScope: `
      UPDATE ${s}om_operation_log SET status = 'processing', attempt = attempt + 1, lease_owner = $1,
        lease_expires_at = clock_timestamp() + make_interval(secs => $2::double precision), updated_at = now(),
        error_text = CASE WHEN status = 'processing' THEN '${STALE_REQUEUED}' ELSE error_text END
      WHERE operation_id = (
        SELECT c.operation_id FROM ${s}om_operation_log AS c WHERE c.operation_id = ${head} AND ${takeable('c.')}
        FOR UPDATE SKIP LOCKED)
        AND ${takeable('')}
      RETURNING *`,
    claimOfAnyScope: claim(
      `SELECT q.operation_id FROM ${s}om_operation_log AS q WHERE ${claimable} ORDER BY q.created_at, q.log_position`,
    ),
    // The lease check: only the holder, only before expiry by the database clock. The row
    // lock this takes also keeps a concurrent requeue or claim out until the transaction ends.
    finishLeased: `
      UPDATE ${s}om_operation_log SET status = $3, error_text = $4, lease_owner = NULL, lease_expires_at = NULL,
        available_at = COALESCE(clock_timestamp() + make_interval(secs => $5::double precision), available_at),
          attempt = GREATEST(0, attempt - $6::int), updated_at = now()
      WHERE operation_id = $1 AND status = 'processing' AND lease_owner = $2 AND lease_expires_at > clock_timestamp()
      RETURNING *`,
    // SKIP LOCKED: an operation whose worker is applying right now is left to that worker
    // (its lease check decides), and a requeue never waits on or deadlocks with it.
    requeueStale: `
      UPDATE ${s}om_operation_log SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
        error_text = '${STALE_REQUEUED}', updated_at = now()
      WHERE operation_id IN (
        SELECT operation_id FROM ${s}om_operation_log
        WHERE status = 'processing' AND lease_expires_at <= clock_timestamp() - make_interval(secs => $1::double
          precision)
        FOR UPDATE SKIP LOCKED)`,
    // To the end of the scope's log: claims rely on a scope's older operations being final or
    // pending, and a retried one takes the next sequence as a new enqueue would.
    retryDead: `
      UPDATE ${s}om_operation_log
      SET scope_sequence = (SELECT MAX(scope_sequence) + 1 FROM ${s}om_operation_log WHERE memory_id = $1),
        status = 'queued', attempt = 0, lease_owner = NULL, lease_expires_at = NULL, available_at = now(), updated_at
          = now()
      WHERE memory_id = $1 AND operation_id = $2 AND status = 'dead'
      RETURNING *`,
    countDeadOfScope: `SELECT count(*) AS count FROM ${s}om_operation_log WHERE memory_id = $1 AND status = 'dead'`,
    listOperations: `SELECT * FROM ${s}om_operation_log WHERE memory_id = $1 ORDER BY scope_sequence`,
    // Two arms, so each reads its partial index and the applied rows are never visited.
    listOpenOperations: `SELECT * FROM ${s}om_operation_log WHERE memory_id = $1 AND status IN ('queued', 'processing')
      UNION ALL
      SELECT * FROM ${s}om_operation_log WHERE memory_id = $1 AND status = 'dead'
      ORDER BY scope_sequence`,
    countPending: `SELECT count(*) AS count FROM ${s}om_operation_log WHERE status IN ('queued', 'processing')`,
    countPendingOfScope:
      `SELECT count(*) AS count FROM ${s}om_operation_log WHERE memory_id = $1 AND status ` +
      `IN ('queued', 'processing')`,

    selectEntry: `SELECT * FROM ${s}working_memory_entries WHERE memory_id = $1 AND entry_key = $2 AND ${UNEXPIRED}`,
    setEntry: readCommittedCall(functionCall(s, 'wm_set_entry', WM_SET_ENTRY_TYPES)),
    // Deletes and, when a row went, sets a new working-memory version ($3), in one statement.
    // Once the scope's earliest expiry has passed it deletes the expired rows too, and keeps
    // the earliest of the rest (the CTEs read the rows as they were before the delete).
    // The scope's lock first, as wm_set_entry takes it: a delete that locked the entry row and
    // then waited for the version row a set held (the set waiting for the entry) deadlocked.
    deleteEntry: `
      WITH locked AS (SELECT pg_advisory_xact_lock($4::integer, hashtext($1))),
        due AS (SELECT 1 FROM ${s}working_memory_versions WHERE memory_id = $1 AND earliest_expiry <= now()),
        deleted AS (DELETE FROM ${s}working_memory_entries WHERE memory_id = $1 AND EXISTS (SELECT 1 FROM locked)
          AND (entry_key = $2 OR (expires_at <= now() AND EXISTS (SELECT 1 FROM due))) RETURNING entry_key, expires_at),
        bumped AS (
          INSERT INTO ${s}working_memory_versions AS v (memory_id, version) SELECT $1, $3 WHERE EXISTS (SELECT 1 FROM
            deleted)
          ON CONFLICT (memory_id) DO UPDATE SET version = excluded.version, earliest_expiry = CASE WHEN
            v.earliest_expiry <= now() THEN (SELECT min(e.expires_at) FROM ${s}working_memory_entries AS e WHERE
              e.memory_id = $1 AND e.entry_key <> $2 AND e.expires_at > now()) ELSE v.earliest_expiry END)
      SELECT count(*) FILTER (WHERE entry_key = $2 AND (expires_at IS NULL OR expires_at > now()))::int AS count
      FROM deleted`,
    selectWorkingMemoryVersion: `SELECT version FROM ${s}working_memory_versions WHERE memory_id = $1`,
    listEntries: `SELECT * FROM ${s}working_memory_entries WHERE memory_id = $1 AND ${UNEXPIRED} ORDER BY entry_key`,

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
      ].map((table) => `DELETE FROM ${s}${table} WHERE memory_id = $1`),
    ),
  });
}
