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

/** The parameter types of `wm_set_entry` as the store calls it (see `functionCall`). */
export const WM_SET_ENTRY_TYPES: readonly string[] =
  'integer, text, text, text, text, text, text, bigint, bigint, bigint, bigint'.split(', ');

/**
 * The functions' DDL under the quoted schema prefix `s`, as this version defines them:
 * migration 11 created `wm_set_entry`, 14 replaced it, and 21 adds the entry's time to live
 * (`p_ttl_ms`, NULL for none) and the scope's earliest expiry, keeping the ten-argument form
 * for replicas of an earlier version (creating the current bodies at 11 is harmless: the
 * columns they name exist once the migrations of the same run have all applied).
 *
 * The scope's `earliest_expiry` is never later than any of its entries' expiry, so a set in a
 * scope whose earliest expiry has not passed deletes nothing and reads nothing more; once it
 * has, the set deletes the expired rows first. The limits count only unexpired entries.
 */
export function entryFunctions(s: string): string {
  return `
CREATE OR REPLACE FUNCTION ${s}wm_set_entry(
  p_lock_class integer, p_memory_id text, p_tenant_id text, p_conversation_id text, p_agent_id text,
  p_key text, p_value_json text, p_version bigint, p_max_entries bigint, p_max_total_bytes bigint, p_ttl_ms bigint
) RETURNS jsonb LANGUAGE plpgsql AS $fn$
DECLARE
  present boolean;
  entries bigint;
  other_bytes bigint;
  total bigint;
  stored ${s}working_memory_entries;
  previous bigint;
  earliest timestamptz;
  expires timestamptz;
BEGIN
  PERFORM pg_advisory_xact_lock(p_lock_class, hashtext(p_memory_id));
  -- Locked: a delete changes the version without the scope's lock, and must not slip between
  -- this read and the write below (the caller trusts "before" to be the state this set changed).
  SELECT version, earliest_expiry INTO previous, earliest FROM ${s}working_memory_versions
    WHERE memory_id = p_memory_id FOR UPDATE;
  IF earliest <= now() THEN
    DELETE FROM ${s}working_memory_entries WHERE memory_id = p_memory_id AND expires_at <= now();
    SELECT min(expires_at) INTO earliest FROM ${s}working_memory_entries WHERE memory_id = p_memory_id;
  END IF;
  SELECT EXISTS (SELECT 1 FROM ${s}working_memory_entries WHERE memory_id = p_memory_id AND entry_key = p_key
      AND (expires_at IS NULL OR expires_at > now())),
    (SELECT count(*) FROM ${s}working_memory_entries WHERE memory_id = p_memory_id
      AND (expires_at IS NULL OR expires_at > now())),
    (SELECT COALESCE(SUM(octet_length(entry_key) + octet_length(entry_json)), 0)::bigint
       FROM ${s}working_memory_entries WHERE memory_id = p_memory_id AND entry_key <> p_key
         AND (expires_at IS NULL OR expires_at > now()))
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
  expires := now() + p_ttl_ms * interval '1 millisecond';
  -- created_at is set on insert only, so a replaced entry keeps it (an expired one is new);
  -- the expiry is the new set's.
  INSERT INTO ${s}working_memory_entries (memory_id, entry_key, entry_json, created_at, updated_at, expires_at)
  VALUES (p_memory_id, p_key, p_value_json, now(), now(), expires)
  ON CONFLICT (memory_id, entry_key) DO UPDATE SET entry_json = excluded.entry_json, updated_at = excluded.updated_at,
    expires_at = excluded.expires_at,
    created_at = CASE WHEN ${s}working_memory_entries.expires_at <= now() THEN excluded.created_at
      ELSE ${s}working_memory_entries.created_at END
  RETURNING * INTO stored;
  INSERT INTO ${s}working_memory_versions (memory_id, version, earliest_expiry)
  VALUES (p_memory_id, p_version, LEAST(earliest, expires))
  ON CONFLICT (memory_id) DO UPDATE SET version = excluded.version, earliest_expiry = excluded.earliest_expiry;
  RETURN jsonb_build_object('entry', to_jsonb(stored), 'previous_version', COALESCE(previous, 0));
END
$fn$;

CREATE OR REPLACE FUNCTION ${s}wm_set_entry(
  p_lock_class integer, p_memory_id text, p_tenant_id text, p_conversation_id text, p_agent_id text,
  p_key text, p_value_json text, p_version bigint, p_max_entries bigint, p_max_total_bytes bigint
) RETURNS jsonb LANGUAGE sql AS $fn$
  SELECT ${s}wm_set_entry(p_lock_class, p_memory_id, p_tenant_id, p_conversation_id, p_agent_id, p_key,
    p_value_json, p_version, p_max_entries, p_max_total_bytes, NULL::bigint)
$fn$;
`;
}

/** Migration 21: the expiry columns, then the functions that keep and read them. */
export function entryExpiryMigration(s: string): string {
  return `
ALTER TABLE ${s}working_memory_entries ADD COLUMN expires_at timestamptz;
ALTER TABLE ${s}working_memory_versions ADD COLUMN earliest_expiry timestamptz;
${entryFunctions(s)}`;
}
