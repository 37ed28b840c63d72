/**
 * The two database functions of an observe on Postgres (migration 9): one appends the
 * messages, enqueues the observe and claims it; the other applies the observer's result.
 * Each is one statement, so one round trip and one transaction, instead of about nine.
 *
 * The rules stay in TypeScript: the caller passes what it decided (the settings it derived
 * from the record, the apply plan it built from the scope's position) together with what it
 * decided from, and the function checks that premise under the scope's lock. When the premise
 * no longer holds (another replica changed the settings, an import moved the position, the
 * lease lapsed, the scope was forgotten) it answers `{"missed": reason}` having changed
 * nothing (not an error: a failed statement would cost the pool its connection); the store
 * then takes the statement-by-statement path, which reports the case as it always did.
 * @module
 */

/** The parameter types of `om_observe_append_and_claim` (see `functionCall`). */
export const APPEND_AND_CLAIM_TYPES: readonly string[] = (
  'integer, text, text, text, text, bigint, boolean, boolean, jsonb, boolean, ' +
  'bigint, text[], text[], text[], text[], text[], bigint[], text, jsonb, text, ' +
  'text, text, double precision, bigint'
).split(', ');

/** The parameter types of `om_observe_apply` (see `functionCall`). */
export const OBSERVE_APPLY_TYPES: readonly string[] = (
  'integer, text, text, text, bigint, bigint, bigint[], bigint, bigint, text[], ' +
  'bigint[], double precision[], text[], jsonb[], bigint, bigint, text, text, ' +
  'bigint, bigint, jsonb, text, text, bigint, bigint, jsonb'
).split(', ');

/**
 * The functions' DDL under the quoted schema prefix `s`, as this version defines them. Migration 9
 * created them and each later migration that changes what they read or write (10: the running
 * unobserved token total; 17: the batch tokens, a new parameter, so 17 drops the old signature
 * first; 25: the observe's logged payload) replaces them with this text; PL/pgSQL resolves
 * columns at the first call, so creating the current bodies at 9 is harmless.
 */
export function observeFunctions(s: string): string {
  return `
CREATE OR REPLACE FUNCTION ${s}om_observe_append_and_claim(
  p_lock_class integer, p_memory_id text, p_tenant_id text, p_conversation_id text, p_agent_id text,
  p_generation bigint, p_record_exists boolean, p_enabled boolean, p_config jsonb,
  p_observe boolean, p_min_tokens bigint,
  p_keys text[], p_roles text[], p_names text[], p_tool_call_ids text[], p_contents text[], p_tokens bigint[],
  p_operation_id text, p_payload jsonb, p_run_id text, p_tool_call_id text,
  p_lease_owner text, p_lease_seconds double precision, p_batch_tokens bigint
) RETURNS jsonb LANGUAGE plpgsql AS $fn$
DECLARE
  rec ${s}om_memory_records;
  found_record boolean;
  added bigint := 0;
  added_tokens bigint := 0;
  unobserved bigint;
  logged jsonb;
  op ${s}om_operation_log;
  claimed ${s}om_operation_log;
  messages jsonb;
BEGIN
  PERFORM pg_advisory_xact_lock(p_lock_class, hashtext(p_memory_id));
  IF p_generation IS NOT NULL AND COALESCE((SELECT generation FROM ${s}om_scope_generations
      WHERE memory_id = p_memory_id), 0) <> p_generation THEN
    RETURN jsonb_build_object('missed', 'the scope was forgotten');
  END IF;
  SELECT * INTO rec FROM ${s}om_memory_records WHERE memory_id = p_memory_id;
  found_record := FOUND;
  IF found_record <> p_record_exists
      OR (found_record AND (rec.enabled IS DISTINCT FROM p_enabled OR rec.config_json <> p_config)) THEN
    RETURN jsonb_build_object('missed', 'the settings changed');
  END IF;
  IF NOT p_observe THEN
    RETURN jsonb_build_object('disabled', true, 'record', CASE WHEN found_record THEN to_jsonb(rec) END);
  END IF;
  IF NOT found_record THEN
    INSERT INTO ${s}om_memory_records (memory_id, tenant_id, conversation_id, agent_id, enabled, state_version,
      config_json, created_at, updated_at)
    VALUES (p_memory_id, p_tenant_id, p_conversation_id, p_agent_id, NULL, 1, '{}', now(), now())
    RETURNING * INTO rec;
  END IF;
  -- Keys already stored, and repeats within the batch, are skipped; the rest get the next
  -- seqs in arrival order (as the statement path's insertMessages). One key at a time: each
  -- probe is a lookup in the (memory_id, message_key) index whatever the table's statistics say.
  FOR i IN 1 .. COALESCE(cardinality(p_keys), 0) LOOP
    CONTINUE WHEN p_keys[i] = ANY (p_keys[1 : i - 1]);
    CONTINUE WHEN EXISTS (SELECT 1 FROM ${s}om_messages WHERE memory_id = p_memory_id AND message_key = p_keys[i]);
    added := added + 1;
    added_tokens := added_tokens + p_tokens[i];
    INSERT INTO ${s}om_messages (memory_id, seq, message_key, role, name, tool_call_id, content, token_count)
    VALUES (p_memory_id, rec.last_message_seq + added, p_keys[i], p_roles[i], p_names[i], p_tool_call_ids[i],
      p_contents[i], p_tokens[i]);
  END LOOP;
  IF added > 0 THEN
    UPDATE ${s}om_memory_records SET last_message_seq = rec.last_message_seq + added,
      unobserved_message_tokens = unobserved_message_tokens + added_tokens,
      state_version = state_version + 1, updated_at = now()
    WHERE memory_id = p_memory_id RETURNING * INTO rec;
  END IF;
  unobserved := rec.unobserved_message_tokens;
  IF unobserved < p_min_tokens THEN
    RETURN jsonb_build_object('record', to_jsonb(rec), 'inserted', added, 'unobserved_tokens', unobserved);
  END IF;
  -- The log shows the messages this call stored and the tokens waiting, as every store logs them.
  logged := p_payload || jsonb_build_object('messages', added, 'unobserved_tokens', unobserved);
  IF NOT EXISTS (SELECT 1 FROM ${s}om_operation_log WHERE memory_id = p_memory_id
      AND status IN ('queued', 'processing')) THEN
    -- Nothing of the scope is pending, so the new operation is the one a claim would take:
    -- stored claimed, it spares the log an update (and its index entries) per observe.
    INSERT INTO ${s}om_operation_log (operation_id, memory_id, tenant_id, conversation_id, agent_id, run_id,
      tool_call_id, scope_sequence, operation_type, status, payload_json, error_text, attempt, lease_owner,
      lease_expires_at, available_at, created_at, updated_at)
    SELECT p_operation_id, p_memory_id, p_tenant_id, p_conversation_id, p_agent_id, p_run_id, p_tool_call_id,
      COALESCE(MAX(scope_sequence), 0) + 1, 'observe', 'processing', logged, '', 1, p_lease_owner,
      clock_timestamp() + make_interval(secs => p_lease_seconds), now(), now(), now()
    FROM ${s}om_operation_log WHERE memory_id = p_memory_id
    RETURNING * INTO claimed;
    op := claimed;
  ELSE
    INSERT INTO ${s}om_operation_log (operation_id, memory_id, tenant_id, conversation_id, agent_id, run_id,
      tool_call_id, scope_sequence, operation_type, status, payload_json, error_text, attempt, lease_owner,
      lease_expires_at, available_at, created_at, updated_at)
    SELECT p_operation_id, p_memory_id, p_tenant_id, p_conversation_id, p_agent_id, p_run_id, p_tool_call_id,
      COALESCE(MAX(scope_sequence), 0) + 1, 'observe', 'queued', logged, '', 0, NULL, NULL, now(), now(), now()
    FROM ${s}om_operation_log WHERE memory_id = p_memory_id
    RETURNING * INTO op;
    -- The scope's oldest pending operation, as claimOfScope picks it.
    UPDATE ${s}om_operation_log SET status = 'processing', attempt = attempt + 1, lease_owner = p_lease_owner,
      lease_expires_at = clock_timestamp() + make_interval(secs => p_lease_seconds), updated_at = now()
    WHERE operation_id = (
      SELECT q.operation_id FROM ${s}om_operation_log AS q
      WHERE q.memory_id = p_memory_id AND q.status = 'queued' AND q.available_at <= clock_timestamp()
        AND NOT EXISTS (SELECT 1 FROM ${s}om_operation_log AS p WHERE p.memory_id = q.memory_id
          AND p.status = 'processing')
        AND NOT EXISTS (SELECT 1 FROM ${s}om_operation_log AS o WHERE o.memory_id = q.memory_id
          AND o.status = 'queued' AND o.scope_sequence < q.scope_sequence)
      ORDER BY q.scope_sequence LIMIT 1 FOR UPDATE SKIP LOCKED)
      AND status = 'queued'
    RETURNING * INTO claimed;
  END IF;
  IF claimed.operation_id IS NULL THEN
    RETURN jsonb_build_object('record', to_jsonb(rec), 'inserted', added, 'unobserved_tokens', unobserved,
      'operation', to_jsonb(op));
  END IF;
  IF claimed.operation_type = 'observe' THEN
    -- The oldest messages only, up to the batch's tokens (all without p_batch_tokens): a
    -- backlog is not read whole for every batch.
    SELECT COALESCE(jsonb_agg(to_jsonb(u) - 'tokens_before' - 'position' ORDER BY u.seq), '[]') INTO messages
    FROM (
      SELECT m.*, SUM(m.token_count) OVER (ORDER BY m.seq) - m.token_count AS tokens_before,
        row_number() OVER (ORDER BY m.seq) AS position
      FROM ${s}om_messages AS m
      WHERE m.memory_id = p_memory_id AND m.seq > rec.observed_through_message_seq
        AND m.seq <= rec.last_message_seq) AS u
    WHERE p_batch_tokens IS NULL OR u.tokens_before < p_batch_tokens OR u.position = 1;
  END IF;
  IF claimed.operation_id = op.operation_id THEN
    -- The caller applies this very operation next and answers only after that apply's commit,
    -- which flushes the log up to and past this one: waiting for the disk twice buys nothing.
    PERFORM set_config('synchronous_commit', 'off', true);
  END IF;
  RETURN jsonb_build_object('record', to_jsonb(rec), 'inserted', added, 'unobserved_tokens', unobserved,
    'operation', to_jsonb(op), 'claimed', to_jsonb(claimed), 'messages', messages);
END
$fn$;

CREATE OR REPLACE FUNCTION ${s}om_observe_apply(
  p_lock_class integer, p_memory_id text, p_operation_id text, p_lease_owner text,
  p_observed_through bigint, p_last_observation_seq bigint,
  p_seqs bigint[], p_start_seq bigint, p_through_seq bigint, p_contents text[], p_tokens bigint[],
  p_importances double precision[], p_sources text[], p_source_seqs jsonb[],
  p_batch_tokens bigint, p_new_last_observation_seq bigint,
  p_start_marker_id text, p_start_marker_type text, p_start_from bigint, p_start_to bigint, p_start_payload jsonb,
  p_end_marker_id text, p_end_marker_type text, p_end_from bigint, p_end_to bigint, p_end_payload jsonb
) RETURNS jsonb LANGUAGE plpgsql AS $fn$
DECLARE
  rec ${s}om_memory_records;
  inserted jsonb := '[]';
  added bigint := 0;
BEGIN
  PERFORM pg_advisory_xact_lock(p_lock_class, hashtext(p_memory_id));
  SELECT * INTO rec FROM ${s}om_memory_records WHERE memory_id = p_memory_id;
  IF NOT FOUND OR rec.observed_through_message_seq <> p_observed_through
      OR rec.last_observation_seq <> p_last_observation_seq THEN
    RETURN jsonb_build_object('missed', 'the scope moved since the claim');
  END IF;
  UPDATE ${s}om_operation_log SET status = 'applied', error_text = '', lease_owner = NULL, lease_expires_at = NULL,
    updated_at = now()
  WHERE operation_id = p_operation_id AND memory_id = p_memory_id AND status = 'processing'
    AND lease_owner = p_lease_owner AND lease_expires_at > clock_timestamp();
  IF NOT FOUND THEN
    RETURN jsonb_build_object('missed', 'the lease does not hold');
  END IF;
  IF cardinality(p_seqs) > 0 THEN
    WITH added_rows AS (
      INSERT INTO ${s}om_observations (memory_id, seq, content, token_count, importance, created_at,
        source_start_seq, source_end_seq, source, source_seqs_json, operation_id)
      SELECT p_memory_id, seq, content, token_count, importance, now(), p_start_seq, p_through_seq, source,
        source_seqs_json, p_operation_id
      FROM unnest(p_seqs, p_contents, p_tokens, p_importances, p_sources, p_source_seqs)
        AS t(seq, content, token_count, importance, source, source_seqs_json)
      RETURNING *)
    SELECT COALESCE(jsonb_agg(to_jsonb(a) ORDER BY a.seq), '[]'), count(*) INTO inserted, added FROM added_rows AS a;
  END IF;
  -- Every message through the old cursor is marked already: only the batch's are looked at.
  UPDATE ${s}om_messages SET observed = true, content = ''
  WHERE memory_id = p_memory_id AND seq > p_observed_through AND seq <= p_through_seq AND NOT observed;
  INSERT INTO ${s}om_markers (marker_id, memory_id, marker_type, cycle_id, message_index_start, message_index_end,
    token_count, payload_json, created_at)
  VALUES (p_start_marker_id, p_memory_id, p_start_marker_type, p_operation_id, p_start_from, p_start_to,
      p_batch_tokens, p_start_payload, now()),
    (p_end_marker_id, p_memory_id, p_end_marker_type, p_operation_id, p_end_from, p_end_to, p_batch_tokens,
      p_end_payload, now());
  UPDATE ${s}om_memory_records SET
    observed_through_message_seq = p_through_seq,
    unobserved_message_tokens = (SELECT COALESCE(SUM(token_count), 0) FROM ${s}om_messages
      WHERE memory_id = p_memory_id AND seq > p_through_seq),
    observation_count = observation_count + added,
    last_observation_seq = p_new_last_observation_seq,
    active_observation_tokens = active_observation_tokens + p_batch_tokens,
    unreflected_observation_tokens = unreflected_observation_tokens + p_batch_tokens,
    state_version = state_version + 1, updated_at = now()
  WHERE memory_id = p_memory_id RETURNING * INTO rec;
  RETURN jsonb_build_object('record', to_jsonb(rec), 'observations', inserted);
END
$fn$;
`;
}
