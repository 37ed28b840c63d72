/**
 * The database functions of a run's hottest writes on Postgres, each one statement instead of
 * a transaction of three or four round trips: a run event (migration 12: the run's row lock,
 * the next seq, the insert) and a conversation's messages (migration 13: the conversation's
 * lock, the generation check, the insert). A run makes several of each per step.
 * @module
 */
import { TERMINAL_EVENT_TYPES_SQL } from '../_run-ending.js';

/** The SQLSTATE of a write refused because its run ended. */
export const RUN_ENDED_SQLSTATE = 'HM409';

/** The parameter types of `harness_append_messages` (see `functionCall`). */
export const APPEND_MESSAGES_TYPES: readonly string[] =
  'integer, text, bigint, text[], text[], text[], text[], text[], text[], json[], bigint[]'.split(', ');

/** The parameter types of `harness_append_run_event` (see `functionCall`). */
export const APPEND_RUN_EVENT_TYPES: readonly string[] = 'text, text, json'.split(', ');

/**
 * The DDL of migration 20 under the quoted schema prefix `s`: a run that ended is not changed
 * again, whatever process (an older version too) writes; the statements of this version never
 * make it fire.
 */
export function endedRunTrigger(s: string): string {
  return `
CREATE OR REPLACE FUNCTION ${s}harness_runs_ended_stay() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'run % ended (%); it is not changed again', OLD.run_id, OLD.status
    USING ERRCODE = '${RUN_ENDED_SQLSTATE}', DETAIL = OLD.status;
END
$fn$;
CREATE TRIGGER harness_runs_ended_stay
BEFORE UPDATE OF status, output, error_json, steps, input_tokens, output_tokens ON ${s}harness_runs
FOR EACH ROW WHEN (OLD.status NOT IN ('queued', 'running')) EXECUTE FUNCTION ${s}harness_runs_ended_stay();
`;
}

/** The DDL of migrations 12, 19 and 20 under the quoted schema prefix `s`. */
export function runEventFunctions(s: string): string {
  return `
CREATE OR REPLACE FUNCTION ${s}harness_append_run_event(p_run_id text, p_type text, p_payload json)
RETURNS SETOF ${s}harness_run_events LANGUAGE plpgsql AS $fn$
DECLARE
  v_status text;
BEGIN
  -- The run's row lock orders its events. Each statement of a volatile function reads a fresh
  -- snapshot, so the seq below counts an event another writer committed while this one waited.
  SELECT status INTO v_status FROM ${s}harness_runs WHERE run_id = p_run_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  -- A run that ended takes only its first terminal event (migration 19); the refusal has a code
  -- of its own (migration 20), which a caller tells from a missing run.
  IF v_status NOT IN ('queued', 'running') AND (p_type NOT IN (${TERMINAL_EVENT_TYPES_SQL}) OR EXISTS (
      SELECT 1 FROM ${s}harness_run_events WHERE run_id = p_run_id AND type IN (${TERMINAL_EVENT_TYPES_SQL}))) THEN
    RAISE EXCEPTION 'run % ended (%); only its first terminal event is appended', p_run_id, v_status
      USING ERRCODE = '${RUN_ENDED_SQLSTATE}', DETAIL = v_status;
  END IF;
  RETURN QUERY WITH added AS (
    INSERT INTO ${s}harness_run_events (run_id, seq, type, "timestamp", payload_json)
    SELECT p_run_id, COALESCE(MAX(e.seq), -1) + 1, p_type, clock_timestamp(), p_payload
    FROM ${s}harness_run_events AS e WHERE e.run_id = p_run_id
    RETURNING *)
  SELECT * FROM added;
END
$fn$;
`;
}

/** The DDL of migration 13 under the quoted schema prefix `s`. */
export function conversationMessageFunctions(s: string): string {
  return `
CREATE OR REPLACE FUNCTION ${s}harness_append_messages(
  p_lock_class integer, p_memory_id text, p_generation bigint,
  p_ids text[], p_run_ids text[], p_roles text[], p_contents text[], p_names text[], p_tool_call_ids text[],
  p_tool_calls json[], p_tokens bigint[]
) RETURNS boolean LANGUAGE plpgsql AS $fn$
BEGIN
  -- The conversation's lock, which a forget takes too: positions are assigned one writer at a time.
  PERFORM pg_advisory_xact_lock(p_lock_class, hashtext(p_memory_id));
  IF p_generation IS NOT NULL AND COALESCE((SELECT generation FROM ${s}harness_conversation_generations
      WHERE memory_id = p_memory_id), 0) <> p_generation THEN
    RETURN false;
  END IF;
  -- Known ids and repeats in the batch are skipped; the rest follow the conversation's last position.
  WITH input AS (
    SELECT * FROM unnest(p_ids, p_run_ids, p_roles, p_contents, p_names, p_tool_call_ids, p_tool_calls, p_tokens)
      WITH ORDINALITY AS t(message_id, run_id, role, content, name, tool_call_id, tool_calls_json, token_count, ord)),
  fresh AS (
    SELECT DISTINCT ON (message_id) * FROM input AS i
    WHERE NOT EXISTS (SELECT 1 FROM ${s}harness_conversation_messages AS m WHERE m.memory_id = p_memory_id AND
      m.message_id = i.message_id)
    ORDER BY message_id, ord)
  INSERT INTO ${s}harness_conversation_messages (memory_id, position, message_id, run_id, role, content, name,
    tool_call_id, tool_calls_json, token_count)
  SELECT p_memory_id, (SELECT COALESCE(MAX(position), 0) FROM ${s}harness_conversation_messages
      WHERE memory_id = p_memory_id) + row_number() OVER (ORDER BY ord),
    message_id, run_id, role, content, name, tool_call_id, tool_calls_json, token_count
  FROM fresh;
  RETURN true;
END
$fn$;
`;
}
