/**
 * Versioned schema migrations of the SQLite store. Version 1 is the reference (Go harness)
 * schema; version 2 is this package's design and converts any version-1 data.
 * @module
 */
import type { Database } from 'better-sqlite3';
import { StoreError } from '../../core/errors.js';
import { OBSERVATION_SOURCES } from '../../core/observation.js';
import { parseReflection } from '../../core/parse-reflection.js';
import { checkReflectionReferences } from '../../core/reflection-links.js';
import { scopeOfMemoryId } from '../../core/scope.js';
import { readStructured } from '../_memory-rows.js';
import { STORE_NAME } from './sqlite-errors.js';
import { convertReferenceData } from './sqlite-reference-import.js';
import { SQL_NOW } from './sqlite-statements.js';

/** One schema step. `up` runs inside its own IMMEDIATE transaction. */
export interface SqliteMigration {
  readonly version: number;
  readonly description: string;
  readonly up: (db: Database) => void;
}

// The reference DDL, with IF NOT EXISTS so a database the Go harness made (these tables,
// no schema_migrations) is recognised as version 1.
const REFERENCE_SCHEMA = `
CREATE TABLE IF NOT EXISTS om_memory_records (
  memory_id TEXT PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  conversation_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  enabled BOOLEAN NOT NULL,
  state_version BIGINT NOT NULL,
  last_observed_message_index BIGINT NOT NULL,
  active_observations_json TEXT NOT NULL,
  active_observation_tokens BIGINT NOT NULL,
  active_reflection TEXT NOT NULL,
  active_reflection_tokens BIGINT NOT NULL,
  last_reflected_observation_seq BIGINT NOT NULL,
  config_json TEXT NOT NULL,
  created_at TIMESTAMP NOT NULL,
  updated_at TIMESTAMP NOT NULL,
  UNIQUE (tenant_id, conversation_id, agent_id)
);
CREATE TABLE IF NOT EXISTS om_operation_log (
  operation_id TEXT PRIMARY KEY,
  memory_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  scope_sequence BIGINT NOT NULL,
  operation_type TEXT NOT NULL,
  status TEXT NOT NULL,
  payload_json TEXT NOT NULL,
  error_text TEXT NOT NULL,
  created_at TIMESTAMP NOT NULL,
  updated_at TIMESTAMP NOT NULL
);
CREATE INDEX IF NOT EXISTS om_operation_log_memory_scope_seq_idx ON om_operation_log (memory_id, scope_sequence);
CREATE INDEX IF NOT EXISTS om_operation_log_status_created_idx ON om_operation_log (status, created_at);
CREATE TABLE IF NOT EXISTS om_markers (
  marker_id TEXT PRIMARY KEY,
  memory_id TEXT NOT NULL,
  marker_type TEXT NOT NULL,
  cycle_id TEXT NOT NULL,
  message_index_start BIGINT NOT NULL,
  message_index_end BIGINT NOT NULL,
  token_count BIGINT NOT NULL,
  payload_json TEXT NOT NULL,
  created_at TIMESTAMP NOT NULL
);
CREATE INDEX IF NOT EXISTS om_markers_memory_created_idx ON om_markers (memory_id, created_at);
CREATE TABLE IF NOT EXISTS working_memory_entries (
  memory_id TEXT NOT NULL,
  entry_key TEXT NOT NULL,
  entry_json TEXT NOT NULL,
  PRIMARY KEY (memory_id, entry_key)
);
`;

// Version-2 tables. The rebuilt ones are created under a `_next` name, filled from the
// version-1 rows, then renamed over the originals. `om_markers` keeps its version-1 shape;
// its message_index_* columns hold message seqs from version 2 on.
const DESIGN_TABLES = `
CREATE TABLE om_memory_records_next (
  memory_id TEXT PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  conversation_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  enabled INTEGER CHECK (enabled IN (0, 1)),
  state_version INTEGER NOT NULL,
  config_json TEXT NOT NULL DEFAULT '{}',
  observed_through_message_seq INTEGER NOT NULL DEFAULT 0,
  last_message_seq INTEGER NOT NULL DEFAULT 0,
  observation_count INTEGER NOT NULL DEFAULT 0,
  last_observation_seq INTEGER NOT NULL DEFAULT 0,
  active_observation_tokens INTEGER NOT NULL DEFAULT 0,
  unreflected_observation_tokens INTEGER NOT NULL DEFAULT 0,
  active_reflection TEXT,
  active_reflection_tokens INTEGER,
  reflection_structured_json TEXT,
  reflection_through_seq INTEGER,
  reflection_created_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (tenant_id, conversation_id, agent_id)
);
CREATE TABLE om_operation_log_next (
  operation_id TEXT PRIMARY KEY,
  memory_id TEXT NOT NULL,
  tenant_id TEXT NOT NULL,
  conversation_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  scope_sequence INTEGER NOT NULL,
  operation_type TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued', 'processing', 'applied', 'failed')),
  payload_json TEXT NOT NULL,
  error_text TEXT NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 0,
  lease_owner TEXT,
  lease_expires_at TEXT,
  available_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE working_memory_entries_next (
  memory_id TEXT NOT NULL,
  entry_key TEXT NOT NULL,
  entry_json TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (memory_id, entry_key)
);
CREATE TABLE om_observations (
  memory_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  content TEXT NOT NULL,
  token_count INTEGER NOT NULL,
  importance REAL,
  created_at TEXT NOT NULL,
  source_start_seq INTEGER NOT NULL,
  source_end_seq INTEGER NOT NULL,
  operation_id TEXT NOT NULL,
  PRIMARY KEY (memory_id, seq)
) WITHOUT ROWID;
CREATE TABLE om_messages (
  memory_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  message_key TEXT NOT NULL,
  role TEXT NOT NULL,
  name TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  content TEXT NOT NULL,
  token_count INTEGER NOT NULL,
  observed INTEGER NOT NULL DEFAULT 0 CHECK (observed IN (0, 1)),
  PRIMARY KEY (memory_id, seq),
  UNIQUE (memory_id, message_key)
) WITHOUT ROWID;
`;

// The backfill sums each scope's unobserved messages once; from then on appends add and applies recount the tail.
const UNOBSERVED_MESSAGE_TOKENS = `
ALTER TABLE om_memory_records ADD COLUMN unobserved_message_tokens INTEGER NOT NULL DEFAULT 0;
UPDATE om_memory_records SET unobserved_message_tokens = (
  SELECT COALESCE(SUM(m.token_count), 0) FROM om_messages AS m
  WHERE m.memory_id = om_memory_records.memory_id AND m.seq > om_memory_records.observed_through_message_seq);
`;

const SWAP_AND_INDEX = `
DROP TABLE om_memory_records;
DROP TABLE om_operation_log;
DROP TABLE working_memory_entries;
ALTER TABLE om_memory_records_next RENAME TO om_memory_records;
ALTER TABLE om_operation_log_next RENAME TO om_operation_log;
ALTER TABLE working_memory_entries_next RENAME TO working_memory_entries;
CREATE UNIQUE INDEX om_operation_log_memory_scope_seq_idx ON om_operation_log (memory_id, scope_sequence);
CREATE INDEX om_operation_log_status_created_idx ON om_operation_log (status, created_at);
CREATE INDEX om_operation_log_status_available_idx ON om_operation_log (status, available_at);
CREATE INDEX om_operation_log_memory_status_seq_idx ON om_operation_log (memory_id, status, scope_sequence);
`;

// The harness's runs, their event history, and each conversation's messages, so that a
// client connecting late or reconnecting misses nothing and later runs can replay history.
const HARNESS_TABLES = `
CREATE TABLE harness_runs (
  run_id TEXT PRIMARY KEY,
  memory_id TEXT NOT NULL,
  tenant_id TEXT NOT NULL,
  conversation_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  status TEXT NOT NULL,
  prompt TEXT NOT NULL,
  model TEXT NOT NULL,
  system_prompt TEXT NOT NULL,
  max_steps INTEGER NOT NULL,
  output TEXT,
  error_json TEXT,
  steps INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  parent_run_id TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX harness_runs_memory_idx ON harness_runs (memory_id);
CREATE TABLE harness_run_events (
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  payload_json TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE harness_conversation_messages (
  memory_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  message_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  role TEXT NOT NULL,
  content TEXT NOT NULL,
  name TEXT,
  tool_call_id TEXT,
  tool_calls_json TEXT,
  token_count INTEGER NOT NULL,
  PRIMARY KEY (memory_id, position),
  UNIQUE (memory_id, message_id)
);
`;

// Version 5: fewer b-trees for each observe to write. Every b-tree an insert or update
// touches is one more 4 KiB page in the write-ahead log at commit, and the commit's page
// writes are most of what an observe costs. The operation log is clustered by scope and
// sequence (which is also its uniqueness rule), with small partial indexes holding only
// pending work; an operation is found by its scope and sequence, or by its id among its
// scope's pending operations, so ids (ULIDs) need no index of their own; markers are clustered by scope and
// insertion position. Observed messages
// lose their text at the scope's next append (whose page write they share) rather than in
// the apply; messages_cleared_through_seq says how far that has gone.
const COMPACT_QUEUE_AND_MARKERS = `
CREATE TABLE om_operation_log_next (
  memory_id TEXT NOT NULL,
  scope_sequence INTEGER NOT NULL,
  operation_id TEXT NOT NULL,
  tenant_id TEXT NOT NULL,
  conversation_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  operation_type TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued', 'processing', 'applied', 'failed')),
  payload_json TEXT NOT NULL,
  error_text TEXT NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 0,
  lease_owner TEXT,
  lease_expires_at TEXT,
  available_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (memory_id, scope_sequence)
) WITHOUT ROWID;
INSERT INTO om_operation_log_next
  SELECT memory_id, scope_sequence, operation_id, tenant_id, conversation_id, agent_id, run_id, tool_call_id,
    operation_type, status,
    payload_json, error_text, attempt, lease_owner, lease_expires_at, available_at, created_at, updated_at
  FROM om_operation_log;
DROP TABLE om_operation_log;
ALTER TABLE om_operation_log_next RENAME TO om_operation_log;
CREATE INDEX om_operation_log_pending_idx ON om_operation_log (memory_id, status, scope_sequence) WHERE status IN
  ('queued', 'processing');
CREATE INDEX om_operation_log_queued_idx ON om_operation_log (available_at, created_at) WHERE status = 'queued';

CREATE TABLE om_markers_next (
  memory_id TEXT NOT NULL,
  marker_position INTEGER NOT NULL,
  marker_id TEXT NOT NULL,
  marker_type TEXT NOT NULL,
  cycle_id TEXT NOT NULL,
  message_index_start INTEGER NOT NULL,
  message_index_end INTEGER NOT NULL,
  token_count INTEGER NOT NULL,
  payload_json TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (memory_id, marker_position)
) WITHOUT ROWID;
INSERT INTO om_markers_next
  SELECT memory_id, ROW_NUMBER() OVER (PARTITION BY memory_id ORDER BY rowid), marker_id, marker_type, cycle_id,
    message_index_start, message_index_end, token_count, payload_json, created_at
  FROM om_markers;
DROP TABLE om_markers;
ALTER TABLE om_markers_next RENAME TO om_markers;

ALTER TABLE om_memory_records ADD COLUMN messages_cleared_through_seq INTEGER NOT NULL DEFAULT 0;
UPDATE om_memory_records SET messages_cleared_through_seq = observed_through_message_seq;
`;

// Version 6: per scope, a version of its working memory (changed by every write, so a
// rendered snippet can be reused across turns and processes while it is current) and the
// count and bytes of its entries (kept with every write, so limits are checked without
// reading every entry).
const WORKING_MEMORY_VERSIONS = `
CREATE TABLE working_memory_versions (
  memory_id TEXT PRIMARY KEY,
  version INTEGER NOT NULL,
  entry_count INTEGER NOT NULL,
  total_bytes INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO working_memory_versions (memory_id, version, entry_count, total_bytes)
  SELECT memory_id, abs(random() % 281474976710656) + 1, COUNT(*), SUM(length(CAST(entry_key AS BLOB)) +
    length(CAST(entry_json AS BLOB)))
  FROM working_memory_entries GROUP BY memory_id;
`;

// Version 15: a time to live for working-memory entries. The scope's earliest expiry sits with
// its count and bytes, which every set already reads: a scope with nothing due costs nothing.
const WORKING_MEMORY_EXPIRY = `
ALTER TABLE working_memory_entries ADD COLUMN expires_at TEXT;
ALTER TABLE working_memory_versions ADD COLUMN earliest_expiry TEXT;
`;

// Version 16: the scopes whose earliest expiry has passed, found without reading every scope,
// for the sweep that deletes expired entries (purgeExpiredWorkingMemory). Partial: a scope
// with no expiring entry has no row in it, and a set that leaves the earliest expiry as it
// was does not write it (see writeWorkingMemoryUsageKeepingExpiry).
const WORKING_MEMORY_DUE_INDEX = `
CREATE INDEX working_memory_versions_expiry_idx ON working_memory_versions (earliest_expiry)
  WHERE earliest_expiry IS NOT NULL;
`;

const SOURCE_LIST = OBSERVATION_SOURCES.map((source) => `'${source}'`).join(', ');

// Version 7: the supersession set of each scope (supersessions and contradictions found by
// reflections, kept across them), with its counts and the references reflections made that
// were dropped; the provenance of each observation (earlier rows become 'mixed': their
// source was not recorded); and a generation per scope and per conversation, which every
// forget replaces, so work that began before a forget cannot write into the scope again.
const SUPERSESSION_SET_AND_PROVENANCE = `
CREATE TABLE om_reflection_links (
  memory_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('supersession', 'contradiction')),
  first_seq INTEGER NOT NULL,
  second_seq INTEGER NOT NULL,
  detail TEXT NOT NULL,
  operation_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (memory_id, kind, first_seq, second_seq)
) WITHOUT ROWID;
ALTER TABLE om_memory_records ADD COLUMN supersession_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE om_memory_records ADD COLUMN contradiction_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE om_memory_records ADD COLUMN rejected_reference_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE om_observations ADD COLUMN source TEXT NOT NULL DEFAULT 'mixed' CHECK (source IN (${SOURCE_LIST}));
ALTER TABLE om_observations ADD COLUMN source_seqs_json TEXT NOT NULL DEFAULT '[]';
CREATE TABLE om_scope_generations (
  memory_id TEXT PRIMARY KEY,
  generation INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE harness_conversation_generations (
  memory_id TEXT PRIMARY KEY,
  generation INTEGER NOT NULL
) WITHOUT ROWID;
`;

/**
 * Version 7's data step: each stored reflection's supersessions and contradictions become the
 * scope's first supersession set (checked as a reflection applied now would be), so an
 * upgraded scope keeps the warnings its snippet showed.
 */
function seedSupersessionSets(db: Database): void {
  const records = db.prepare<
    [],
    {
      memory_id: string;
      last_observation_seq: number;
      reflection_structured_json: string | null;
      active_reflection: string;
      updated_at: string;
    }
  >(
    'SELECT memory_id, last_observation_seq, reflection_structured_json, active_reflection, updated_at FROM ' +
      'om_memory_records WHERE active_reflection IS NOT NULL',
  );
  const insert = db.prepare(
    `INSERT INTO om_reflection_links VALUES (?, ?, ?, ?, ?, 'schema-7', ?) ON CONFLICT DO NOTHING`,
  );
  const counts = db.prepare(
    'UPDATE om_memory_records SET supersession_count = ?, contradiction_count = ?, rejected_reference_count = ? ' +
      'WHERE memory_id = ?',
  );
  for (const row of records.all()) {
    const structured = readStructured(row.reflection_structured_json) ?? parseReflection(row.active_reflection);
    const checked = checkReflectionReferences(structured, row.last_observation_seq);
    for (const item of checked.supersessions)
      insert.run(row.memory_id, 'supersession', item.newerSeq, item.olderSeq, item.reason, row.updated_at);
    for (const item of checked.contradictions)
      insert.run(row.memory_id, 'contradiction', item.seqA, item.seqB, item.detail, row.updated_at);
    counts.run(checked.supersessions.length, checked.contradictions.length, checked.rejected, row.memory_id);
  }
}

// Version 8: the `dead` operation status. SQLite cannot change a CHECK constraint in place,
// so the operation log is rebuilt from its own stored definition (whatever columns earlier
// migrations gave it), with only the status list widened, and its indexes are recreated.
// A partial index of dead operations keeps counting them per scope cheap; no other write
// touches it.
const STATUS_CHECK = "CHECK (status IN ('queued', 'processing', 'applied', 'failed'))";
const STATUS_CHECK_WITH_DEAD = "CHECK (status IN ('queued', 'processing', 'applied', 'failed', 'dead'))";

function allowDeadOperations(db: Database): void {
  const definition = db
    .prepare<[], string>("SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'om_operation_log'")
    .pluck()
    .get();
  if (definition === undefined || !definition.includes(STATUS_CHECK)) {
    throw new StoreError({
      store: STORE_NAME,
      message:
        'The operation log does not have the status check this migration expects; the file was changed by hand. ' +
        'Restore it from a backup.',
    });
  }
  const indexes = db
    .prepare<[], string>(
      "SELECT sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'om_operation_log' AND sql IS NOT NULL",
    )
    .pluck()
    .all();
  db.exec(
    definition
      .replace(/^CREATE TABLE "?om_operation_log"?/, 'CREATE TABLE om_operation_log_next')
      .replace(STATUS_CHECK, STATUS_CHECK_WITH_DEAD),
  );
  db.exec(
    'INSERT INTO om_operation_log_next SELECT * FROM om_operation_log; DROP TABLE om_operation_log; ALTER TABLE ' +
      'om_operation_log_next RENAME TO om_operation_log;',
  );
  for (const index of indexes) db.exec(index);
  db.exec("CREATE INDEX om_operation_log_dead_idx ON om_operation_log (memory_id) WHERE status = 'dead'");
}

/**
 * Gives a record to each scope that has working-memory entries and none: a scope whose only
 * writes were working memory, before a first entry made one (schema 9), was never listed.
 */
function recordWorkingMemoryScopes(db: Database): void {
  const orphans = db
    .prepare<[], string>(
      `SELECT DISTINCT e.memory_id FROM working_memory_entries AS e
       WHERE NOT EXISTS (SELECT 1 FROM om_memory_records AS r WHERE r.memory_id = e.memory_id)`,
    )
    .pluck()
    .all();
  const insert = db.prepare<[string, string, string, string]>(
    `INSERT OR IGNORE INTO om_memory_records (memory_id, tenant_id, conversation_id, agent_id, enabled,
       state_version, config_json, created_at, updated_at)
     VALUES (?, ?, ?, ?, NULL, 1, '{}', ${SQL_NOW}, ${SQL_NOW})`,
  );
  for (const memoryId of orphans) {
    const scope = scopeOfMemoryId(memoryId);
    if (scope) insert.run(memoryId, scope.tenantId, scope.conversationId, scope.agentId);
  }
}

// What the run store's statements hold since 97d5633, held by the file itself: a process of an
// older version still open on it would otherwise bring a run swept as abandoned back as
// completed. The statements of this version never make them fire.
const ENDED_RUN_TRIGGERS = `
CREATE TRIGGER harness_runs_ended_stay
BEFORE UPDATE OF status, output, error_json, steps, input_tokens, output_tokens ON harness_runs
WHEN OLD.status NOT IN ('queued', 'running')
BEGIN
  SELECT RAISE(ABORT, 'harness_runs: the run ended; it is not changed again');
END;
CREATE TRIGGER harness_run_events_after_end
BEFORE INSERT ON harness_run_events
WHEN EXISTS (SELECT 1 FROM harness_runs WHERE run_id = NEW.run_id AND status NOT IN ('queued', 'running'))
  AND (NEW.type NOT IN ('run.completed', 'run.failed', 'run.cancelled') OR EXISTS (
    SELECT 1 FROM harness_run_events WHERE run_id = NEW.run_id
      AND type IN ('run.completed', 'run.failed', 'run.cancelled')))
BEGIN
  SELECT RAISE(ABORT, 'harness_run_events: the run ended; only its first terminal event is appended');
END;
`;

/** A migration step that runs one SQL script. */
const runSql =
  (sql: string) =>
  (db: Database): void => {
    db.exec(sql);
  };

/** Every migration, in order. */
export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = Object.freeze([
  {
    version: 1,
    description: 'reference schema: om_memory_records, om_operation_log, om_markers, working_memory_entries',
    up: runSql(REFERENCE_SCHEMA),
  },
  {
    version: 2,
    description: 'observations and messages as rows, the operation log as a leased queue, working-memory timestamps',
    up: (db: Database): void => {
      db.exec(DESIGN_TABLES);
      convertReferenceData(db);
      db.exec(SWAP_AND_INDEX);
    },
  },
  { version: 3, description: 'harness runs, run events and conversation messages', up: runSql(HARNESS_TABLES) },
  {
    version: 4,
    description:
      'drop the reference (status, created_at) index on the operation log: claims use (status, available_at), and ' +
      'every index costs each enqueue and claim a page write',
    up: runSql('DROP INDEX IF EXISTS om_operation_log_status_created_idx'),
  },
  {
    version: 5,
    description:
      'operation log clustered by (memory_id, scope_sequence) with partial indexes of pending work; markers ' +
      'clustered by (memory_id, marker_position); observed message text cleared at the next append',
    up: runSql(COMPACT_QUEUE_AND_MARKERS),
  },
  {
    version: 6,
    description:
      'working_memory_versions: per scope, a version of working memory changed by every write, and its entry count ' +
      'and bytes',
    up: runSql(WORKING_MEMORY_VERSIONS),
  },
  {
    version: 7,
    description:
      'om_reflection_links (the supersession set per scope) and its counts; observation provenance (source, cited ' +
      'message seqs); scope and conversation generations, replaced by every forget',
    up: (db: Database): void => {
      db.exec(SUPERSESSION_SET_AND_PROVENANCE);
      seedSupersessionSets(db);
    },
  },
  {
    version: 8,
    description: "the 'dead' operation status (attempts used up), with a partial index of dead operations per scope",
    up: allowDeadOperations,
  },
  {
    version: 9,
    description:
      'om_memory_records.correction_count (observations replaced or deleted by hand), which caches of a ' +
      "scope's observations compare",
    up: runSql('ALTER TABLE om_memory_records ADD COLUMN correction_count INTEGER NOT NULL DEFAULT 0'),
  },
  {
    version: 10,
    description: "harness_runs_tenant_created_idx: a tenant's runs newest first, for GET /v1/runs",
    up: runSql('CREATE INDEX harness_runs_tenant_created_idx ON harness_runs (tenant_id, created_at, run_id)'),
  },
  {
    version: 11,
    description:
      'om_memory_records.unobserved_message_tokens: the tokens waiting for an observe, kept by each append and ' +
      'apply, so an append no longer sums every unobserved message',
    up: runSql(UNOBSERVED_MESSAGE_TOKENS),
  },
  {
    version: 12,
    description:
      'a record for each scope that has working-memory entries and none (written only before schema 9), so it is ' +
      'listed',
    up: recordWorkingMemoryScopes,
  },
  {
    version: 13,
    description: 'harness_runs_created_idx: runs oldest first, for run retention (deleteEndedRuns)',
    up: runSql('CREATE INDEX harness_runs_created_idx ON harness_runs (created_at, run_id)'),
  },
  {
    version: 14,
    description:
      'triggers keeping a run that ended as it ended: no update of its status, output, error, steps or usage, and ' +
      'no event but its first terminal one, whatever process (an older version too) writes the file',
    up: runSql(ENDED_RUN_TRIGGERS),
  },
  {
    version: 15,
    description:
      'working_memory_entries.expires_at: when an entry expires (NULL: never); working_memory_versions.' +
      'earliest_expiry: no later than the earliest of the scope, so a write purges expired rows only when one is due',
    up: runSql(WORKING_MEMORY_EXPIRY),
  },
  {
    version: 16,
    description:
      'working_memory_versions_expiry_idx: the scopes by earliest expiry (only those with one), so the sweep ' +
      'deleting expired working-memory entries reads the scopes due, not every scope',
    up: runSql(WORKING_MEMORY_DUE_INDEX),
  },
]);

/** The schema version this code writes and reads. */
export const SQLITE_SCHEMA_VERSION: number = Math.max(...SQLITE_MIGRATIONS.map((migration) => migration.version));

/**
 * Brings the database to {@link SQLITE_SCHEMA_VERSION}. Each migration runs in its own
 * IMMEDIATE transaction and re-checks the recorded version inside it, so two processes
 * opening the file together apply it once; the version is copied to the header's
 * `user_version`. Returns the version now recorded.
 */
export function migrateSqliteDatabase(
  db: Database,
  migrations: readonly SqliteMigration[] = SQLITE_MIGRATIONS,
): number {
  db.transaction(() => {
    db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)');
  }).immediate();
  const latest = migrations.reduce((max, migration) => Math.max(max, migration.version), 0);
  const current = db.prepare<[], number | null>('SELECT MAX(version) FROM schema_migrations').pluck();
  const found = current.get() ?? 0;
  if (found > latest) {
    throw new StoreError({
      store: STORE_NAME,
      message:
        `The database has schema version ${found}, newer than the ${latest} this version of ` +
        `harness-memory knows. Upgrade harness-memory, or open another file.`,
      data: { schemaVersion: found, supportedVersion: latest },
    });
  }
  const isApplied = db.prepare<[number], number>('SELECT 1 FROM schema_migrations WHERE version = ?').pluck();
  const record = db.prepare<[number]>(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ${SQL_NOW})`);
  // The header's copy of the version, which processes already open check before they write
  // (createSchemaCheck), raised in the migration's own transaction (never lowered, so an
  // older process opening the file after a newer one cannot lower it).
  const header = db.prepare<[], number>('PRAGMA user_version').pluck();
  const raiseHeader = (version: number): void => {
    if ((header.get() ?? 0) < version) db.pragma(`user_version = ${version}`);
  };
  for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
    db.transaction(() => {
      if (isApplied.get(migration.version) !== undefined) return;
      migration.up(db);
      record.run(migration.version);
      raiseHeader(migration.version);
    }).immediate();
  }
  const applied = current.get() ?? 0;
  // A file migrated by a version that did not keep the header's copy.
  if ((header.get() ?? 0) < applied) db.transaction(() => raiseHeader(applied)).immediate();
  return applied;
}
