/**
 * The database function of a working-memory set on Postgres (migration 11): the scope's lock,
 * the limit checks, the scope's record (for its first entry), the entry and a new version, in
 * one statement, so one round trip instead of five. It answers the entry and the version the
 * scope had before (migration 14), which tells the caller whether the snippet it holds is the
 * one the set changed.
 *
 * A limit the set would break is an answer (`{"limit": …}`) with nothing written, not an
 * error: a failed statement would cost the pool its connection.
 * @module
 */

/**
 * The function's DDL under the quoted schema prefix `s`, as this version defines it: migration 11
 * created it and migration 14 replaces it with this text (creating the current body at 11 is
 * harmless: 14 only adds to what it answers).
 */
export function entryFunctions(s: string): string {
  return `
CREATE OR REPLACE FUNCTION ${s}wm_set_entry(
  p_lock_class integer, p_memory_id text, p_tenant_id text, p_conversation_id text, p_agent_id text,
  p_key text, p_value_json text, p_version bigint, p_max_entries bigint, p_max_total_bytes bigint
) RETURNS jsonb LANGUAGE plpgsql AS $fn$
DECLARE
  present boolean;
  entries bigint;
  other_bytes bigint;
  total bigint;
  stored ${s}working_memory_entries;
  previous bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(p_lock_class, hashtext(p_memory_id));
  SELECT EXISTS (SELECT 1 FROM ${s}working_memory_entries WHERE memory_id = p_memory_id AND entry_key = p_key),
    (SELECT count(*) FROM ${s}working_memory_entries WHERE memory_id = p_memory_id),
    (SELECT COALESCE(SUM(octet_length(entry_key) + octet_length(entry_json)), 0)::bigint
       FROM ${s}working_memory_entries WHERE memory_id = p_memory_id AND entry_key <> p_key)
  INTO present, entries, other_bytes;
  IF NOT present AND entries >= p_max_entries THEN
    RETURN jsonb_build_object('limit', 'entries', 'actual', entries + 1, 'max', p_max_entries);
  END IF;
  total := other_bytes + octet_length(p_key) + octet_length(p_value_json);
  IF total > p_max_total_bytes THEN
    RETURN jsonb_build_object('limit', 'total_bytes', 'actual', total, 'max', p_max_total_bytes);
  END IF;
  -- A scope's first entry gives it a record, so the scope is listed.
  IF entries = 0 THEN
    INSERT INTO ${s}om_memory_records (memory_id, tenant_id, conversation_id, agent_id, enabled, state_version,
      config_json, created_at, updated_at)
    VALUES (p_memory_id, p_tenant_id, p_conversation_id, p_agent_id, NULL, 1, '{}', now(), now())
    ON CONFLICT DO NOTHING;
  END IF;
  -- created_at is set on insert only, so a replaced entry keeps it.
  INSERT INTO ${s}working_memory_entries (memory_id, entry_key, entry_json, created_at, updated_at)
  VALUES (p_memory_id, p_key, p_value_json, now(), now())
  ON CONFLICT (memory_id, entry_key) DO UPDATE SET entry_json = excluded.entry_json, updated_at = excluded.updated_at
  RETURNING * INTO stored;
  -- Locked: a delete changes the version without the scope's lock, and must not slip between
  -- this read and the write below (the caller trusts "before" to be the state this set changed).
  SELECT version INTO previous FROM ${s}working_memory_versions WHERE memory_id = p_memory_id FOR UPDATE;
  INSERT INTO ${s}working_memory_versions (memory_id, version) VALUES (p_memory_id, p_version)
  ON CONFLICT (memory_id) DO UPDATE SET version = excluded.version;
  RETURN jsonb_build_object('entry', to_jsonb(stored), 'previous_version', COALESCE(previous, 0));
END
$fn$;
`;
}
