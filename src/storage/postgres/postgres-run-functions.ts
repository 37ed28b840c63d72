/**
 * The database function of a run event on Postgres (migration 12): the run's row lock, the
 * next seq and the insert, in one statement instead of a four-round-trip transaction. A run
 * emits several events per step, so this is most of a Postgres run's time outside the LLM.
 * @module
 */

/** The DDL of migration 12 under the quoted schema prefix `s`. */
export function runEventFunctions(s: string): string {
  return `
CREATE OR REPLACE FUNCTION ${s}harness_append_run_event(p_run_id text, p_type text, p_payload json)
RETURNS SETOF ${s}harness_run_events LANGUAGE plpgsql AS $fn$
BEGIN
  -- The run's row lock orders its events. Each statement of a volatile function reads a fresh
  -- snapshot, so the seq below counts an event another writer committed while this one waited.
  PERFORM 1 FROM ${s}harness_runs WHERE run_id = p_run_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN;
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
