/**
 * The observe path of the Postgres store in two round trips: `appendMessagesAndClaim` and
 * `completeObservation` each call one database function (see `postgres-observe-functions.ts`)
 * with what the store decided and what it decided from. Answers `undefined` when the function
 * found that premise gone; the store then runs its statement-by-statement transaction.
 * @module
 */
import type { Pool } from 'pg';
import { StoreError } from '../../core/errors.js';
import type { MemoryRecord } from '../../core/observation.js';
import type { ApplyPosition, PlannedMarker, PlannedObservation } from '../apply-plan.js';
import { planObservationApply } from '../apply-plan.js';
import type { StoreInput as Input } from '../_memory-rows.js';
import { seqsJson, toApplyPosition, toObservation, toOperation, toRecord, toStoredMessage } from '../_memory-rows.js';
import type { MessageRow, ObservationRow, OperationRow, RecordRow } from '../_memory-rows.js';
import type { AppendAndClaimResult, MemoryStore, NewMessage } from '../store.js';
import {
  callReadCommitted,
  functionCall,
  readCommittedCall,
  rowFromJson,
  scopeLockClass,
} from './postgres-connection.js';
import { APPEND_AND_CLAIM_TYPES, OBSERVE_APPLY_TYPES } from './postgres-observe-functions.js';

type ObservationApplied = Awaited<ReturnType<MemoryStore['completeObservation']>>;

/** What the store's observe calls try first. */
export interface PostgresObservePath {
  /** The fast `appendMessagesAndClaim`, or undefined: take the transaction path. */
  appendMessagesAndClaim(input: Input<'appendMessagesAndClaim'>): Promise<AppendAndClaimResult | undefined>;
  /** The fast `completeObservation`, or undefined: take the transaction path. */
  completeObservation(input: Input<'completeObservation'>): Promise<ObservationApplied | undefined>;
  /** Tells the path a scope's record as a transaction or a read saw it (or that it has none). */
  noteRecord(memoryId: string, record: MemoryRecord | undefined): void;
}

/** A function's answer, or why its premise did not hold (it wrote nothing then). */
type Answer = { readonly answer: Record<string, unknown> } | { readonly missed: string };

// The miss `om_observe_append_and_claim` answers when the record is not the one the settings came from.
const SETTINGS_CHANGED = 'the settings changed';

// Enough for every scope a replica serves at once; the oldest entries go first.
const MAX_REMEMBERED = 4096;

// Columns of the rows a function returns as JSON that hold times (see rowFromJson).
const RECORD_TIMES = ['created_at', 'updated_at', 'reflection_created_at'] as const;
const OPERATION_TIMES = ['lease_expires_at', 'available_at', 'created_at', 'updated_at'] as const;
const OBSERVATION_TIMES = ['created_at'] as const;

/** New messages as the statements take them: keys, roles, names, tool call ids, contents, token counts. */
export function messageColumns(messages: readonly NewMessage[]): unknown[] {
  return [
    messages.map((message) => message.messageKey),
    messages.map((message) => message.role),
    messages.map((message) => message.name),
    messages.map((message) => message.toolCallId),
    messages.map((message) => message.content),
    messages.map((message) => message.tokenCount),
  ];
}

/** Planned observations as the statements take them: contents, token counts, importances, sources, cited seqs. */
export function observationColumns(planned: readonly PlannedObservation[]): unknown[] {
  return [
    planned.map((item) => item.content),
    planned.map((item) => item.tokenCount),
    planned.map((item) => item.importance),
    planned.map((item) => item.source),
    planned.map((item) => seqsJson(item.sourceMessageSeqs)),
  ];
}

/** A planned marker as the statements take it: id, type, first and last seq, payload. */
export function markerParameters(marker: PlannedMarker): unknown[] {
  return [
    marker.markerId,
    marker.markerType,
    marker.messageSeqStart,
    marker.messageSeqEnd,
    JSON.stringify(marker.payload),
  ];
}

function positionOf(record: MemoryRecord | null | undefined): ApplyPosition | undefined {
  return record
    ? {
        observedThroughMessageSeq: record.observedThroughMessageSeq,
        lastObservationSeq: record.lastObservationSeq,
        correctionCount: record.correctionCount,
      }
    : undefined;
}

function remember<K, V>(map: Map<K, V>, key: K, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > MAX_REMEMBERED) map.delete(map.keys().next().value as K);
}

/**
 * Builds the path for one store's pool and schema; `readRecord` reads a scope's record
 * without its lock (a miss on the settings reads it once before the function is called again).
 */
export function createPostgresObservePath(
  pool: Pool,
  schema: string,
  prefix: string,
  readRecord: (memoryId: string) => Promise<MemoryRecord | undefined>,
): PostgresObservePath {
  const lockClass = scopeLockClass(schema, 'memory');
  const appendAndClaim = readCommittedCall(functionCall(prefix, 'om_observe_append_and_claim', APPEND_AND_CLAIM_TYPES));
  const apply = readCommittedCall(functionCall(prefix, 'om_observe_apply', OBSERVE_APPLY_TYPES));
  // The record each scope's settings were last derived from: null when it had none.
  const records = new Map<string, MemoryRecord | null>();
  // The position each claimed observe was planned from, by operation id.
  const positions = new Map<string, ApplyPosition>();

  // What a function answers: its answer, or why its premise did not hold.
  const call = async (text: string, values: unknown[]): Promise<Answer> => {
    const result = await callReadCommitted<{ result: Record<string, unknown> }>(pool, text, values);
    const answer = result.rows[0]?.result;
    if (answer === undefined) return { missed: 'no answer' };
    return 'missed' in answer ? { missed: String(answer['missed']) } : { answer };
  };

  // Appends, enqueues and claims with the settings derived from `basis`, the record this
  // store last saw for the scope (none for a scope it has not seen).
  const appendAndClaimFrom = (input: Input<'appendMessagesAndClaim'>, basis: MemoryRecord | undefined) => {
    const settings = input.settings(basis);
    const { scope, messages, operation } = input;
    return call(appendAndClaim, [
      lockClass,
      input.memoryId,
      scope.tenantId,
      scope.conversationId,
      scope.agentId,
      input.generation ?? null,
      basis !== undefined,
      basis?.enabled ?? null,
      JSON.stringify(basis?.config ?? {}),
      settings.enabled,
      settings.minTokens,
      ...messageColumns(messages),
      operation.operationId,
      JSON.stringify(operation.payload),
      operation.runId,
      operation.toolCallId,
      input.leaseOwner,
      input.leaseMs / 1000,
      input.batchTokens ?? null,
    ]);
  };

  return {
    noteRecord(memoryId, record) {
      remember(records, memoryId, record ?? null);
    },

    async appendMessagesAndClaim(input) {
      // A lease the database would not take is refused by the transaction path, with its error.
      if (!Number.isFinite(input.leaseMs) || input.leaseMs < 0) return undefined;
      // A scope not seen yet is assumed to have no record; the function checks.
      let outcome = await appendAndClaimFrom(input, records.get(input.memoryId) ?? undefined);
      if ('missed' in outcome && outcome.missed === SETTINGS_CHANGED) {
        // Most often a scope this replica meets for the first time, which another replica
        // made. One read without the lock, then the function again: the transaction path
        // would hold the scope's lock over eight round trips, and every other writer of
        // the scope would wait on it.
        const fresh = await readRecord(input.memoryId);
        remember(records, input.memoryId, fresh ?? null);
        outcome = await appendAndClaimFrom(input, fresh);
      }
      if ('missed' in outcome) {
        records.delete(input.memoryId);
        return undefined;
      }
      const result = outcome.answer;
      const recordRow = result.record ? rowFromJson<RecordRow>(result.record, RECORD_TIMES) : undefined;
      const record = recordRow && toRecord(recordRow);
      remember(records, input.memoryId, record ?? null);
      if (result.disabled === true) return { disabled: true, record };
      if (!recordRow || !record)
        throw new StoreError({ store: 'postgres', message: `The record of scope ${input.memoryId} was not returned.` });
      const appended = {
        record,
        inserted: Number(result.inserted),
        unobservedTokens: Number(result.unobserved_tokens),
      };
      if (!result.operation) return appended;
      const enqueued = toOperation(rowFromJson<OperationRow>(result.operation, OPERATION_TIMES));
      if (!result.claimed) return { ...appended, operation: enqueued };
      const claimed = toOperation(rowFromJson<OperationRow>(result.claimed, OPERATION_TIMES));
      if (claimed.operationType !== 'observe' || !Array.isArray(result.messages))
        return { ...appended, operation: enqueued, claimed };
      remember(positions, claimed.operationId, toApplyPosition(recordRow));
      const prefetched = {
        operationId: claimed.operationId,
        record,
        messages: (result.messages as MessageRow[]).map(toStoredMessage),
      };
      return { ...appended, operation: enqueued, claimed, prefetched };
    },

    async completeObservation(input) {
      // An observe claimed some other way (queued behind another replica's, then claimed by a
      // later call) is planned from the record last read, which the worker reads after its
      // claim. Either way the function applies only if the scope is still at that position.
      const position = positions.get(input.operationId) ?? positionOf(records.get(input.memoryId));
      if (position === undefined) return undefined;
      positions.delete(input.operationId);
      const plan = planObservationApply(position, input);
      // The function adds no links: an observe whose observations replace earlier ones (rare) takes the transaction.
      if (plan.links.length > 0) return undefined;
      const planned = plan.observations;
      const [start, end] = plan.markers;
      const outcome = await call(apply, [
        lockClass,
        input.memoryId,
        input.operationId,
        input.leaseOwner,
        position.observedThroughMessageSeq,
        position.lastObservationSeq,
        planned.map((item) => item.seq),
        plan.startSeq,
        plan.throughSeq,
        ...observationColumns(planned),
        plan.tokens,
        plan.lastObservationSeq,
        ...markerParameters(start),
        ...markerParameters(end),
      ]);
      if ('missed' in outcome) return undefined;
      const result = outcome.answer;
      const record = toRecord(rowFromJson<RecordRow>(result.record, RECORD_TIMES));
      const observations = (result.observations as unknown[]).map((row) =>
        toObservation(rowFromJson<ObservationRow>(row, OBSERVATION_TIMES)),
      );
      remember(records, input.memoryId, record);
      return { record, observations };
    },
  };
}
