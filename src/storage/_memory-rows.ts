/**
 * Row shapes of the memory tables, shared by the SQLite and Postgres adapters, and their
 * mapping to domain objects. Private to `src/storage/`.
 *
 * The adapters hand over rows as their drivers return them. Times are ISO-8601 strings in
 * both (SQLite stores that text; Postgres timestamptz is turned into it by `PG_TYPES`), as
 * are counters numbers (Postgres int8 by `PG_TYPES`). They differ in two kinds of column:
 * JSON columns are text in SQLite and already decoded jsonb in Postgres, hence `unknown`
 * and {@link decodeJsonObject}; flags are 0/1 in SQLite and booleans in Postgres, hence
 * {@link decodeFlag}.
 * @module
 */
import { deepFreeze } from '../core/deep-freeze.js';
import type { ApplyPosition } from './apply-plan.js';
import { randomInt } from 'node:crypto';
import { OBSERVATION_SOURCES } from '../core/observation.js';
import type {
  MemoryRecord,
  Observation,
  ObservationConfig,
  ObservationSource,
  StoredReflection,
} from '../core/observation.js';
import { parseReflection } from '../core/parse-reflection.js';
import type { StructuredReflection } from '../core/reflection.js';
import type { ReflectionLinks, StoredContradiction, StoredSupersession } from '../core/reflection-links.js';
import type {
  Marker,
  MemoryStore,
  Operation,
  OperationStatus,
  OperationType,
  ScopeSummary,
  StoredMessage,
  WorkingMemoryEntry,
} from './store.js';

/** A row of `om_memory_records`. */
export interface RecordRow {
  memory_id: string;
  tenant_id: string;
  conversation_id: string;
  agent_id: string;
  /** SQLite 0/1, Postgres boolean. */
  enabled: number | boolean | null;
  state_version: number;
  /** JSON text (SQLite) or decoded jsonb (Postgres). */
  config_json: unknown;
  observed_through_message_seq: number;
  last_message_seq: number;
  /** The tokens of the messages after `observed_through_message_seq`, kept as messages come and go. */
  unobserved_message_tokens: number;
  /** SQLite only: observed messages through this seq have lost their text. */
  messages_cleared_through_seq?: number;
  observation_count: number;
  last_observation_seq: number;
  active_observation_tokens: number;
  unreflected_observation_tokens: number;
  active_reflection: string | null;
  active_reflection_tokens: number | null;
  /** JSON text (SQLite) or decoded jsonb (Postgres), or null. */
  reflection_structured_json: unknown;
  reflection_through_seq: number | null;
  reflection_created_at: string | null;
  supersession_count: number;
  contradiction_count: number;
  rejected_reference_count: number;
  correction_count: number;
  created_at: string;
  updated_at: string;
}

/**
 * A row of `om_reflection_links`: a supersession (`first_seq` replaces `second_seq`) or a contradiction
 * (`first_seq < second_seq`).
 */
export interface ReflectionLinkRow {
  memory_id: string;
  kind: string;
  first_seq: number;
  second_seq: number;
  /** The supersession's reason or the contradiction's detail. */
  detail: string;
  operation_id: string;
  created_at: string;
}

/** A row of `om_operation_log`. */
export interface OperationRow {
  operation_id: string;
  memory_id: string;
  tenant_id: string;
  conversation_id: string;
  agent_id: string;
  run_id: string;
  tool_call_id: string;
  scope_sequence: number;
  operation_type: string;
  status: string;
  /** JSON text (SQLite) or decoded jsonb (Postgres). */
  payload_json: unknown;
  error_text: string;
  attempt: number;
  lease_owner: string | null;
  lease_expires_at: string | null;
  available_at: string;
  created_at: string;
  updated_at: string;
}

/** A row of `om_messages`. */
export interface MessageRow {
  memory_id: string;
  seq: number;
  message_key: string;
  role: string;
  name: string;
  tool_call_id: string;
  content: string;
  token_count: number;
  /** SQLite 0/1, Postgres boolean. */
  observed: number | boolean;
}

/** A row of `om_observations`. */
export interface ObservationRow {
  memory_id: string;
  seq: number;
  content: string;
  token_count: number;
  importance: number | null;
  created_at: string;
  source_start_seq: number;
  source_end_seq: number;
  source: string;
  /** JSON text (SQLite) or decoded jsonb (Postgres) of the cited message seqs. */
  source_seqs_json: unknown;
  operation_id: string;
}

/** A row of `om_markers` (message_index_* hold message seqs). */
export interface MarkerRow {
  marker_id: string;
  memory_id: string;
  marker_type: string;
  cycle_id: string;
  message_index_start: number;
  message_index_end: number;
  token_count: number;
  /** JSON text (SQLite) or decoded jsonb (Postgres). */
  payload_json: unknown;
  created_at: string;
}

/** A row of `working_memory_entries`. */
export interface WorkingMemoryRow {
  memory_id: string;
  entry_key: string;
  entry_json: string;
  created_at: string;
  updated_at: string;
  /** Absent from a database function's answer at an older schema. */
  expires_at?: string | null;
}

/**
 * A JSON column as a plain object: JSON text (SQLite) is parsed, a decoded value (Postgres
 * jsonb) is taken as it is. Anything else, text that does not parse included, becomes `{}`.
 */
export function decodeJsonObject(value: unknown): Record<string, unknown> {
  let decoded = value;
  if (typeof value === 'string') {
    try {
      decoded = JSON.parse(value);
    } catch {
      return {};
    }
  }
  return typeof decoded === 'object' && decoded !== null && !Array.isArray(decoded)
    ? (decoded as Record<string, unknown>)
    : {};
}

/** A flag column: SQLite's 0/1 or Postgres's boolean; null stays null. */
function decodeFlag(value: number | boolean | null): boolean | null {
  return typeof value === 'number' ? value !== 0 : value;
}

const CONFIG_FIELDS: ReadonlyArray<keyof ObservationConfig> = [
  'observeMinTokens',
  'snippetMaxTokens',
  'reflectThresholdTokens',
];

/** Reads `config_json` (text or decoded): only the known fields, only positive integers. */
export function parseConfig(value: unknown): Partial<ObservationConfig> {
  const source = decodeJsonObject(value);
  const config: { -readonly [K in keyof ObservationConfig]?: number } = {};
  for (const field of CONFIG_FIELDS) {
    const item = source[field];
    if (typeof item === 'number' && Number.isSafeInteger(item) && item > 0) config[field] = item;
  }
  return config;
}

/** Maps a record row. */
export function toRecord(row: RecordRow): MemoryRecord {
  return Object.freeze({
    memoryId: row.memory_id,
    scope: Object.freeze({ tenantId: row.tenant_id, conversationId: row.conversation_id, agentId: row.agent_id }),
    enabled: decodeFlag(row.enabled),
    stateVersion: row.state_version,
    config: Object.freeze(parseConfig(row.config_json)),
    observedThroughMessageSeq: row.observed_through_message_seq,
    lastMessageSeq: row.last_message_seq,
    unobservedMessageTokens: Number(row.unobserved_message_tokens),
    observationCount: row.observation_count,
    lastObservationSeq: row.last_observation_seq,
    activeObservationTokens: row.active_observation_tokens,
    unreflectedObservationTokens: row.unreflected_observation_tokens,
    reflection: toReflection(row),
    supersessionCount: row.supersession_count,
    contradictionCount: row.contradiction_count,
    rejectedReferenceCount: row.rejected_reference_count,
    correctionCount: row.correction_count,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  });
}

function toReflection(row: RecordRow): StoredReflection | null {
  if (row.active_reflection === null) return null;
  return Object.freeze({
    raw: row.active_reflection,
    structured: readStructured(row.reflection_structured_json) ?? parseReflection(row.active_reflection),
    tokenCount: row.active_reflection_tokens ?? 0,
    throughSeq: row.reflection_through_seq ?? 0,
    createdAt: row.reflection_created_at ?? row.updated_at,
  });
}

/** Parsed reflections by their stored JSON text: a scope's reflection is read every turn but changes rarely. */
const structuredCache = new Map<string, StructuredReflection>();
const STRUCTURED_CACHE_LIMIT = 256;

/**
 * A stored parsed reflection (JSON text or decoded), or undefined when it is missing or damaged (then re-derive
 * it from the raw text).
 */
export function readStructured(json: unknown): StructuredReflection | undefined {
  if (json === null || json === undefined) return undefined;
  if (typeof json === 'string') {
    const cached = structuredCache.get(json);
    if (cached) return cached;
  }
  const value = decodeJsonObject(json);
  const { summary, supersessions, contradictions, schemaVersion } = value;
  if (
    typeof summary !== 'string' ||
    !Array.isArray(supersessions) ||
    !Array.isArray(contradictions) ||
    (schemaVersion !== 0 && schemaVersion !== 1)
  )
    return undefined;
  // Frozen throughout, so one parsed copy can be shared by every record that carries it.
  const structured = deepFreeze(value) as unknown as StructuredReflection;
  if (typeof json === 'string') {
    if (structuredCache.size >= STRUCTURED_CACHE_LIMIT)
      structuredCache.delete(structuredCache.keys().next().value as string);
    structuredCache.set(json, structured);
  }
  return structured;
}

/** Maps an operation row. */
export function toOperation(row: OperationRow): Operation {
  return Object.freeze({
    operationId: row.operation_id,
    memoryId: row.memory_id,
    scope: Object.freeze({ tenantId: row.tenant_id, conversationId: row.conversation_id, agentId: row.agent_id }),
    runId: row.run_id,
    toolCallId: row.tool_call_id,
    scopeSequence: row.scope_sequence,
    operationType: row.operation_type as OperationType,
    status: row.status as OperationStatus,
    payload: Object.freeze(decodeJsonObject(row.payload_json)),
    errorText: row.error_text,
    attempt: row.attempt,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    availableAt: row.available_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  });
}

/** Maps a message row. */
export function toStoredMessage(row: MessageRow): StoredMessage {
  return Object.freeze({
    seq: row.seq,
    messageKey: row.message_key,
    role: row.role,
    name: row.name,
    toolCallId: row.tool_call_id,
    content: row.content,
    tokenCount: row.token_count,
  });
}

/**
 * The oldest message rows whose predecessors hold fewer than `maxTokens` tokens (all of them
 * without a limit), mapped; reading stops at the first one past the limit.
 */
export function oldestUnobserved(rows: Iterable<MessageRow>, maxTokens: number | undefined): StoredMessage[] {
  return oldestWithin(rows, (row) => row.token_count, maxTokens).map(toStoredMessage);
}

/**
 * The first items whose predecessors hold fewer than `maxTokens` tokens (at least one; all of
 * them without a limit); iteration stops at the first one past the limit.
 */
export function oldestWithin<T>(items: Iterable<T>, tokensOf: (item: T) => number, maxTokens: number | undefined): T[] {
  const taken: T[] = [];
  let tokens = 0;
  for (const item of items) {
    if (maxTokens !== undefined && taken.length > 0 && tokens >= maxTokens) break;
    taken.push(item);
    tokens += tokensOf(item);
  }
  return taken;
}

/** Maps an observation row. */
export function toObservation(row: ObservationRow): Observation {
  return Object.freeze({
    seq: row.seq,
    content: row.content,
    tokenCount: row.token_count,
    importance: row.importance,
    createdAt: row.created_at,
    sourceStartSeq: row.source_start_seq,
    sourceEndSeq: row.source_end_seq,
    source: toSource(row.source),
    sourceMessageSeqs: toSeqs(row.source_seqs_json),
    operationId: row.operation_id,
  });
}

const NO_SEQS: readonly number[] = Object.freeze([]);

function toSource(value: string): ObservationSource {
  return (OBSERVATION_SOURCES as readonly string[]).includes(value) ? (value as ObservationSource) : 'mixed';
}

/** Cited seqs from a JSON column (text or decoded): positive integers only. */
function toSeqs(value: unknown): readonly number[] {
  if (value === '[]' || value === null || value === undefined) return NO_SEQS;
  let decoded = value;
  if (typeof value === 'string') {
    try {
      decoded = JSON.parse(value);
    } catch {
      return NO_SEQS;
    }
  }
  if (!Array.isArray(decoded) || decoded.length === 0) return NO_SEQS;
  return Object.freeze(decoded.filter((seq): seq is number => Number.isSafeInteger(seq) && seq > 0));
}

/** The cited seqs of a new observation, as stored in `source_seqs_json`. */
export function seqsJson(seqs: readonly number[] | undefined): string {
  return JSON.stringify(seqs ?? []);
}

/** Maps the rows of a scope's supersession set, each list ordered by its first seq, then its second. */
export function toReflectionLinks(rows: readonly ReflectionLinkRow[]): ReflectionLinks {
  const supersessions: StoredSupersession[] = [];
  const contradictions: StoredContradiction[] = [];
  for (const row of rows) {
    const found = { operationId: row.operation_id, createdAt: row.created_at };
    if (row.kind === 'supersession')
      supersessions.push(
        Object.freeze({ newerSeq: row.first_seq, olderSeq: row.second_seq, reason: row.detail, ...found }),
      );
    else
      contradictions.push(Object.freeze({ seqA: row.first_seq, seqB: row.second_seq, detail: row.detail, ...found }));
  }
  const byFirstThenSecond = (a: readonly [number, number], b: readonly [number, number]): number =>
    a[0] - b[0] || a[1] - b[1];
  supersessions.sort((a, b) => byFirstThenSecond([a.newerSeq, a.olderSeq], [b.newerSeq, b.olderSeq]));
  contradictions.sort((a, b) => byFirstThenSecond([a.seqA, a.seqB], [b.seqA, b.seqB]));
  return { supersessions, contradictions };
}

/** Maps a marker row. */
export function toMarker(row: MarkerRow): Marker {
  return Object.freeze({
    markerId: row.marker_id,
    memoryId: row.memory_id,
    markerType: row.marker_type as Marker['markerType'],
    cycleId: row.cycle_id,
    messageSeqStart: row.message_index_start,
    messageSeqEnd: row.message_index_end,
    tokenCount: row.token_count,
    payload: Object.freeze(decodeJsonObject(row.payload_json)),
    createdAt: row.created_at,
  });
}

/** Maps a working-memory row. */
export function toWorkingMemoryEntry(row: WorkingMemoryRow): WorkingMemoryEntry {
  return Object.freeze({
    key: row.entry_key,
    valueJson: row.entry_json,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    expiresAt: row.expires_at ?? null,
  });
}

/**
 * A fresh working-memory version (see `MemoryStore.workingMemoryVersion`): random rather
 * than counted, so a scope forgotten and written again (its version row deleted) does not
 * repeat a number a cache holds. 48 bits: exact as a JS number and as a SQL integer.
 */
export function newWorkingMemoryVersion(): number {
  return randomInt(1, 2 ** 48);
}

/**
 * A fresh scope generation (see `MemoryStore.scopeGeneration`), written by every forget:
 * random, as a working-memory version, so it never repeats the one a running caller holds.
 */
export const newScopeGeneration: () => number = newWorkingMemoryVersion;

/** Where a record row stands, as the apply plan reads it. */
export function toApplyPosition(row: RecordRow): ApplyPosition {
  return {
    observedThroughMessageSeq: row.observed_through_message_seq,
    lastObservationSeq: row.last_observation_seq,
    correctionCount: Number(row.correction_count),
  };
}

/** The input of a store method that takes one object (`MemoryStore['appendMessages']` → its input). */
export type StoreInput<K extends keyof MemoryStore> = MemoryStore[K] extends ((input: infer I) => unknown) | undefined
  ? I
  : never;

/** A row of the SQLite and Postgres scope listings: the record's columns and the page's counts. */
export interface ScopeRow {
  memory_id: string;
  tenant_id: string;
  conversation_id: string;
  agent_id: string;
  /** SQLite 0/1, Postgres boolean. */
  enabled: number | boolean | null;
  observation_count: number;
  updated_at: string;
  entries: number;
  pending: number;
  dead: number;
  entries_updated_at: string | null;
}

/** A listed scope from its row; the last activity is the later of the record's and its entries' changes. */
export function toScopeSummary(row: ScopeRow): ScopeSummary {
  const entriesAt = row.entries_updated_at;
  return Object.freeze({
    memoryId: row.memory_id,
    scope: Object.freeze({ tenantId: row.tenant_id, conversationId: row.conversation_id, agentId: row.agent_id }),
    enabled: decodeFlag(row.enabled),
    observationCount: Number(row.observation_count),
    workingMemoryEntries: Number(row.entries),
    pendingOperations: Number(row.pending),
    deadOperations: Number(row.dead),
    lastActivityAt: entriesAt !== null && entriesAt > row.updated_at ? entriesAt : row.updated_at,
  });
}
