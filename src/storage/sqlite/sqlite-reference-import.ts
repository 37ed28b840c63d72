/**
 * Converts the rows of a version-1 (reference) database into the version-2 tables, inside
 * migration 2's transaction. The reference keyed scopes as `tenant|conversation|agent`,
 * kept observations as one JSON array per record, froze defaults into every record and
 * never consumed its queue; each of those is translated here. It also accepted any string as
 * a scope id: a scope whose ids ours refuse is kept under valid ones (see {@link validIdOf}),
 * listed in `reference_import_renames` and named in a process warning; and any string as a
 * working-memory key: an entry whose key ours refuse is kept under a valid one (see
 * {@link validKeyOf}), and one whose key, trimmed or redacted, is another entry's is kept
 * under a free name (`… (2)`), each named in a process warning. The reference redacted
 * nothing: the text it kept (observations, the reflection, error texts, working-memory keys and
 * values) is redacted here as today's write paths redact what they store.
 * @module
 */
import { createHash } from 'node:crypto';
import type { Database } from 'better-sqlite3';
import { StoreError } from '../../core/errors.js';
import { DEFAULT_OBSERVATION_CONFIG } from '../../core/observation.js';
import type { ObservationConfig } from '../../core/observation.js';
import { parseReflection } from '../../core/parse-reflection.js';
import { redactSecrets } from '../../core/redact-secrets.js';
import { needsStripping, stripInvisible } from '../../core/sanitize-text.js';
import {
  checkNewWorkingMemoryKey,
  MAX_WORKING_MEMORY_KEY_LENGTH,
  normalizeWorkingMemoryKey,
  redactWorkingMemoryValue,
  stripInvisibleFromValueJson,
} from '../../core/working-memory.js';
import { isScopeId, MAX_SCOPE_ID_LENGTH, memoryIdOf } from '../../core/scope.js';
import type { Scope } from '../../core/scope.js';
import { RUNE_TOKEN_ESTIMATOR } from '../../core/token-estimator.js';
import { STORE_NAME } from './sqlite-errors.js';
import { SQL_NOW } from './sqlite-statements.js';

interface ReferenceRecordRow {
  memory_id: string;
  tenant_id: string;
  conversation_id: string;
  agent_id: string;
  state_version: number;
  active_observations_json: string | null;
  active_reflection: string | null;
  active_reflection_tokens: number | null;
  last_reflected_observation_seq: number | null;
  config_json: string | null;
  created_at: string | null;
  updated_at: string | null;
}

interface ReferenceOperationRow {
  operation_id: string;
  memory_id: string;
  run_id: string | null;
  tool_call_id: string | null;
  scope_sequence: unknown;
  operation_type: string;
  status: string;
  payload_json: string | null;
  error_text: string | null;
  created_at: string | null;
  updated_at: string | null;
}

interface ConvertedObservation {
  seq: number;
  content: string;
  tokenCount: number;
  importance: number | null;
  createdAt: string;
}

interface ScopeTarget {
  memoryId: string;
  scope: Scope;
}

/** A scope the reference keyed with ids ours refuse, and the key it is kept under. */
interface ReferenceRename {
  oldMemoryId: string;
  target: ScopeTarget;
}

/** A working-memory key its entry is not kept under (today's rules refuse it, or another entry has it), and the key it is. */
interface KeyRename {
  target: ScopeTarget;
  /** The key with secrets redacted (cleaned, see {@link storedText}, when invisible characters split one). */
  oldKey: string;
  newKey: string;
}

/** The table listing each renamed scope; created by the upgrade only when it renamed one. */
const REFERENCE_IMPORT_RENAMES_TABLE = 'reference_import_renames';
/** The code of the process warning naming the renamed scopes. */
const REFERENCE_IMPORT_WARNING_CODE = 'HARNESS_MEMORY_REFERENCE_IMPORT';
// What an empty id (the reference's working memory outside a run has an empty conversation)
// becomes, before its hash: the reference's own name for a blank conversation. The hash
// keeps it apart from a real `unknown`.
const EMPTY_ID_STAND_IN = 'unknown';
const HASH_LENGTHS = [8, 16, 32, 64] as const;
// How many renames the warning names; the table holds them all.
const WARNING_RENAMES = 20;

const CONFIG_KEYS: ReadonlyArray<readonly [string, keyof ObservationConfig]> = [
  ['observe_min_tokens', 'observeMinTokens'],
  ['snippet_max_tokens', 'snippetMaxTokens'],
  ['reflect_threshold_tokens', 'reflectThresholdTokens'],
];

/** Fills the `_next` tables and `om_observations` from the version-1 rows; updates `om_markers` in place. */
export function convertReferenceData(db: Database): void {
  const now = db.prepare<[], string>(`SELECT ${SQL_NOW}`).pluck().get() ?? new Date().toISOString();
  const { targets, renames } = planTargets(db);
  const resolve = (referenceId: string): ScopeTarget =>
    targets.get(referenceId) ?? { memoryId: referenceId, scope: { tenantId: '', conversationId: '', agentId: '' } };
  convertRecords(db, now, resolve);
  convertOperations(db, now, resolve);
  const keyRenames = convertWorkingMemory(db, now, resolve);
  const markers = db
    .prepare<[], { row_id: number; memory_id: string; created_at: string | null }>(
      'SELECT rowid AS row_id, memory_id, created_at FROM om_markers',
    )
    .all();
  const updateMarker = db.prepare<[string, string, number]>(
    'UPDATE om_markers SET memory_id = ?, created_at = ? WHERE rowid = ?',
  );
  for (const marker of markers)
    updateMarker.run(resolve(marker.memory_id).memoryId, normalizeTime(marker.created_at, now), marker.row_id);
  reportRenames(db, renames);
  reportKeyRenames(db, keyRenames);
}

/**
 * The key each version-1 scope key goes to: a record's from its columns, any other
 * (operations, markers, working memory of scopes without a record) from `tenant|conversation|agent`.
 * A scope whose ids are all valid keeps them; any other gets valid ones ({@link validIdOf}),
 * unless those would name another scope of the file, when the hash grows until they do not. A
 * key with fewer than three parts, which the reference never made, stays as it is.
 */
function planTargets(db: Database): { targets: Map<string, ScopeTarget>; renames: ReferenceRename[] } {
  const records = db
    .prepare<[], { memory_id: unknown; tenant_id: unknown; conversation_id: unknown; agent_id: unknown }>(
      'SELECT memory_id, tenant_id, conversation_id, agent_id FROM om_memory_records ORDER BY rowid',
    )
    .all();
  const others = db
    .prepare<[], unknown>(
      `SELECT memory_id FROM om_operation_log WHERE memory_id IS NOT NULL
       UNION SELECT memory_id FROM om_markers WHERE memory_id IS NOT NULL
       UNION SELECT memory_id FROM working_memory_entries WHERE memory_id IS NOT NULL`,
    )
    .pluck()
    .all();
  // Each reference key, with the ids it names (undefined: not a scope key).
  const named = new Map<string, Scope | undefined>();
  for (const row of records) {
    named.set(String(row.memory_id), {
      tenantId: String(row.tenant_id),
      conversationId: String(row.conversation_id),
      agentId: String(row.agent_id),
    });
  }
  for (const value of others) {
    const referenceId = String(value);
    if (!named.has(referenceId)) named.set(referenceId, scopeOfReferenceId(referenceId));
  }

  const targets = new Map<string, ScopeTarget>();
  const taken = new Set<string>();
  const toRename = new Map<string, { scope: Scope; referenceIds: string[] }>();
  for (const [referenceId, scope] of named) {
    if (scope === undefined) {
      targets.set(referenceId, { memoryId: referenceId, scope: { tenantId: '', conversationId: '', agentId: '' } });
      taken.add(referenceId);
    } else if (isScopeId(scope.tenantId) && isScopeId(scope.conversationId) && isScopeId(scope.agentId)) {
      const memoryId = memoryIdOf(scope);
      targets.set(referenceId, { memoryId, scope });
      taken.add(memoryId);
    } else {
      // One scope may be named by several keys (a record's, and its rows'): it is renamed once.
      const original = JSON.stringify([scope.tenantId, scope.conversationId, scope.agentId]);
      const entry = toRename.get(original) ?? { scope, referenceIds: [] };
      entry.referenceIds.push(referenceId);
      toRename.set(original, entry);
    }
  }
  const renames: ReferenceRename[] = [];
  // In the order of the original ids, so that the same file is always upgraded the same way.
  for (const [, { scope, referenceIds }] of [...toRename].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const target = renamedTarget(scope, taken);
    taken.add(target.memoryId);
    for (const referenceId of referenceIds) {
      targets.set(referenceId, target);
      renames.push({ oldMemoryId: referenceId, target });
    }
  }
  return { targets, renames };
}

function renamedTarget(scope: Scope, taken: ReadonlySet<string>): ScopeTarget {
  for (let attempt = 0; ; attempt++) {
    const hashLength = HASH_LENGTHS[Math.min(attempt, HASH_LENGTHS.length - 1)];
    // Past the longest hash (two ids whose UTF-8 is the same), a counter tells them apart.
    const counter = attempt < HASH_LENGTHS.length ? 0 : attempt - HASH_LENGTHS.length + 2;
    const renamed: Scope = {
      tenantId: validIdOf(scope.tenantId, hashLength, counter),
      conversationId: validIdOf(scope.conversationId, hashLength, counter),
      agentId: validIdOf(scope.agentId, hashLength, counter),
    };
    const memoryId = memoryIdOf(renamed);
    if (!taken.has(memoryId)) return { memoryId, scope: renamed };
  }
}

/**
 * A valid id standing for a reference id: the id itself when valid; otherwise its characters
 * outside `A-Z a-z 0-9 . _ : @ -` replaced by `-` (an empty id by `unknown`), cut to fit,
 * then `.` and the start of the SHA-256 of its UTF-8 (`conv 2` is `conv-2.` and 8 hex digits),
 * so two ids differing only in refused characters stay apart.
 */
function validIdOf(id: string, hashLength = 8, counter = 0): string {
  if (isScopeId(id)) return id;
  const suffix =
    '.' +
    createHash('sha256').update(id, 'utf8').digest('hex').slice(0, hashLength) +
    (counter > 0 ? `-${counter}` : '');
  const base = id === '' ? EMPTY_ID_STAND_IN : id.replace(/[^A-Za-z0-9._:@-]/gu, '-');
  return base.slice(0, MAX_SCOPE_ID_LENGTH - suffix.length) + suffix;
}

/** Lists the renamed scopes in their table and a process warning, so their users can find them. */
function reportRenames(db: Database, renames: readonly ReferenceRename[]): void {
  if (renames.length === 0) return;
  db.exec(`CREATE TABLE IF NOT EXISTS ${REFERENCE_IMPORT_RENAMES_TABLE} (
    old_memory_id TEXT PRIMARY KEY,
    new_memory_id TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    agent_id TEXT NOT NULL
  ) WITHOUT ROWID`);
  const insert = db.prepare<[string, string, string, string, string]>(
    `INSERT OR REPLACE INTO ${REFERENCE_IMPORT_RENAMES_TABLE} VALUES (?, ?, ?, ?, ?)`,
  );
  for (const { oldMemoryId, target } of renames) {
    insert.run(oldMemoryId, target.memoryId, target.scope.tenantId, target.scope.conversationId, target.scope.agentId);
  }
  const named = renames
    .slice(0, WARNING_RENAMES)
    .map(
      ({ oldMemoryId, target: { scope } }) =>
        `${JSON.stringify(oldMemoryId)} is now tenant_id ${scope.tenantId}, conversation_id ` +
        `${scope.conversationId}, agent_id ${scope.agentId}`,
    );
  if (renames.length > WARNING_RENAMES) named.push(`and ${renames.length - WARNING_RENAMES} more`);
  process.emitWarning(
    `Upgrading ${db.name} from the reference schema: ${renames.length} scope key(s) held ids that are not valid ` +
      `here, so their memory now has valid ones (table ${REFERENCE_IMPORT_RENAMES_TABLE} lists them all): ` +
      `${named.join('; ')}.`,
    { code: REFERENCE_IMPORT_WARNING_CODE },
  );
}

function convertRecords(db: Database, now: string, resolve: (referenceId: string) => ScopeTarget): void {
  const rows = db.prepare<[], ReferenceRecordRow>('SELECT * FROM om_memory_records ORDER BY rowid').all();
  // The reference wrote `enabled` on every record, explicit or not; only a logged enable or
  // disable shows the user chose it. Otherwise the scope follows the current default.
  const toggles = db
    .prepare<[], { memory_id: string; operation_type: string; scope_sequence: unknown; created_at: unknown }>(
      `SELECT memory_id, operation_type, scope_sequence, created_at FROM om_operation_log
       WHERE status = 'applied' AND operation_type IN ('enable', 'disable')
       ORDER BY scope_sequence, rowid`,
    )
    .all();
  const lastToggle = new Map<string, string>();
  for (const toggle of inOperationOrder(toggles, now)) lastToggle.set(String(toggle.memory_id), toggle.operation_type);
  const insertRecord = db.prepare(`
    INSERT INTO om_memory_records_next (
      memory_id, tenant_id, conversation_id, agent_id, enabled, state_version, config_json,
      observed_through_message_seq, last_message_seq, observation_count, last_observation_seq,
      active_observation_tokens, unreflected_observation_tokens, active_reflection, active_reflection_tokens,
      reflection_structured_json, reflection_through_seq, reflection_created_at, created_at, updated_at
    ) VALUES (
      @memoryId, @tenantId, @conversationId, @agentId, @enabled, @stateVersion, @configJson,
      0, 0, @observationCount, @lastObservationSeq,
      @activeTokens, @unreflectedTokens, @reflectionRaw, @reflectionTokens,
      @reflectionStructured, @reflectionThroughSeq, @reflectionCreatedAt, @createdAt, @updatedAt
    )`);
  // Source seqs are 0: the reference's were slice positions, not message seqs.
  const insertObservation = db.prepare(`
    INSERT INTO om_observations (memory_id, seq, content, token_count, importance, created_at, source_start_seq,
      source_end_seq, operation_id)
    VALUES (?, ?, ?, ?, ?, ?, 0, 0, '')`);

  for (const row of rows) {
    const { memoryId, scope } = resolve(String(row.memory_id));
    const updatedAt = normalizeTime(row.updated_at, now);
    const { observations, highestSeq } = readChunks(row.active_observations_json, updatedAt, row.memory_id);
    const reflection = typeof row.active_reflection === 'string' ? storedText(row.active_reflection) : '';
    const raw = reflection.trim() !== '' ? reflection : null;
    const throughSeq = raw === null ? null : (nonNegativeInteger(row.last_reflected_observation_seq) ?? 0);
    const toggle = lastToggle.get(String(row.memory_id));
    insertRecord.run({
      memoryId,
      tenantId: scope.tenantId,
      conversationId: scope.conversationId,
      agentId: scope.agentId,
      enabled: toggle === 'enable' ? 1 : toggle === 'disable' ? 0 : null,
      stateVersion: Math.max(1, nonNegativeInteger(row.state_version) ?? 1),
      configJson: JSON.stringify(convertConfig(row.config_json)),
      observationCount: observations.length,
      // Never below a seq the reference assigned, skipped chunks' and the reflection's included:
      // ours never reuses a seq, and a new observation must not be one the reflection covers.
      lastObservationSeq: Math.max(highestSeq, throughSeq ?? 0),
      activeTokens: sumTokens(observations, 0),
      unreflectedTokens: sumTokens(observations, throughSeq ?? 0),
      reflectionRaw: raw,
      reflectionTokens:
        raw === null
          ? null
          : ((raw === row.active_reflection ? nonNegativeInteger(row.active_reflection_tokens) : null) ??
            RUNE_TOKEN_ESTIMATOR.estimate(raw)),
      reflectionStructured: raw === null ? null : JSON.stringify(parseReflection(raw)),
      reflectionThroughSeq: throughSeq,
      reflectionCreatedAt: raw === null ? null : updatedAt,
      createdAt: normalizeTime(row.created_at, now),
      updatedAt,
    });
    for (const observation of observations) {
      insertObservation.run(
        memoryId,
        observation.seq,
        observation.content,
        observation.tokenCount,
        observation.importance,
        observation.createdAt,
      );
    }
  }
}

function convertOperations(db: Database, now: string, resolve: (referenceId: string) => ScopeTarget): void {
  // Sequences are renumbered per scope in their old order: the reference's MAX+1 had no
  // unique constraint, so duplicates may exist.
  const rows = inOperationOrder(
    db.prepare<[], ReferenceOperationRow>('SELECT * FROM om_operation_log ORDER BY scope_sequence, rowid').all(),
    now,
  );
  const insert = db.prepare(`
    INSERT INTO om_operation_log_next (
      operation_id, memory_id, tenant_id, conversation_id, agent_id, run_id, tool_call_id, scope_sequence,
      operation_type, status, payload_json, error_text, attempt, lease_owner, lease_expires_at, available_at,
        created_at, updated_at
    ) VALUES (
      @operationId, @memoryId, @tenantId, @conversationId, @agentId, @runId, @toolCallId, @scopeSequence,
      @operationType, @status, @payloadJson, @errorText, 1, NULL, NULL, @createdAt, @createdAt, @updatedAt
    )`);
  const sequences = new Map<string, number>();
  for (const row of rows) {
    const target = resolve(row.memory_id);
    const scopeSequence = (sequences.get(target.memoryId) ?? 0) + 1;
    sequences.set(target.memoryId, scopeSequence);
    // Nothing consumed the reference's queue; a leftover queued or processing row is a
    // mutation that was interrupted long ago, so it is closed rather than run now.
    const finished = row.status === 'applied' || row.status === 'failed';
    const errorText = row.error_text === null ? '' : storedText(row.error_text);
    insert.run({
      operationId: row.operation_id,
      memoryId: target.memoryId,
      tenantId: target.scope.tenantId,
      conversationId: target.scope.conversationId,
      agentId: target.scope.agentId,
      runId: row.run_id ?? '',
      toolCallId: row.tool_call_id ?? '',
      scopeSequence,
      operationType: row.operation_type,
      status: finished ? row.status : 'failed',
      payloadJson: row.payload_json ?? '{}',
      errorText: finished
        ? errorText
        : [errorText, `left ${row.status} by the reference schema; not carried over`]
            .filter((part) => part !== '')
            .join('; '),
      createdAt: normalizeTime(row.created_at, now),
      updatedAt: normalizeTime(row.updated_at, now),
    });
  }
}

function convertWorkingMemory(db: Database, now: string, resolve: (referenceId: string) => ScopeTarget): KeyRename[] {
  // The reference declared these columns without NOT NULL; a row without a scope or key was unreachable there too.
  const rows = db
    .prepare<[], { memory_id: string; entry_key: string; entry_json: string | null }>(
      'SELECT memory_id, entry_key, entry_json FROM working_memory_entries WHERE memory_id IS NOT NULL AND ' +
        'entry_key IS NOT NULL ORDER BY rowid',
    )
    .all()
    .map((row) => ({ ...row, memory_id: String(row.memory_id), entry_key: String(row.entry_key) }));
  const insert = db.prepare<[string, string, string, string, string]>(
    'INSERT INTO working_memory_entries_next (memory_id, entry_key, entry_json, created_at, updated_at) VALUES (?, ' +
      '?, ?, ?, ?) ON CONFLICT (memory_id, entry_key) DO NOTHING',
  );
  // The reference's SQLite backend checked the trimmed key but stored it untrimmed, so one
  // scope could hold `plan` and ` plan `; ours are trimmed. A key holding a secret (which a set
  // today refuses) is redacted, and one today's rules refuse is renamed ({@link validKeyOf}).
  // Whichever of these makes a key another of its scope takes a free name (`… (2)`), the one
  // that was already trimmed and valid keeping its own.
  const planned = rows.map((row) => {
    const trimmed = row.entry_key.trim() === '' ? row.entry_key : row.entry_key.trim();
    const redacted = redactSecrets(trimmed).text;
    const refused = !isAcceptedKey(redacted);
    const key = refused ? validKeyOf(trimmed) : redacted;
    return {
      ...row,
      trimmed,
      redacted,
      key,
      refused,
      rank: key !== trimmed ? 2 : trimmed !== row.entry_key ? 1 : 0,
    };
  });
  const renames: KeyRename[] = [];
  for (const row of planned.sort((a, b) => a.rank - b.rank)) {
    const target = resolve(row.memory_id);
    const valueJson = row.entry_json === null ? 'null' : storedValueJson(row.trimmed, row.entry_json);
    let copy = 1;
    while (insert.run(target.memoryId, numberedKey(row.key, copy), valueJson, now, now).changes === 0) copy++;
    if (!row.refused && copy === 1) continue;
    let oldKey: string;
    if (row.refused) {
      const cleaned = storedText(row.redacted);
      oldKey = cleaned === stripInvisible(row.redacted) ? row.redacted : cleaned;
    } else {
      // Untrimmed, as the reference stored it, so that the two entries can be told apart.
      oldKey = row.rank === 2 ? row.redacted : row.entry_key;
    }
    renames.push({ target, oldKey, newKey: numberedKey(row.key, copy) });
  }
  return renames;
}

/** Whether today's set would store `key` as it is. */
function isAcceptedKey(key: string): boolean {
  try {
    return checkNewWorkingMemoryKey(normalizeWorkingMemoryKey(key)) === key;
  } catch {
    return false;
  }
}

/** A character no working-memory key may hold (see {@link normalizeWorkingMemoryKey}). */
function isRefusedKeyCharacter(character: string): boolean {
  return character === '\t' || character === '\n' || needsStripping(character);
}

/**
 * A valid key standing for a trimmed reference key that today's rules refuse: the key cleaned
 * ({@link storedText}), each character a key may not hold replaced by `-` (an empty key by
 * `unknown`), cut to fit, then `.` and the first 8 hex digits of the SHA-256 of the cleaned
 * key (`line1\nline2` is `line1-line2.` and 8 hex digits). The hash keeps keys that differ
 * only in replaced characters apart, and, being of the cleaned key, holds nothing of a secret.
 */
function validKeyOf(key: string): string {
  const cleaned = storedText(key);
  const suffix = '.' + createHash('sha256').update(cleaned, 'utf8').digest('hex').slice(0, HASH_LENGTHS[0]);
  const characters = Array.from(cleaned.trim(), (character) => (isRefusedKeyCharacter(character) ? '-' : character));
  const base = characters.length === 0 ? [EMPTY_ID_STAND_IN] : characters;
  return base.slice(0, MAX_WORKING_MEMORY_KEY_LENGTH - suffix.length).join('') + suffix;
}

/** `key`, or for a later copy `key (copy)`, cut so that it still fits. */
function numberedKey(key: string, copy: number): string {
  if (copy === 1) return key;
  const suffix = ` (${copy})`;
  return (
    Array.from(key)
      .slice(0, MAX_WORKING_MEMORY_KEY_LENGTH - suffix.length)
      .join('') + suffix
  );
}

/**
 * Names the renamed working-memory keys in a process warning.
 * NOTE: not in `reference_import_renames`, whose rows are keyed by the old scope key alone.
 */
function reportKeyRenames(db: Database, renames: readonly KeyRename[]): void {
  if (renames.length === 0) return;
  const named = renames.slice(0, WARNING_RENAMES).map(({ target: { memoryId, scope }, oldKey, newKey }) => {
    const where =
      scope.tenantId === ''
        ? `scope key ${JSON.stringify(memoryId)}`
        : `tenant_id ${scope.tenantId}, conversation_id ${scope.conversationId}, agent_id ${scope.agentId}`;
    // The reference bounded no key's length.
    const characters = Array.from(oldKey);
    const shownOldKey =
      characters.length > MAX_WORKING_MEMORY_KEY_LENGTH
        ? `${shownKey(characters.slice(0, MAX_WORKING_MEMORY_KEY_LENGTH).join(''))}…`
        : shownKey(oldKey);
    return `in ${where}, ${shownOldKey} is now ${shownKey(newKey)}`;
  });
  if (renames.length > WARNING_RENAMES) named.push(`and ${renames.length - WARNING_RENAMES} more`);
  process.emitWarning(
    `Upgrading ${db.name} from the reference schema: ${renames.length} working-memory key(s) could not be read ` +
      `or deleted here (control or invisible characters, over ${MAX_WORKING_MEMORY_KEY_LENGTH} characters, "." or ` +
      `".."), or became another entry's key once trimmed of surrounding spaces or with secrets redacted, so ` +
      `their entries now have other keys: ${named.join('; ')}.`,
    { code: REFERENCE_IMPORT_WARNING_CODE },
  );
}

/** A key as a JSON string, with the characters a key may not hold escaped, so a warning shows them. */
function shownKey(key: string): string {
  return Array.from(JSON.stringify(key), (character) =>
    isRefusedKeyCharacter(character)
      ? Array.from(
          { length: character.length },
          (_, index) => `\\u${character.charCodeAt(index).toString(16).padStart(4, '0')}`,
        ).join('')
      : character,
  ).join('');
}

/**
 * Text as today's write paths store what a model or a server wrote: invisible characters
 * stripped (they can split a secret so that no rule finds it), then secrets redacted.
 * NOTE: whatever `[memory] redact_secrets` says. The upgrade runs when a store or a run store
 * first opens the file, and neither is told the setting.
 */
function storedText(text: string): string {
  return redactSecrets(stripInvisible(text)).text;
}

/**
 * A working-memory value as today's set stores it under `key`: invisible characters stripped
 * from its strings, then secrets redacted, the value read as labelled by the entry's key
 * (`password` = `"hunter22"`) just as by an object key. Text that is not JSON is redacted as
 * text. Always redacted, as {@link storedText} says.
 */
function storedValueJson(key: string, valueJson: string): string {
  let json = valueJson;
  try {
    json = stripInvisibleFromValueJson(valueJson);
  } catch {
    // Not JSON, or two object keys that stripping would make one: read as given.
  }
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return storedText(valueJson);
  }
  const redacted = redactWorkingMemoryValue(key, value);
  if (redacted === value) return json;
  try {
    return JSON.stringify(redacted);
  } catch {
    // NOTE: JSON.stringify recurses, and the reference bounded no value's depth.
    return storedText(json);
  }
}

/**
 * The ids a reference key `tenant|conversation|agent` names (the reference joined them
 * unescaped: with more than two `|`, the conversation, the id callers chose, takes the middle
 * ones), or undefined for a key with fewer.
 */
function scopeOfReferenceId(referenceId: string): Scope | undefined {
  const parts = referenceId.split('|');
  if (parts.length < 3) return undefined;
  return {
    tenantId: parts[0] ?? '',
    conversationId: parts.slice(1, -1).join('|'),
    agentId: parts.at(-1) ?? '',
  };
}

/** The chunks kept, and the highest seq of any chunk, kept or skipped. */
function readChunks(
  json: string | null,
  fallbackTime: string,
  referenceId: string,
): { observations: ConvertedObservation[]; highestSeq: number } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json ?? '[]');
  } catch (error) {
    throw unreadable(referenceId, 'active_observations_json is not valid JSON', error);
  }
  if (!Array.isArray(parsed)) throw unreadable(referenceId, 'active_observations_json is not a JSON array');
  const observations: ConvertedObservation[] = [];
  let previous = 0;
  let highestSeq = 0;
  for (const item of parsed as unknown[]) {
    if (typeof item !== 'object' || item === null) continue;
    const chunk = item as Record<string, unknown>;
    const wanted = nonNegativeInteger(chunk['seq']);
    highestSeq = Math.max(highestSeq, wanted ?? 0);
    const given = chunk['content'];
    if (typeof given !== 'string') continue;
    const content = storedText(given);
    if (content.trim() === '') continue;
    const seq = wanted !== null && wanted > previous ? wanted : previous + 1;
    previous = seq;
    highestSeq = Math.max(highestSeq, seq);
    const importance = chunk['importance'];
    observations.push({
      seq,
      content,
      // The reference's count is of the text it kept: redacted text is counted again.
      tokenCount:
        (content === given ? nonNegativeInteger(chunk['token_count']) : null) ?? RUNE_TOKEN_ESTIMATOR.estimate(content),
      // The reference used 0 (or an omitted field) for "no score".
      importance:
        typeof importance === 'number' && Number.isFinite(importance) && importance > 0
          ? Math.min(importance, 1)
          : null,
      createdAt: normalizeTime(chunk['created_at'], fallbackTime),
    });
  }
  return { observations, highestSeq };
}

// The reference stored its whole effective config; only values that differ from the
// defaults can have been chosen, so only those become overrides.
function convertConfig(json: string | null): Partial<ObservationConfig> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json ?? '{}');
  } catch {
    return {};
  }
  if (typeof parsed !== 'object' || parsed === null) return {};
  const source = parsed as Record<string, unknown>;
  const overrides: { -readonly [K in keyof ObservationConfig]?: number } = {};
  for (const [referenceKey, key] of CONFIG_KEYS) {
    const value = source[referenceKey] ?? source[key];
    if (
      typeof value === 'number' &&
      Number.isSafeInteger(value) &&
      value > 0 &&
      value !== DEFAULT_OBSERVATION_CONFIG[key]
    )
      overrides[key] = value;
  }
  return overrides;
}

function sumTokens(observations: readonly ConvertedObservation[], afterSeq: number): number {
  return observations.reduce(
    (sum, observation) => (observation.seq > afterSeq ? sum + observation.tokenCount : sum),
    0,
  );
}

function nonNegativeInteger(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

/** RFC 3339 text (any precision or offset) to `Date.toISOString()` form, so text order is time order. */
function normalizeTime(value: unknown, fallback: string): string {
  const time = parseTime(value);
  return time === null ? fallback : new Date(time).toISOString();
}

// A date-time without an offset, as SQLite's CURRENT_TIMESTAMP writes it (`2024-05-01 10:00:00`).
const WITHOUT_OFFSET = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)$/;

/** Milliseconds since the epoch, or null for what is not a time. */
function parseTime(value: unknown): number | null {
  if (typeof value !== 'string') return null;
  // Date.parse reads a date-time without an offset in the host's time zone; the reference's
  // times and SQLite's are UTC.
  const parts = WITHOUT_OFFSET.exec(value);
  const time = Date.parse(parts === null ? value : `${parts[1]}T${parts[2]}Z`);
  return Number.isNaN(time) ? null : time;
}

/**
 * Operation rows, given in SQL order of `scope_sequence` then rowid, with each run of equal
 * sequences put in time order (rowid order kept between equal times).
 * NOTE: not `ORDER BY created_at`: the reference wrote RFC3339Nano, which drops trailing
 * zeros, so `10:00:00Z` sorts after `10:00:00.5Z` as text.
 */
function inOperationOrder<T extends { scope_sequence: unknown; created_at: unknown }>(
  rows: readonly T[],
  now: string,
): T[] {
  const fallback = parseTime(now) ?? 0;
  let group = 0;
  const keyed = rows.map((row, index) => {
    if (index > 0 && row.scope_sequence !== rows[index - 1]?.scope_sequence) group++;
    return { row, group, time: parseTime(row.created_at) ?? fallback, index };
  });
  keyed.sort((a, b) => a.group - b.group || a.time - b.time || a.index - b.index);
  return keyed.map(({ row }) => row);
}

function unreadable(referenceId: string, reason: string, cause?: unknown): StoreError {
  return new StoreError({
    store: STORE_NAME,
    message:
      `Cannot upgrade the record of scope ${referenceId}: ${reason}. Repair or delete that row, then ` +
      `open the database again.`,
    data: { memoryId: referenceId },
    cause,
  });
}
