/**
 * Converts the rows of a version-1 (reference) database into the version-2 tables, inside
 * migration 2's transaction. The reference keyed scopes as `tenant|conversation|agent`,
 * kept observations as one JSON array per record, froze defaults into every record and
 * never consumed its queue; each of those is translated here.
 * @module
 */
import type { Database } from 'better-sqlite3';
import { StoreError } from '../../core/errors.js';
import { DEFAULT_OBSERVATION_CONFIG } from '../../core/observation.js';
import type { ObservationConfig } from '../../core/observation.js';
import { parseReflection } from '../../core/parse-reflection.js';
import { memoryIdOf } from '../../core/scope.js';
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

const CONFIG_KEYS: ReadonlyArray<readonly [string, keyof ObservationConfig]> = [
  ['observe_min_tokens', 'observeMinTokens'],
  ['snippet_max_tokens', 'snippetMaxTokens'],
  ['reflect_threshold_tokens', 'reflectThresholdTokens'],
];

/** Fills the `_next` tables and `om_observations` from the version-1 rows; updates `om_markers` in place. */
export function convertReferenceData(db: Database): void {
  const now = db.prepare<[], string>(`SELECT ${SQL_NOW}`).pluck().get() ?? new Date().toISOString();
  const targets = convertRecords(db, now);
  const resolve = (referenceId: string): ScopeTarget => targets.get(referenceId) ?? targetOfReferenceId(referenceId);
  convertOperations(db, now, resolve);
  convertWorkingMemory(db, now, resolve);
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
}

function convertRecords(db: Database, now: string): Map<string, ScopeTarget> {
  const targets = new Map<string, ScopeTarget>();
  const rows = db.prepare<[], ReferenceRecordRow>('SELECT * FROM om_memory_records ORDER BY rowid').all();
  // The reference wrote `enabled` on every record, explicit or not; only a logged enable or
  // disable shows the user chose it. Otherwise the scope follows the current default.
  const lastToggle = db
    .prepare<[string], string>(
      `SELECT operation_type FROM om_operation_log WHERE memory_id = ? AND status = 'applied' AND operation_type IN
        ('enable', 'disable')
       ORDER BY scope_sequence DESC, created_at DESC LIMIT 1`,
    )
    .pluck();
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
    const scope: Scope = {
      tenantId: String(row.tenant_id),
      conversationId: String(row.conversation_id),
      agentId: String(row.agent_id),
    };
    const memoryId = memoryIdOf(scope);
    targets.set(row.memory_id, { memoryId, scope });
    const updatedAt = normalizeTime(row.updated_at, now);
    const observations = readChunks(row.active_observations_json, updatedAt, row.memory_id);
    const raw =
      typeof row.active_reflection === 'string' && row.active_reflection.trim() !== '' ? row.active_reflection : null;
    const throughSeq = raw === null ? null : (nonNegativeInteger(row.last_reflected_observation_seq) ?? 0);
    const toggle = lastToggle.get(row.memory_id);
    insertRecord.run({
      memoryId,
      tenantId: scope.tenantId,
      conversationId: scope.conversationId,
      agentId: scope.agentId,
      enabled: toggle === 'enable' ? 1 : toggle === 'disable' ? 0 : null,
      stateVersion: Math.max(1, nonNegativeInteger(row.state_version) ?? 1),
      configJson: JSON.stringify(convertConfig(row.config_json)),
      observationCount: observations.length,
      lastObservationSeq: observations.at(-1)?.seq ?? 0,
      activeTokens: sumTokens(observations, 0),
      unreflectedTokens: sumTokens(observations, throughSeq ?? 0),
      reflectionRaw: raw,
      reflectionTokens:
        raw === null ? null : (nonNegativeInteger(row.active_reflection_tokens) ?? RUNE_TOKEN_ESTIMATOR.estimate(raw)),
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
  return targets;
}

function convertOperations(db: Database, now: string, resolve: (referenceId: string) => ScopeTarget): void {
  // Sequences are renumbered per scope in their old order: the reference's MAX+1 had no
  // unique constraint, so duplicates may exist.
  const rows = db
    .prepare<[], ReferenceOperationRow>('SELECT * FROM om_operation_log ORDER BY scope_sequence, created_at, rowid')
    .all();
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
    const errorText = row.error_text ?? '';
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

function convertWorkingMemory(db: Database, now: string, resolve: (referenceId: string) => ScopeTarget): void {
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
  // The reference's SQLite backend stored untrimmed keys; ours are trimmed. When trimming
  // makes two keys equal, the one that was already trimmed wins.
  const trimmedFirst = [...rows].sort(
    (a, b) => Number(a.entry_key !== a.entry_key.trim()) - Number(b.entry_key !== b.entry_key.trim()),
  );
  for (const row of trimmedFirst) {
    const key = row.entry_key.trim() === '' ? row.entry_key : row.entry_key.trim();
    insert.run(resolve(row.memory_id).memoryId, key, row.entry_json ?? 'null', now, now);
  }
}

function targetOfReferenceId(referenceId: string): ScopeTarget {
  const parts = referenceId.split('|');
  const [tenantId, conversationId, agentId] = parts;
  if (parts.length !== 3 || !tenantId || !conversationId || !agentId) {
    return { memoryId: referenceId, scope: { tenantId: '', conversationId: '', agentId: '' } };
  }
  const scope: Scope = { tenantId, conversationId, agentId };
  return { memoryId: memoryIdOf(scope), scope };
}

function readChunks(json: string | null, fallbackTime: string, referenceId: string): ConvertedObservation[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json ?? '[]');
  } catch (error) {
    throw unreadable(referenceId, 'active_observations_json is not valid JSON', error);
  }
  if (!Array.isArray(parsed)) throw unreadable(referenceId, 'active_observations_json is not a JSON array');
  const observations: ConvertedObservation[] = [];
  let previous = 0;
  for (const item of parsed as unknown[]) {
    if (typeof item !== 'object' || item === null) continue;
    const chunk = item as Record<string, unknown>;
    const content = chunk['content'];
    if (typeof content !== 'string' || content.trim() === '') continue;
    const wanted = nonNegativeInteger(chunk['seq']);
    const seq = wanted !== null && wanted > previous ? wanted : previous + 1;
    previous = seq;
    const importance = chunk['importance'];
    observations.push({
      seq,
      content,
      tokenCount: nonNegativeInteger(chunk['token_count']) ?? RUNE_TOKEN_ESTIMATOR.estimate(content),
      // The reference used 0 (or an omitted field) for "no score".
      importance:
        typeof importance === 'number' && Number.isFinite(importance) && importance > 0
          ? Math.min(importance, 1)
          : null,
      createdAt: normalizeTime(chunk['created_at'], fallbackTime),
    });
  }
  return observations;
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
  if (typeof value !== 'string') return fallback;
  const time = Date.parse(value);
  return Number.isNaN(time) ? fallback : new Date(time).toISOString();
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
