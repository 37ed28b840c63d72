/**
 * The in-memory store: everything lives in this process and is lost when it exits.
 * The library's default; the harness uses SQLite.
 * @module
 */
import { StoreError } from '../core/errors.js';
import type { MemoryRecord, Observation } from '../core/observation.js';
import { createStoreGuard } from './_store-guard.js';
import { planImportApply, planObservationApply, planReflectionApply } from './apply-plan.js';
import { containsWords, planCorrection } from './correction-plan.js';
import type { StoredContradiction, StoredSupersession } from '../core/reflection-links.js';
import type { Scope } from '../core/scope.js';
import { utf8Length, workingMemoryLimitError } from '../core/working-memory.js';
import { newScopeGeneration } from './_memory-rows.js';
import { scopeForgottenError } from './_store-errors.js';
import type {
  AppendMessagesResult,
  LeaseHandle,
  Marker,
  MemoryStore,
  Operation,
  ScopeSummary,
  StoredMessage,
  WorkingMemoryEntry,
} from './store.js';

/** Name of this adapter. */
export const STORE_NAME = 'in-memory';

/** Options of {@link createInMemoryStore}. */
export interface InMemoryStoreOptions {
  /** Clock used for timestamps and leases. @default () => new Date() */
  now?: () => Date;
}

interface ScopeState {
  record: MemoryRecord;
  messages: StoredMessage[];
  seenMessageKeys: Set<string>;
  observations: Observation[];
  markers: Marker[];
  supersessions: StoredSupersession[];
  contradictions: StoredContradiction[];
}

/**
 * Creates an in-memory store.
 * @example
 * const memory = createObservationalMemory({ store: createInMemoryStore(), model });
 */
export function createInMemoryStore(options: InMemoryStoreOptions = {}): MemoryStore {
  const now = options.now ?? (() => new Date());
  const scopes = new Map<string, ScopeState>();
  const operations = new Map<string, Operation[]>();
  // Indexes so that claims and lease checks do not scan every operation ever logged:
  // where each operation sits, and each scope's queued or processing ones in order.
  const locations = new Map<string, { memoryId: string; index: number }>();
  const pending = new Map<string, Operation[]>();
  const deadCounts = new Map<string, number>();
  const workingMemory = new Map<string, Map<string, WorkingMemoryEntry>>();
  const workingMemoryVersions = new Map<string, number>();
  // Kept through forget: that is their point.
  const generations = new Map<string, number>();
  let lastWorkingMemoryVersion = 0;
  const workingMemoryChanged = (memoryId: string): void => {
    workingMemoryVersions.set(memoryId, ++lastWorkingMemoryVersion);
  };
  const storeGuard = createStoreGuard({ store: STORE_NAME });

  const nowIso = (): string => now().toISOString();
  const guard = (): void => storeGuard.check();

  function ensureScope(scope: Scope, memoryId: string): ScopeState {
    let state = scopes.get(memoryId);
    if (!state) {
      const at = nowIso();
      state = {
        record: Object.freeze({
          memoryId,
          scope: Object.freeze({ ...scope }),
          enabled: null,
          stateVersion: 1,
          config: Object.freeze({}),
          observedThroughMessageSeq: 0,
          lastMessageSeq: 0,
          observationCount: 0,
          lastObservationSeq: 0,
          activeObservationTokens: 0,
          unreflectedObservationTokens: 0,
          reflection: null,
          supersessionCount: 0,
          contradictionCount: 0,
          rejectedReferenceCount: 0,
          correctionCount: 0,
          createdAt: at,
          updatedAt: at,
        }),
        messages: [],
        seenMessageKeys: new Set(),
        observations: [],
        markers: [],
        supersessions: [],
        contradictions: [],
      };
      scopes.set(memoryId, state);
    }
    return state;
  }

  function update(state: ScopeState, patch: Partial<MemoryRecord>): MemoryRecord {
    state.record = Object.freeze({
      ...state.record,
      ...patch,
      stateVersion: state.record.stateVersion + 1,
      updatedAt: nowIso(),
    });
    return state.record;
  }

  function scopeOperations(memoryId: string): Operation[] {
    let list = operations.get(memoryId);
    if (!list) {
      list = [];
      operations.set(memoryId, list);
    }
    return list;
  }

  function appendOperation(operation: Operation): void {
    const list = scopeOperations(operation.memoryId);
    locations.set(operation.operationId, { memoryId: operation.memoryId, index: list.length });
    list.push(operation);
    if (isPending(operation)) {
      let queue = pending.get(operation.memoryId);
      if (!queue) {
        queue = [];
        pending.set(operation.memoryId, queue);
      }
      queue.push(operation);
    }
  }

  function replaceOperation(next: Operation): Operation {
    const frozen = Object.freeze(next);
    const location = locations.get(next.operationId);
    if (!location) return frozen;
    scopeOperations(location.memoryId)[location.index] = frozen;
    const queue = pending.get(location.memoryId) ?? [];
    const position = queue.findIndex((candidate) => candidate.operationId === next.operationId);
    if (position >= 0) {
      if (isPending(frozen)) queue[position] = frozen;
      else queue.splice(position, 1);
      if (queue.length === 0) pending.delete(location.memoryId);
    }
    return frozen;
  }

  /** Takes an operation out of its scope's log, keeping the other operations' locations right. */
  function removeOperation(operation: Operation): void {
    const list = scopeOperations(operation.memoryId);
    const index = list.findIndex((candidate) => candidate.operationId === operation.operationId);
    if (index < 0) return;
    list.splice(index, 1);
    locations.delete(operation.operationId);
    for (let position = index; position < list.length; position++) {
      locations.set((list[position] as Operation).operationId, { memoryId: operation.memoryId, index: position });
    }
  }

  function findOperation(operationId: string): Operation | undefined {
    const location = locations.get(operationId);
    return location ? operations.get(location.memoryId)?.[location.index] : undefined;
  }

  function holdLease(handle: LeaseHandle): Operation {
    const operation = findOperation(handle.operationId);
    const expired = operation?.leaseExpiresAt != null && operation.leaseExpiresAt <= nowIso();
    if (!operation || operation.status !== 'processing' || operation.leaseOwner !== handle.leaseOwner || expired) {
      throw new StoreError({
        store: STORE_NAME,
        code: 'OPERATION_LEASE_LOST',
        message: `Operation ${handle.operationId} is no longer leased to ${handle.leaseOwner}; its result is discarded.`,
        data: { operationId: handle.operationId },
      });
    }
    return operation;
  }

  function finish(operation: Operation, status: 'applied' | 'failed', errorText: string): void {
    replaceOperation({ ...operation, status, errorText, leaseOwner: null, leaseExpiresAt: null, updatedAt: nowIso() });
  }

  function marker(state: ScopeState, input: Omit<Marker, 'createdAt' | 'memoryId'>): void {
    state.markers.push(Object.freeze({ ...input, memoryId: state.record.memoryId, createdAt: nowIso() }));
  }

  const store: MemoryStore = {
    specificationVersion: 'v1',
    name: STORE_NAME,

    async getRecord(memoryId) {
      guard();
      return scopes.get(memoryId)?.record;
    },

    async updateSettings(input) {
      guard();
      const state = ensureScope(input.scope, input.memoryId);
      const record = update(state, {
        enabled: input.enabled,
        config: Object.freeze({ ...state.record.config, ...input.config }),
      });
      const list = scopeOperations(input.memoryId);
      const at = nowIso();
      appendOperation(
        Object.freeze({
          operationId: input.operationId,
          memoryId: input.memoryId,
          scope: record.scope,
          runId: input.runId,
          toolCallId: input.toolCallId,
          scopeSequence: nextSequence(list),
          operationType: input.enabled ? 'enable' : 'disable',
          status: 'applied',
          payload: Object.freeze({ enabled: input.enabled, ...(input.config ? { config: input.config } : {}) }),
          errorText: '',
          attempt: 1,
          leaseOwner: null,
          leaseExpiresAt: null,
          availableAt: at,
          createdAt: at,
          updatedAt: at,
        } satisfies Operation),
      );
      return record;
    },

    async appendMessages(input): Promise<AppendMessagesResult> {
      guard();
      checkGeneration(input.memoryId, input.generation);
      const state = ensureScope(input.scope, input.memoryId);
      let inserted = 0;
      let lastSeq = state.record.lastMessageSeq;
      for (const message of input.messages) {
        if (state.seenMessageKeys.has(message.messageKey)) continue;
        state.seenMessageKeys.add(message.messageKey);
        lastSeq++;
        state.messages.push(Object.freeze({ ...message, seq: lastSeq }));
        inserted++;
      }
      const record = inserted > 0 ? update(state, { lastMessageSeq: lastSeq }) : state.record;
      const unobservedTokens = state.messages
        .filter((message) => message.seq > record.observedThroughMessageSeq)
        .reduce((sum, message) => sum + message.tokenCount, 0);
      return { record, inserted, unobservedTokens };
    },

    async listUnobservedMessages(memoryId, throughSeq) {
      guard();
      const state = scopes.get(memoryId);
      if (!state) return [];
      const from = state.record.observedThroughMessageSeq;
      return state.messages.filter((message) => message.seq > from && message.seq <= throughSeq);
    },

    async listObservations(memoryId, listOptions) {
      guard();
      const afterSeq = listOptions?.afterSeq ?? 0;
      return (scopes.get(memoryId)?.observations ?? []).filter((observation) => observation.seq > afterSeq);
    },

    async findObservations(memoryId, options) {
      guard();
      const all = scopes.get(memoryId)?.observations ?? [];
      const found: Observation[] = [];
      for (let index = all.length - 1; index >= 0 && found.length < options.limit; index--) {
        const observation = all[index] as Observation;
        if (options.beforeSeq !== undefined && observation.seq >= options.beforeSeq) continue;
        if (containsWords(observation.content, options.words)) found.push(observation);
      }
      return found;
    },

    async correctObservation(input) {
      guard();
      const state = scopes.get(input.memoryId);
      const index = state?.observations.findIndex((observation) => observation.seq === input.seq) ?? -1;
      const existing = state?.observations[index];
      if (!state || !existing) return undefined;
      const plan = planCorrection(existing, input.change, state.record.reflection?.throughSeq ?? 0, input.operationId);
      if (plan.observation === null) state.observations.splice(index, 1);
      else state.observations[index] = plan.observation;
      const record = update(state, {
        observationCount: state.record.observationCount + plan.countDelta,
        activeObservationTokens: state.record.activeObservationTokens + plan.activeTokensDelta,
        unreflectedObservationTokens: state.record.unreflectedObservationTokens + plan.unreflectedTokensDelta,
        correctionCount: state.record.correctionCount + 1,
      });
      const at = nowIso();
      appendOperation(
        Object.freeze({
          operationId: input.operationId,
          memoryId: input.memoryId,
          scope: record.scope,
          runId: input.runId,
          toolCallId: input.toolCallId,
          scopeSequence: nextSequence(scopeOperations(input.memoryId)),
          operationType: 'correct',
          status: 'applied',
          payload: plan.payload,
          errorText: '',
          attempt: 1,
          leaseOwner: null,
          leaseExpiresAt: null,
          availableAt: at,
          createdAt: at,
          updatedAt: at,
        } satisfies Operation),
      );
      return { record, observation: plan.observation };
    },

    async listScopes(query) {
      guard();
      const after = query.after;
      const summaries: ScopeSummary[] = [];
      const candidates = [...scopes.values()]
        .map((state) => state.record)
        .filter((record) => record.scope.tenantId === query.tenantId)
        .sort((a, b) => compareScopeOrder(a.scope, b.scope));
      for (const record of candidates) {
        if (summaries.length >= query.limit) break;
        const { conversationId, agentId } = record.scope;
        if (after && compareScopeOrder(record.scope, after) <= 0) continue;
        if (!containsWords(`${conversationId}\n${agentId}`, query.words)) continue;
        if (query.enabled && (record.enabled ?? query.enabled.whenUnset) !== query.enabled.value) continue;
        const entries = [...(workingMemory.get(record.memoryId)?.values() ?? [])];
        const lastActivityAt = entries.reduce(
          (latest, entry) => (entry.updatedAt > latest ? entry.updatedAt : latest),
          record.updatedAt,
        );
        summaries.push(
          Object.freeze({
            memoryId: record.memoryId,
            scope: record.scope,
            enabled: record.enabled,
            observationCount: record.observationCount,
            workingMemoryEntries: entries.length,
            pendingOperations: pending.get(record.memoryId)?.length ?? 0,
            deadOperations: deadCounts.get(record.memoryId) ?? 0,
            lastActivityAt,
          }),
        );
      }
      return summaries;
    },

    async listMarkers(memoryId) {
      guard();
      return [...(scopes.get(memoryId)?.markers ?? [])];
    },

    async enqueueOperation(input) {
      guard();
      const list = scopeOperations(input.memoryId);
      const at = nowIso();
      const operation: Operation = Object.freeze({
        operationId: input.operationId,
        memoryId: input.memoryId,
        scope: Object.freeze({ ...input.scope }),
        runId: input.runId,
        toolCallId: input.toolCallId,
        scopeSequence: nextSequence(list),
        operationType: input.operationType,
        status: 'queued',
        payload: Object.freeze({ ...input.payload }),
        errorText: '',
        attempt: 0,
        leaseOwner: null,
        leaseExpiresAt: null,
        availableAt: at,
        createdAt: at,
        updatedAt: at,
      });
      appendOperation(operation);
      return operation;
    },

    async claimOperation(input) {
      guard();
      const at = now();
      const candidates = input.memoryId === undefined ? pending.values() : [pending.get(input.memoryId) ?? []];
      let best: Operation | undefined;
      for (const queue of candidates) {
        // The head is the scope's oldest pending operation: one runs at a time, in order.
        const head = queue[0];
        if (!head || head.status !== 'queued' || head.availableAt > at.toISOString()) continue;
        if (!best || head.createdAt < best.createdAt) best = head;
      }
      if (!best) return undefined;
      return replaceOperation({
        ...best,
        status: 'processing',
        attempt: best.attempt + 1,
        leaseOwner: input.leaseOwner,
        leaseExpiresAt: new Date(at.getTime() + input.leaseMs).toISOString(),
        updatedAt: at.toISOString(),
      });
    },

    async importObservations(input) {
      guard();
      const state = ensureScope(input.scope, input.memoryId);
      const at = nowIso();
      const plan = planImportApply(state.record, input.observations);
      const inserted: Observation[] = plan.observations.map(({ createdAt, ...planned }) =>
        Object.freeze({
          ...planned,
          sourceMessageSeqs: Object.freeze([...planned.sourceMessageSeqs]),
          createdAt: createdAt ?? at,
          operationId: input.operationId,
        }),
      );
      state.observations.push(...inserted);
      const record = update(state, {
        observationCount: state.record.observationCount + inserted.length,
        lastObservationSeq: plan.lastObservationSeq,
        activeObservationTokens: state.record.activeObservationTokens + plan.tokens,
        unreflectedObservationTokens: state.record.unreflectedObservationTokens + plan.tokens,
      });
      appendOperation(
        Object.freeze({
          operationId: input.operationId,
          memoryId: input.memoryId,
          scope: record.scope,
          runId: input.runId,
          toolCallId: input.toolCallId,
          scopeSequence: nextSequence(scopeOperations(input.memoryId)),
          operationType: 'import',
          status: 'applied',
          payload: Object.freeze({ count: inserted.length }),
          errorText: '',
          attempt: 1,
          leaseOwner: null,
          leaseExpiresAt: null,
          availableAt: at,
          createdAt: at,
          updatedAt: at,
        } satisfies Operation),
      );
      return { record, observations: inserted };
    },

    async completeObservation(input) {
      guard();
      const operation = holdLease(input);
      const state = scopes.get(operation.memoryId);
      if (!state) throw missingScope(operation.memoryId);
      const at = nowIso();
      const plan = planObservationApply(state.record, input);
      const inserted: Observation[] = plan.observations.map((planned) =>
        Object.freeze({
          ...planned,
          sourceMessageSeqs: Object.freeze([...planned.sourceMessageSeqs]),
          createdAt: at,
          operationId: operation.operationId,
        }),
      );
      const { throughSeq, tokens } = plan;
      state.observations.push(...inserted);
      state.messages = state.messages.filter((message) => message.seq > throughSeq);
      for (const planned of plan.markers) marker(state, { ...planned, cycleId: operation.operationId });
      const record = update(state, {
        observedThroughMessageSeq: throughSeq,
        observationCount: state.record.observationCount + inserted.length,
        lastObservationSeq: plan.lastObservationSeq,
        activeObservationTokens: state.record.activeObservationTokens + tokens,
        unreflectedObservationTokens: state.record.unreflectedObservationTokens + tokens,
      });
      finish(operation, 'applied', '');
      return { record, observations: inserted };
    },

    async completeReflection(input) {
      guard();
      const operation = holdLease(input);
      const state = scopes.get(operation.memoryId);
      if (!state) throw missingScope(operation.memoryId);
      const unreflected = state.observations
        .filter((observation) => observation.seq > input.reflection.throughSeq)
        .reduce((sum, observation) => sum + observation.tokenCount, 0);
      const plan = planReflectionApply(state.record, input);
      marker(state, { ...plan.marker, cycleId: operation.operationId });
      const at = nowIso();
      const found = { operationId: operation.operationId, createdAt: at };
      for (const link of plan.links) {
        if (link.kind === 'supersession') {
          if (
            !state.supersessions.some((known) => known.newerSeq === link.firstSeq && known.olderSeq === link.secondSeq)
          ) {
            state.supersessions.push(
              Object.freeze({ newerSeq: link.firstSeq, olderSeq: link.secondSeq, reason: link.detail, ...found }),
            );
          }
        } else if (
          !state.contradictions.some((known) => known.seqA === link.firstSeq && known.seqB === link.secondSeq)
        ) {
          state.contradictions.push(
            Object.freeze({ seqA: link.firstSeq, seqB: link.secondSeq, detail: link.detail, ...found }),
          );
        }
      }
      const record = update(state, {
        reflection: Object.freeze({ ...input.reflection }),
        unreflectedObservationTokens: unreflected,
        supersessionCount: state.supersessions.length,
        contradictionCount: state.contradictions.length,
        rejectedReferenceCount: state.record.rejectedReferenceCount + plan.rejected,
      });
      finish(operation, 'applied', '');
      return record;
    },

    async listReflectionLinks(memoryId) {
      guard();
      const state = scopes.get(memoryId);
      return {
        supersessions: [...(state?.supersessions ?? [])].sort(
          (a, b) => a.newerSeq - b.newerSeq || a.olderSeq - b.olderSeq,
        ),
        contradictions: [...(state?.contradictions ?? [])].sort((a, b) => a.seqA - b.seqA || a.seqB - b.seqB),
      };
    },

    async scopeGeneration(memoryId) {
      guard();
      return generations.get(memoryId) ?? 0;
    },

    async completeWithoutChange(input) {
      guard();
      finish(holdLease(input), 'applied', input.note);
    },

    async failOperation(input) {
      guard();
      const operation = holdLease(input);
      const at = now();
      if (input.retryAfterMs !== undefined) {
        return replaceOperation({
          ...operation,
          status: 'queued',
          errorText: input.errorText,
          leaseOwner: null,
          leaseExpiresAt: null,
          availableAt: new Date(at.getTime() + input.retryAfterMs).toISOString(),
          updatedAt: at.toISOString(),
        });
      }
      return replaceOperation({
        ...operation,
        status: 'failed',
        errorText: input.errorText,
        leaseOwner: null,
        leaseExpiresAt: null,
        updatedAt: at.toISOString(),
      });
    },

    async markOperationDead(input) {
      guard();
      const operation = holdLease(input);
      deadCounts.set(operation.memoryId, (deadCounts.get(operation.memoryId) ?? 0) + 1);
      return replaceOperation({
        ...operation,
        status: 'dead',
        errorText: input.errorText,
        leaseOwner: null,
        leaseExpiresAt: null,
        updatedAt: nowIso(),
      });
    },

    async retryDeadOperation(input) {
      guard();
      const operation = findOperation(input.operationId);
      if (!operation || operation.memoryId !== input.memoryId || operation.status !== 'dead') return undefined;
      // The next sequence counts the operation itself, as a new enqueue would.
      const scopeSequence = nextSequence(scopeOperations(operation.memoryId));
      removeOperation(operation);
      deadCounts.set(operation.memoryId, (deadCounts.get(operation.memoryId) ?? 1) - 1);
      const at = nowIso();
      const retried: Operation = Object.freeze({
        ...operation,
        scopeSequence,
        status: 'queued',
        attempt: 0,
        availableAt: at,
        updatedAt: at,
      });
      appendOperation(retried);
      return retried;
    },

    async countDeadOperations(memoryId) {
      guard();
      return deadCounts.get(memoryId) ?? 0;
    },

    async requeueStaleOperations(input) {
      guard();
      const cutoff = new Date(now().getTime() - input.graceSeconds * 1000).toISOString();
      let count = 0;
      // Collect first: requeueing changes the pending lists being walked.
      const stale: Operation[] = [];
      for (const queue of pending.values()) {
        for (const operation of queue) {
          if (
            operation.status === 'processing' &&
            operation.leaseExpiresAt !== null &&
            operation.leaseExpiresAt <= cutoff
          )
            stale.push(operation);
        }
      }
      for (const operation of stale) {
        replaceOperation({
          ...operation,
          status: 'queued',
          leaseOwner: null,
          leaseExpiresAt: null,
          errorText: 'requeued after stale processing operation',
          updatedAt: nowIso(),
        });
        count++;
      }
      return count;
    },

    async listOperations(memoryId) {
      guard();
      return [...(operations.get(memoryId) ?? [])];
    },

    async listOperationPage(memoryId, options) {
      guard();
      const all = operations.get(memoryId) ?? [];
      const page: Operation[] = [];
      for (let index = all.length - 1; index >= 0 && page.length < options.limit; index--) {
        const operation = all[index] as Operation;
        if (options.beforeSequence !== undefined && operation.scopeSequence >= options.beforeSequence) continue;
        if (options.status === undefined || operation.status === options.status) page.push(operation);
      }
      return page;
    },

    async countPendingOperations(memoryId) {
      guard();
      if (memoryId !== undefined) return pending.get(memoryId)?.length ?? 0;
      let count = 0;
      for (const queue of pending.values()) count += queue.length;
      return count;
    },

    async setWorkingMemoryEntry(input) {
      guard();
      ensureScope(input.scope, input.memoryId);
      let entries = workingMemory.get(input.memoryId);
      if (!entries) {
        entries = new Map();
        workingMemory.set(input.memoryId, entries);
      }
      const existing = entries.get(input.key);
      if (!existing && entries.size >= input.limits.maxEntries)
        throw workingMemoryLimitError('entries', entries.size + 1, input.limits.maxEntries);
      let total = utf8Length(input.key) + utf8Length(input.valueJson);
      for (const entry of entries.values()) {
        if (entry.key !== input.key) total += utf8Length(entry.key) + utf8Length(entry.valueJson);
      }
      if (total > input.limits.maxTotalBytes)
        throw workingMemoryLimitError('total_bytes', total, input.limits.maxTotalBytes);
      const at = nowIso();
      const entry: WorkingMemoryEntry = Object.freeze({
        key: input.key,
        valueJson: input.valueJson,
        createdAt: existing?.createdAt ?? at,
        updatedAt: at,
      });
      entries.set(input.key, entry);
      workingMemoryChanged(input.memoryId);
      return entry;
    },

    async getWorkingMemoryEntry(memoryId, key) {
      guard();
      return workingMemory.get(memoryId)?.get(key);
    },

    async deleteWorkingMemoryEntry(memoryId, key) {
      guard();
      const deleted = workingMemory.get(memoryId)?.delete(key) ?? false;
      if (deleted) workingMemoryChanged(memoryId);
      return deleted;
    },

    async workingMemoryVersion(memoryId) {
      guard();
      return workingMemoryVersions.get(memoryId) ?? 0;
    },

    async listWorkingMemoryEntries(memoryId) {
      guard();
      return [...(workingMemory.get(memoryId)?.values() ?? [])].sort((a, b) => compareBytes(a.key, b.key));
    },

    async forget(memoryId) {
      guard();
      generations.set(memoryId, newScopeGeneration());
      scopes.delete(memoryId);
      for (const operation of operations.get(memoryId) ?? []) locations.delete(operation.operationId);
      operations.delete(memoryId);
      pending.delete(memoryId);
      deadCounts.delete(memoryId);
      workingMemory.delete(memoryId);
      workingMemoryVersions.delete(memoryId);
    },

    async dispose() {
      storeGuard.dispose();
      scopes.clear();
      operations.clear();
      locations.clear();
      pending.clear();
      deadCounts.clear();
      workingMemory.clear();
      workingMemoryVersions.clear();
      generations.clear();
    },
  };

  function checkGeneration(memoryId: string, expected: number | undefined): void {
    if (expected !== undefined && (generations.get(memoryId) ?? 0) !== expected)
      throw scopeForgottenError(STORE_NAME, memoryId);
  }
  return store;
}

/** The scope sequence after the last one of a scope's log (kept in sequence order). */
function nextSequence(list: readonly Operation[]): number {
  return (list.at(-1)?.scopeSequence ?? 0) + 1;
}

function isPending(operation: Operation): boolean {
  return operation.status === 'queued' || operation.status === 'processing';
}

/** Orders scopes by conversation id, then agent id, in byte order. */
function compareScopeOrder(
  a: { readonly conversationId: string; readonly agentId: string },
  b: { readonly conversationId: string; readonly agentId: string },
): number {
  return compareBytes(a.conversationId, b.conversationId) || compareBytes(a.agentId, b.agentId);
}

/** Orders strings by their UTF-8 bytes, like SQLite's BINARY collation. */
export function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

function missingScope(memoryId: string): StoreError {
  return new StoreError({ store: STORE_NAME, message: `No record exists for scope ${memoryId}.`, data: { memoryId } });
}
