/**
 * Versioned schema migrations of the Postgres stores. The tables and columns are those of the
 * SQLite design (its migrations 2 and 3), with Postgres types: `timestamptz` times, `jsonb`
 * settings and payloads, booleans, and identity columns where SQLite orders by rowid.
 * @module
 */
import type { Pool, PoolClient } from 'pg';
import { StoreError } from '../../core/errors.js';
import { OBSERVATION_SOURCES } from '../../core/observation.js';
import { lockKey64, query, transaction, validateSchemaName } from './postgres-connection.js';
import { entryExpiryMigration, entryFunctions } from './postgres-entry-functions.js';
import { observeFunctions } from './postgres-observe-functions.js';
import { conversationMessageFunctions, endedRunTrigger, runEventFunctions } from './postgres-run-functions.js';

/** One schema step: SQL run inside the migration transaction. */
export interface PostgresMigration {
  readonly version: number;
  readonly description: string;
  /** The DDL, given the quoted schema prefix (`"schema".`). */
  readonly up: (prefix: string) => string;
}

const MEMORY_TABLES = (s: string): string => `
CREATE TABLE ${s}om_memory_records (
  memory_id text PRIMARY KEY,
  tenant_id text NOT NULL,
  conversation_id text NOT NULL,
  agent_id text NOT NULL,
  enabled boolean,
  state_version bigint NOT NULL,
  config_json jsonb NOT NULL DEFAULT '{}',
  observed_through_message_seq bigint NOT NULL DEFAULT 0,
  last_message_seq bigint NOT NULL DEFAULT 0,
  observation_count bigint NOT NULL DEFAULT 0,
  last_observation_seq bigint NOT NULL DEFAULT 0,
  active_observation_tokens bigint NOT NULL DEFAULT 0,
  unreflected_observation_tokens bigint NOT NULL DEFAULT 0,
  active_reflection text,
  active_reflection_tokens bigint,
  reflection_structured_json jsonb,
  reflection_through_seq bigint,
  reflection_created_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  UNIQUE (tenant_id, conversation_id, agent_id)
);
CREATE TABLE ${s}om_operation_log (
  operation_id text PRIMARY KEY,
  log_position bigint GENERATED ALWAYS AS IDENTITY,
  memory_id text NOT NULL,
  tenant_id text NOT NULL,
  conversation_id text NOT NULL,
  agent_id text NOT NULL,
  run_id text NOT NULL,
  tool_call_id text NOT NULL,
  scope_sequence bigint NOT NULL,
  operation_type text NOT NULL CHECK (operation_type IN ('enable', 'disable', 'observe', 'reflect', 'reflect_now')),
  status text NOT NULL CHECK (status IN ('queued', 'processing', 'applied', 'failed')),
  payload_json jsonb NOT NULL,
  error_text text NOT NULL,
  attempt integer NOT NULL DEFAULT 0,
  lease_owner text,
  lease_expires_at timestamptz,
  available_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  UNIQUE (memory_id, scope_sequence)
);
CREATE INDEX om_operation_log_queued_idx ON ${s}om_operation_log (created_at, log_position) WHERE status = 'queued';
CREATE INDEX om_operation_log_pending_scope_idx ON ${s}om_operation_log (memory_id, scope_sequence) WHERE status IN
  ('queued', 'processing');
CREATE INDEX om_operation_log_processing_idx ON ${s}om_operation_log (lease_expires_at) WHERE status = 'processing';
CREATE TABLE ${s}om_markers (
  marker_id text PRIMARY KEY,
  marker_position bigint GENERATED ALWAYS AS IDENTITY,
  memory_id text NOT NULL,
  marker_type text NOT NULL,
  cycle_id text NOT NULL,
  message_index_start bigint NOT NULL,
  message_index_end bigint NOT NULL,
  token_count bigint NOT NULL,
  payload_json jsonb NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX om_markers_memory_position_idx ON ${s}om_markers (memory_id, marker_position);
CREATE TABLE ${s}om_observations (
  memory_id text NOT NULL,
  seq bigint NOT NULL,
  content text NOT NULL,
  token_count bigint NOT NULL,
  importance double precision,
  created_at timestamptz NOT NULL,
  source_start_seq bigint NOT NULL,
  source_end_seq bigint NOT NULL,
  operation_id text NOT NULL,
  PRIMARY KEY (memory_id, seq)
);
CREATE TABLE ${s}om_messages (
  memory_id text NOT NULL,
  seq bigint NOT NULL,
  message_key text NOT NULL,
  role text NOT NULL,
  name text NOT NULL,
  tool_call_id text NOT NULL,
  content text NOT NULL,
  token_count bigint NOT NULL,
  observed boolean NOT NULL DEFAULT false,
  PRIMARY KEY (memory_id, seq),
  UNIQUE (memory_id, message_key)
);
CREATE TABLE ${s}working_memory_entries (
  memory_id text NOT NULL,
  -- "C" compares bytes: the port's key order, served by the primary key.
  entry_key text COLLATE "C" NOT NULL,
  entry_json text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (memory_id, entry_key)
);
`;

const HARNESS_TABLES = (s: string): string => `
CREATE TABLE ${s}harness_runs (
  run_id text PRIMARY KEY,
  memory_id text NOT NULL,
  tenant_id text NOT NULL,
  conversation_id text NOT NULL,
  agent_id text NOT NULL,
  status text NOT NULL,
  prompt text NOT NULL,
  model text NOT NULL,
  system_prompt text NOT NULL,
  max_steps integer NOT NULL,
  output text,
  error_json jsonb,
  steps integer NOT NULL,
  input_tokens bigint NOT NULL,
  output_tokens bigint NOT NULL,
  parent_run_id text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX harness_runs_memory_idx ON ${s}harness_runs (memory_id);
-- json, not jsonb: event payloads and tool calls keep their key order for SSE clients.
CREATE TABLE ${s}harness_run_events (
  run_id text NOT NULL,
  seq integer NOT NULL,
  type text NOT NULL,
  "timestamp" timestamptz NOT NULL,
  payload_json json NOT NULL,
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE ${s}harness_conversation_messages (
  memory_id text NOT NULL,
  position bigint NOT NULL,
  message_id text NOT NULL,
  run_id text NOT NULL,
  role text NOT NULL,
  content text NOT NULL,
  name text,
  tool_call_id text,
  tool_calls_json json,
  token_count bigint NOT NULL,
  PRIMARY KEY (memory_id, position),
  UNIQUE (memory_id, message_id)
);
`;

// A version number per scope's working memory, changed by every write, so a rendered
// snippet can be reused while it is current. Random, so a forgotten scope never repeats one.
const WORKING_MEMORY_VERSIONS = (s: string): string => `
CREATE TABLE ${s}working_memory_versions (
  memory_id text PRIMARY KEY,
  version bigint NOT NULL
);
INSERT INTO ${s}working_memory_versions (memory_id, version)
  SELECT memory_id, floor(random() * 281474976710655)::bigint + 1 FROM ${s}working_memory_entries GROUP BY memory_id;
`;

// Version 4 (SQLite's version 7): the supersession set of each scope and its counts, seeded
// from each stored reflection (references checked as a reflection applied now would be);
// observation provenance (earlier rows become 'mixed'); scope and conversation generations,
// replaced by every forget.
const SUPERSESSION_SET_AND_PROVENANCE = (s: string): string => `
CREATE TABLE ${s}om_reflection_links (
  memory_id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('supersession', 'contradiction')),
  first_seq bigint NOT NULL,
  second_seq bigint NOT NULL,
  detail text NOT NULL,
  operation_id text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (memory_id, kind, first_seq, second_seq)
);
ALTER TABLE ${s}om_memory_records
  ADD COLUMN supersession_count bigint NOT NULL DEFAULT 0,
  ADD COLUMN contradiction_count bigint NOT NULL DEFAULT 0,
  ADD COLUMN rejected_reference_count bigint NOT NULL DEFAULT 0;
ALTER TABLE ${s}om_observations
  ADD COLUMN source text NOT NULL DEFAULT 'mixed'
    CHECK (source IN (${OBSERVATION_SOURCES.map((source) => `'${source}'`).join(', ')})),
  ADD COLUMN source_seqs_json jsonb NOT NULL DEFAULT '[]';
CREATE TABLE ${s}om_scope_generations (
  memory_id text PRIMARY KEY,
  generation bigint NOT NULL
);
CREATE TABLE ${s}harness_conversation_generations (
  memory_id text PRIMARY KEY,
  generation bigint NOT NULL
);
WITH links AS (
  SELECT r.memory_id, r.last_observation_seq AS last_seq, r.updated_at, 'supersession' AS kind,
    (item->>'newerSeq')::numeric AS first_seq, (item->>'olderSeq')::numeric AS second_seq, COALESCE(item->>'reason',
      '') AS detail
  FROM ${s}om_memory_records AS r, jsonb_array_elements(r.reflection_structured_json->'supersessions') AS item
  WHERE r.reflection_structured_json->>'schemaVersion' = '1' AND
    jsonb_typeof(r.reflection_structured_json->'supersessions') = 'array'
    AND jsonb_typeof(item->'newerSeq') = 'number' AND jsonb_typeof(item->'olderSeq') = 'number'
  UNION ALL
  SELECT r.memory_id, r.last_observation_seq, r.updated_at, 'contradiction',
    LEAST((item->>'seqA')::numeric, (item->>'seqB')::numeric), GREATEST((item->>'seqA')::numeric,
      (item->>'seqB')::numeric), COALESCE(item->>'detail', '')
  FROM ${s}om_memory_records AS r, jsonb_array_elements(r.reflection_structured_json->'contradictions') AS item
  WHERE r.reflection_structured_json->>'schemaVersion' = '1' AND
    jsonb_typeof(r.reflection_structured_json->'contradictions') = 'array'
    AND jsonb_typeof(item->'seqA') = 'number' AND jsonb_typeof(item->'seqB') = 'number')
INSERT INTO ${s}om_reflection_links (memory_id, kind, first_seq, second_seq, detail, operation_id, created_at)
SELECT memory_id, kind, first_seq, second_seq, detail, 'schema-4', updated_at FROM links
WHERE first_seq = trunc(first_seq) AND second_seq = trunc(second_seq) AND (
  (kind = 'supersession' AND second_seq >= 1 AND first_seq > second_seq AND first_seq <= last_seq)
  OR (kind = 'contradiction' AND first_seq >= 1 AND first_seq < second_seq AND second_seq <= last_seq))
ON CONFLICT DO NOTHING;
UPDATE ${s}om_memory_records AS r SET
  supersession_count = (SELECT count(*) FROM ${s}om_reflection_links AS l WHERE l.memory_id = r.memory_id AND l.kind =
    'supersession'),
  contradiction_count = (SELECT count(*) FROM ${s}om_reflection_links AS l WHERE l.memory_id = r.memory_id AND l.kind
    = 'contradiction')
WHERE r.active_reflection IS NOT NULL;
`;

// The 'dead' operation status (attempts used up), and a partial index that keeps counting a
// scope's dead operations cheap without touching any other write.
const DEAD_OPERATIONS = (s: string): string => `
ALTER TABLE ${s}om_operation_log DROP CONSTRAINT IF EXISTS om_operation_log_status_check;
ALTER TABLE ${s}om_operation_log ADD CONSTRAINT om_operation_log_status_check CHECK (status IN ('queued',
  'processing', 'applied', 'failed', 'dead'));
CREATE INDEX om_operation_log_dead_idx ON ${s}om_operation_log (memory_id) WHERE status = 'dead';
`;

// The 'import' operation type: observations brought in from elsewhere are logged as applied.
const IMPORT_OPERATIONS = (s: string): string => `
ALTER TABLE ${s}om_operation_log DROP CONSTRAINT IF EXISTS om_operation_log_operation_type_check;
ALTER TABLE ${s}om_operation_log ADD CONSTRAINT om_operation_log_operation_type_check
  CHECK (operation_type IN ('enable', 'disable', 'observe', 'reflect', 'reflect_now', 'import'));
`;

// Hand corrections of observations: the 'correct' operation type, a count the caches of a
// scope's observations compare, and the index that lists a tenant's scopes in byte order.
const CORRECTIONS_AND_SCOPE_LISTING = (s: string): string => `
ALTER TABLE ${s}om_operation_log DROP CONSTRAINT IF EXISTS om_operation_log_operation_type_check;
ALTER TABLE ${s}om_operation_log ADD CONSTRAINT om_operation_log_operation_type_check
  CHECK (operation_type IN ('enable', 'disable', 'observe', 'reflect', 'reflect_now', 'import', 'correct'));
ALTER TABLE ${s}om_memory_records ADD COLUMN correction_count bigint NOT NULL DEFAULT 0;
CREATE INDEX om_memory_records_tenant_scope_idx
  ON ${s}om_memory_records (tenant_id, conversation_id COLLATE "C", agent_id COLLATE "C");
`;

/** The version that puts the tenant policies on the tables (see {@link rowLevelSecurity}). */
const ROW_LEVEL_SECURITY_VERSION = 22;

/** Every migration, in order. */
export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = Object.freeze([
  {
    version: 1,
    description: 'memory: records, leased operation log, markers, observations, messages, working memory',
    up: MEMORY_TABLES,
  },
  { version: 2, description: 'harness runs, run events and conversation messages', up: HARNESS_TABLES },
  {
    version: 3,
    description: 'working_memory_versions: a per-scope version of working memory, changed by every write',
    up: WORKING_MEMORY_VERSIONS,
  },
  {
    version: 4,
    description:
      'om_reflection_links (the supersession set per scope) and its counts; observation provenance (source, cited ' +
      'message seqs); scope and conversation generations, replaced by every forget',
    up: SUPERSESSION_SET_AND_PROVENANCE,
  },
  {
    version: 5,
    description: "the 'dead' operation status, with a partial index of dead operations per scope",
    up: DEAD_OPERATIONS,
  },
  { version: 6, description: "the 'import' operation type (importObservations)", up: IMPORT_OPERATIONS },
  {
    version: 7,
    description:
      "the 'correct' operation type and om_memory_records.correction_count (observations fixed by hand); an index " +
      "listing a tenant's scopes in byte order",
    up: CORRECTIONS_AND_SCOPE_LISTING,
  },
  {
    version: 8,
    description:
      "harness_runs_tenant_created_idx: a tenant's runs newest first, for GET /v1/runs; run creation times kept " +
      'to the millisecond, the precision of RunRecord.createdAt and of the listing cursor',
    up: (s) => `
UPDATE ${s}harness_runs SET created_at = date_trunc('milliseconds', created_at);
CREATE INDEX harness_runs_tenant_created_idx ON ${s}harness_runs (tenant_id, created_at, run_id);`,
  },
  {
    version: 9,
    description:
      'om_observe_append_and_claim and om_observe_apply: an observe in two statements (append, enqueue and ' +
      'claim; then the apply), each checking under the scope lock the premise the store decided from',
    up: observeFunctions,
  },
  {
    version: 10,
    description:
      'om_memory_records.unobserved_message_tokens: the tokens waiting for an observe, kept by each append and ' +
      'apply, so an append no longer sums every unobserved message; the observe functions keep it too',
    up: (s) => `
ALTER TABLE ${s}om_memory_records ADD COLUMN unobserved_message_tokens bigint NOT NULL DEFAULT 0;
UPDATE ${s}om_memory_records AS r SET unobserved_message_tokens = (
  SELECT COALESCE(SUM(m.token_count), 0) FROM ${s}om_messages AS m
  WHERE m.memory_id = r.memory_id AND m.seq > r.observed_through_message_seq);
${observeFunctions(s)}`,
  },
  {
    version: 11,
    description: 'wm_set_entry: a working-memory set in one statement (scope lock, limits, record, entry, version)',
    up: entryFunctions,
  },
  {
    version: 12,
    description: 'harness_append_run_event: a run event in one statement (run lock, next seq, insert)',
    up: runEventFunctions,
  },
  {
    version: 13,
    description:
      "harness_append_messages: a conversation's messages in one statement (conversation lock, generation, insert)",
    up: conversationMessageFunctions,
  },
  {
    version: 14,
    description: "wm_set_entry answers the scope's working-memory version before the set, with the entry",
    up: entryFunctions,
  },
  {
    version: 15,
    description:
      'a record for each scope that has working-memory entries and none (written only before schema 7), so it is ' +
      'listed',
    up: recordWorkingMemoryScopes,
  },
  {
    version: 16,
    description:
      'hm_fold(text): lower case as JavaScript folds it (ICU root locale where the server has ICU), for searches ' +
      'of observations, so a word matches alike on every backend',
    up: foldFunction,
  },
  {
    version: 17,
    description:
      'om_observe_append_and_claim takes the batch tokens and prefetches the oldest unobserved messages within ' +
      'them, not the whole backlog',
    up: (s) => `
DROP FUNCTION IF EXISTS ${s}om_observe_append_and_claim(integer, text, text, text, text, bigint, boolean, boolean,
  jsonb, boolean, bigint, text[], text[], text[], text[], text[], bigint[], text, jsonb, text, text, text,
  double precision);
${observeFunctions(s)}`,
  },
  {
    version: 18,
    description: 'harness_runs_created_idx: runs oldest first, for run retention (deleteEndedRuns)',
    up: (s) => `CREATE INDEX harness_runs_created_idx ON ${s}harness_runs (created_at, run_id);`,
  },
  {
    version: 19,
    description:
      'harness_append_run_event appends to a run that ended only its first terminal event (a run swept as ' +
      'abandoned got the events of the paused process that was running it after its run.failed)',
    up: runEventFunctions,
  },
  {
    version: 20,
    description:
      'a run that ended is not changed again (a trigger) and an event refused after its end has its own SQLSTATE, ' +
      'whatever replica (an older version too) writes',
    up: (s) => `${runEventFunctions(s)}${endedRunTrigger(s)}`,
  },
  {
    version: 21,
    description:
      'working-memory expiry: working_memory_entries.expires_at, working_memory_versions.earliest_expiry, and ' +
      'wm_set_entry takes a time to live and deletes the expired entries of its scope',
    up: entryExpiryMigration,
  },
  {
    version: ROW_LEVEL_SECURITY_VERSION,
    description:
      'row-level security on every table of tenant data: a role that neither owns the tables nor bypasses ' +
      'row-level security reads and writes only the rows of the tenants harness_tenant_roles names for it',
    up: rowLevelSecurity,
  },
  {
    version: 23,
    description:
      "the harness's functions run with search_path pg_catalog, pg_temp: a function another role creates in a " +
      'schema on the path cannot stand in for a built-in one they call',
    up: pinFunctionSearchPaths,
  },
  {
    version: 24,
    description:
      'harness_run_events.run_id references harness_runs (ON DELETE CASCADE): no event outlives its run, ' +
      'whatever statement or role deletes the run; events an older version left without one are removed',
    up: (s) => `
DELETE FROM ${s}harness_run_events AS e WHERE NOT EXISTS (SELECT 1 FROM ${s}harness_runs AS r WHERE r.run_id = e.run_id);
ALTER TABLE ${s}harness_run_events ADD CONSTRAINT harness_run_events_run_fk
  FOREIGN KEY (run_id) REFERENCES ${s}harness_runs (run_id) ON DELETE CASCADE;`,
  },
  {
    version: 25,
    description:
      "om_observe_append_and_claim logs an observe's messages as the messages it stored (not the transcript it " +
      'was given) and the unobserved tokens, as the other stores do',
    // CREATE OR REPLACE drops the pinned search_path: pinned again.
    up: (s) => `${observeFunctions(s)}${pinFunctionSearchPaths(s)}`,
  },
  {
    version: 26,
    description:
      'working_memory_versions_expiry_idx: the scopes by earliest expiry (only those with one), so the sweep ' +
      'deleting expired working-memory entries reads the scopes due, not every scope',
    // Partial: a scope with no expiring entry has no row in it; an update that leaves the
    // earliest expiry as it was stays a HOT update.
    up: (s) => `
CREATE INDEX working_memory_versions_expiry_idx ON ${s}working_memory_versions (earliest_expiry)
  WHERE earliest_expiry IS NOT NULL;`,
  },
]);

/**
 * Gives our functions of the schema ({@link PINNED_FUNCTIONS}) `search_path = pg_catalog,
 * pg_temp`. Postgres picks the closest overload of a name from every schema on the path, so a
 * role that may create functions in one of them (`public`, before Postgres 15, for every role)
 * could otherwise have its own run, with the harness's rights, where a function of ours calls a
 * built-in one. Ours name the schema's tables with its prefix, so they need nothing else on
 * the path. Other functions of a shared schema are left as they are.
 *
 * NOTE: `CREATE OR REPLACE FUNCTION` drops this setting: a later migration replacing one of
 * them must run this again (postgres-row-security.test.ts checks each has it).
 */
function pinFunctionSearchPaths(s: string): string {
  const schema = s.slice(1, -2).replaceAll("'", "''");
  const names = PINNED_FUNCTIONS.map((name) => `'${name}'`).join(', ');
  return `
DO $pin$
DECLARE
  fn regprocedure;
BEGIN
  FOR fn IN SELECT p.oid::regprocedure FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace
      WHERE n.nspname = '${schema}' AND p.prokind = 'f' AND p.proname IN (${names}) LOOP
    EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, pg_temp', fn);
  END LOOP;
END
$pin$;`;
}

/**
 * The schema's functions that migration 23 pins: ours only, never another application's or an
 * extension's in a shared schema (`public`). `hm_fold` is left out: it only calls `lower(text)`,
 * an exact match, and a pinned SQL function is no longer inlined into the searches using it.
 */
export const PINNED_FUNCTIONS: readonly string[] = [
  'wm_set_entry',
  'om_observe_append_and_claim',
  'om_observe_apply',
  'harness_append_run_event',
  'harness_append_messages',
  'harness_runs_ended_stay',
];

/** Tables keyed by scope whose rows carry the tenant id in a column of their own. */
const TENANT_COLUMN_TABLES = ['om_memory_records', 'om_operation_log', 'harness_runs'] as const;

/** Tables keyed by scope whose rows name it only by memory id (`<length>:<tenant id>/…`). */
const MEMORY_ID_TABLES = [
  'om_markers',
  'om_observations',
  'om_messages',
  'om_reflection_links',
  'om_scope_generations',
  'working_memory_entries',
  'working_memory_versions',
  'harness_conversation_messages',
  'harness_conversation_generations',
] as const;

/**
 * Row-level security as a second wall between tenants, for roles other than the harness's
 * own. `harness_tenant_roles` (kept by the operator, as the owner) names the tenants each
 * database role may reach. A role that neither owns the tables nor has BYPASSRLS (a reporting
 * tool, a support console, a tenant's own read access) then reads and writes only those
 * tenants' rows, and reads of the mapping show it only its own. Nothing a session can set
 * widens that: a custom setting would be, since any session may change it. The tables' owner
 * (the role that migrated them, which the harness must be) is not held to it, so the harness's
 * queries carry no extra condition. Run events belong to their run's tenant.
 *
 * NOTE: the memory id's length prefix makes the prefix test exact: `1:a/` can only begin the
 * memory id of tenant `a`, whatever characters the ids hold.
 */
function rowLevelSecurity(s: string): string {
  const ofTenant = (memoryId: string, tenantId: string): string =>
    `starts_with(${memoryId}, length(${tenantId})::text || ':' || ${tenantId} || '/')`;
  const byMemoryId = (table: string): string =>
    `EXISTS (SELECT 1 FROM ${s}harness_tenant_roles AS allowed WHERE allowed.role_name = current_user AND ` +
    `${ofTenant(`${table}.memory_id`, 'allowed.tenant_id')})`;
  // A row's tenant column must also be its memory id's tenant: a row of a mapped tenant
  // naming another tenant's scope would have the harness act on that scope.
  const byColumn = (table: string): string =>
    `${byMemoryId(table)} AND ${ofTenant(`${table}.memory_id`, `${table}.tenant_id`)}`;
  const byRun =
    `EXISTS (SELECT 1 FROM ${s}harness_runs AS run WHERE run.run_id = harness_run_events.run_id ` +
    `AND run.tenant_id IN (SELECT tenant_id FROM ${s}harness_tenant_roles WHERE role_name = current_user))`;
  const policies: Array<[string, string]> = [
    ...TENANT_COLUMN_TABLES.map((table): [string, string] => [table, byColumn(table)]),
    ...MEMORY_ID_TABLES.map((table): [string, string] => [table, byMemoryId(table)]),
    ['harness_run_events', byRun],
  ];
  return `
CREATE TABLE ${s}harness_tenant_roles (
  role_name text NOT NULL,
  tenant_id text NOT NULL,
  PRIMARY KEY (role_name, tenant_id)
);
ALTER TABLE ${s}harness_tenant_roles ENABLE ROW LEVEL SECURITY;
CREATE POLICY harness_own_tenants ON ${s}harness_tenant_roles FOR SELECT USING (role_name = current_user);
ALTER TABLE ${s}schema_migrations ENABLE ROW LEVEL SECURITY;
CREATE POLICY harness_read_only ON ${s}schema_migrations FOR SELECT USING (true);
${policies
  .map(
    ([table, condition]) =>
      `ALTER TABLE ${s}${table} ENABLE ROW LEVEL SECURITY;\n` +
      `CREATE POLICY harness_tenant ON ${s}${table} USING (${condition}) WITH CHECK (${condition});\n`,
  )
  .join('')}`;
}

/**
 * Gives a record to each scope that has working-memory entries and none. The memory id is
 * read back by its length prefixes (`3:abc/…`); one that is not a valid scope's is left alone.
 */
function recordWorkingMemoryScopes(s: string): string {
  return `
DO $migration$
DECLARE
  orphan text;
  rest text;
  size integer;
  ids text[];
BEGIN
  FOR orphan IN SELECT DISTINCT e.memory_id FROM ${s}working_memory_entries AS e
      WHERE NOT EXISTS (SELECT 1 FROM ${s}om_memory_records AS r WHERE r.memory_id = e.memory_id) LOOP
    rest := orphan;
    ids := ARRAY[]::text[];
    FOR part IN 1..3 LOOP
      EXIT WHEN rest !~ '^[1-9][0-9]{0,2}:';
      size := split_part(rest, ':', 1)::integer;
      ids := ids || substr(rest, length(size::text) + 2, size);
      rest := substr(rest, length(size::text) + 2 + size);
      EXIT WHEN part = 3;
      EXIT WHEN left(rest, 1) <> '/';
      rest := substr(rest, 2);
    END LOOP;
    CONTINUE WHEN cardinality(ids) <> 3 OR rest <> ''
      OR EXISTS (SELECT 1 FROM unnest(ids) AS id WHERE id !~ '^[A-Za-z0-9._:@-]{1,128}$' OR id IN ('.', '..'))
      OR orphan <> length(ids[1]) || ':' || ids[1] || '/' || length(ids[2]) || ':' || ids[2] || '/'
        || length(ids[3]) || ':' || ids[3];
    INSERT INTO ${s}om_memory_records (memory_id, tenant_id, conversation_id, agent_id, enabled, state_version,
      config_json, created_at, updated_at)
    VALUES (orphan, ids[1], ids[2], ids[3], NULL, 1, '{}', now(), now())
    ON CONFLICT DO NOTHING;
  END LOOP;
END
$migration$;`;
}

/**
 * `hm_fold`: `lower` under the ICU root collation, which folds as JavaScript's `toLowerCase`
 * does (final sigma, dotted capital I); under the database's own collation `lower` may fold
 * ASCII only (`C`) or differ. A server built without ICU falls back to that `lower`.
 */
function foldFunction(s: string): string {
  return `
DO $migration$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu') THEN
    CREATE FUNCTION ${s}hm_fold(value text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
      AS $fold$ SELECT lower(value COLLATE "und-x-icu") $fold$;
  ELSE
    CREATE FUNCTION ${s}hm_fold(value text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
      AS $fold$ SELECT lower(value) $fold$;
  END IF;
END
$migration$;`;
}

/** The schema version this code writes and reads. */
export const POSTGRES_SCHEMA_VERSION: number = Math.max(...POSTGRES_MIGRATIONS.map((migration) => migration.version));

/**
 * Brings `schema` to {@link POSTGRES_SCHEMA_VERSION}, creating it if missing. Everything runs
 * in one transaction holding `pg_advisory_xact_lock` on a key derived from the schema name, so
 * replicas starting together apply each migration once and the others find it done; the lock
 * ends with the transaction, so a crashed migrator leaves nothing held. Returns the version.
 */
export async function migratePostgresSchema(
  pool: Pool,
  schema: string,
  migrations: readonly PostgresMigration[] = POSTGRES_MIGRATIONS,
): Promise<number> {
  validateSchemaName(schema, 'postgres');
  const prefix = `"${schema}".`;
  const latest = migrations.reduce((max, migration) => Math.max(max, migration.version), 0);
  return transaction(pool, async (client) => {
    await query(client, 'SELECT pg_advisory_xact_lock($1::bigint)', [lockKey64(`harness-memory:migrate:${schema}`)]);
    // Postgres checks CREATE on the database before IF NOT EXISTS: a role that owns an existing
    // schema, without that privilege, must not be asked for it.
    const existing = await query(client, 'SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (existing.rowCount === 0) await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    // The same for the table: a role without CREATE on a migrated schema must not be asked for it.
    const table = await query<{ found: string | null }>(client, 'SELECT to_regclass($1)::text AS found', [
      `${prefix}schema_migrations`,
    ]);
    if ((table.rows[0]?.found ?? null) === null)
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${prefix}schema_migrations (version integer PRIMARY KEY, description text ` +
          `NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
    const applied = await query<{ version: number }>(client, `SELECT version FROM ${prefix}schema_migrations`);
    const done = new Set(applied.rows.map((row) => row.version));
    const found = Math.max(0, ...done);
    if (found > latest) {
      throw new StoreError({
        store: 'postgres',
        message:
          `Schema ${schema} has version ${found}, newer than the ${latest} this version of ` +
          `harness-memory knows. Upgrade harness-memory, or use another schema.`,
        data: { schema, schemaVersion: found, supportedVersion: latest },
      });
    }
    for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(migration.version)) continue;
      await client.query(migration.up(prefix));
      await query(client, `INSERT INTO ${prefix}schema_migrations (version, description) VALUES ($1, $2)`, [
        migration.version,
        migration.description,
      ]);
      done.add(migration.version);
    }
    if (done.has(ROW_LEVEL_SECURITY_VERSION)) await refuseRestrictedRole(client, schema);
    return Math.max(0, ...done);
  });
}

/**
 * Fails when this connection's role would be held to the tenant policies (it neither owns the
 * tables nor has BYPASSRLS): the stores work across tenants and would find nothing. Such a
 * role ran before version 22 with plain grants; it needs the owner's rights now.
 */
async function refuseRestrictedRole(client: PoolClient, schema: string): Promise<void> {
  const table = `"${schema}".om_memory_records`;
  const { rows } = await query<{ active: boolean; role: string; owner: string }>(
    client,
    `SELECT row_security_active($1::regclass) AS active, current_user AS role, pg_get_userbyid(relowner) AS owner
     FROM pg_class WHERE oid = $1::regclass`,
    [table],
  );
  const found = rows[0];
  if (!found?.active) return;
  throw new StoreError({
    store: 'postgres',
    message:
      `The database role ${found.role} is held to the row-level security of schema ${schema}: it neither owns ` +
      `the tables (${found.owner} does) nor has BYPASSRLS, so the harness would see no memory. Connect as ` +
      `${found.owner} or a role that is a member of it, or grant ${found.role} BYPASSRLS.`,
    data: { schema, role: found.role, owner: found.owner },
  });
}
