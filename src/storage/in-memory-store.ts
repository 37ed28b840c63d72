/**
 * The in-memory store: everything lives in this process and is lost when it exits.
 * The library's default; the harness uses SQLite.
 * @module
 */
import type { StoreInput as Input } from './_memory-rows.js';
import { compareUtf8 } from '../core/compare-utf8.js';
import { firstAfterSeq } from '../core/first-after-seq.js';
import { StoreError } from '../core/errors.js';
import type { MemoryRecord, Observation } from '../core/observation.js';
import type { StoredContradiction, StoredSupersession } from '../core/reflection-links.js';
import type { Scope } from '../core/scope.js';
import { utf8Length, workingMemoryLimitError } from '../core/working-memory.js';
import { newScopeGeneration, oldestWithin } from './_memory-rows.js';
import { scopeForgottenError } from './_store-errors.js';
import { createStoreGuard } from './_store-guard.js';
import { checkRestoreTarget, planRestoreLinks } from './_import-restore.js';
import type { RestoreTarget } from './_import-restore.js';
import { planImportApply, planObservationApply, planReflectionApply } from './apply-plan.js';
import type { PlannedLink } from './apply-plan.js';
import type { PlannedMarker } from './apply-plan.js';
import { containsWords, isOutdatedReflection, OUTDATED_REFLECTION_NOTE, planCorrection } from './correction-plan.js';
import { InMemoryOperationLog } from './in-memory-operation-log.js';
import { settingsPayload } from './_operation-payloads.js';
import { markersOfDeleted, markerScan, operationRetentionArguments } from './_operation-retention.js';
import { workingMemoryPurgeArguments } from './_working-memory-purge.js';
import { isOpenOperation } from './store.js';
import type {
  ImportedReflection,
  Marker,
  MemoryStore,
  Operation,
  ScopeSummary,
  StoredMessage,
  WorkingMemoryEntry,
} from './store.js';
import { requireFunction, requireOptions } from '../core/require-option.js';

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

type Result<K extends keyof MemoryStore> = MemoryStore[K] extends ((...args: never[]) => infer R) | undefined
  ? R
  : never;

/**
 * Creates an in-memory store.
 * @example
 * const memory = createObservationalMemory({ store: createInMemoryStore(), model });
 */
export function createInMemoryStore(options: InMemoryStoreOptions = {}): MemoryStore {
  requireFunction(
    'createInMemoryStore',
    'now',
    requireOptions('createInMemoryStore', options, 'Pass {}, or nothing.').now,
  );
  return new InMemoryStore(options.now ?? (() => new Date()));
}

/** The store: scopes and working memory here, the operation log in {@link InMemoryOperationLog}. */
class InMemoryStore implements MemoryStore {
  readonly specificationVersion = 'v1' as const;
  readonly name = STORE_NAME;
  readonly supportsRestore = true;
  readonly #now: () => Date;
  readonly #guard = createStoreGuard({ store: STORE_NAME });
  readonly #scopes = new Map<string, ScopeState>();
  readonly #log: InMemoryOperationLog;
  readonly #workingMemory = new Map<string, Map<string, WorkingMemoryEntry>>();
  readonly #workingMemoryVersions = new Map<string, number>();
  // Per scope, no later than its earliest entry expiry: a write purges only once it has passed.
  readonly #earliestExpiry = new Map<string, string>();
  /** The `createdAt` of each forgotten scope's record, until the scope has a record again. */
  readonly #forgottenCreatedAt = new Map<string, string>();
  // Kept through forget: that is their point.
  readonly #generations = new Map<string, number>();
  #lastWorkingMemoryVersion = 0;

  constructor(now: () => Date) {
    this.#now = now;
    this.#log = new InMemoryOperationLog(now, STORE_NAME);
  }

  // -- Records, messages, observations ------------------------------------------------------

  readonly getRecord = async (memoryId: string): Result<'getRecord'> => {
    this.#guard.check();
    return this.#scopes.get(memoryId)?.record;
  };

  readonly updateSettings = async (input: Input<'updateSettings'>): Result<'updateSettings'> => {
    this.#guard.check();
    const state = this.#ensureScope(input.scope, input.memoryId);
    const record = this.#update(state, {
      enabled: input.enabled,
      config: Object.freeze({ ...state.record.config, ...input.config }),
    });
    this.#log.appendApplied(
      { ...input, scope: record.scope },
      input.enabled ? 'enable' : 'disable',
      Object.freeze(settingsPayload(input.enabled, input.config)),
    );
    return record;
  };

  readonly appendMessages = async (input: Input<'appendMessages'>): Result<'appendMessages'> => {
    this.#guard.check();
    this.#checkGeneration(input.memoryId, input.generation);
    const state = this.#ensureScope(input.scope, input.memoryId);
    let inserted = 0;
    let addedTokens = 0;
    let lastSeq = state.record.lastMessageSeq;
    for (const message of input.messages) {
      if (state.seenMessageKeys.has(message.messageKey)) continue;
      state.seenMessageKeys.add(message.messageKey);
      lastSeq++;
      state.messages.push(Object.freeze({ ...message, seq: lastSeq }));
      inserted++;
      addedTokens += message.tokenCount;
    }
    const record =
      inserted > 0
        ? this.#update(state, {
            lastMessageSeq: lastSeq,
            unobservedMessageTokens: state.record.unobservedMessageTokens + addedTokens,
          })
        : state.record;
    return { record, inserted, unobservedTokens: record.unobservedMessageTokens };
  };

  readonly listUnobservedMessages = async (
    memoryId: string,
    throughSeq: number,
    options: { readonly maxTokens?: number } = {},
  ): Result<'listUnobservedMessages'> => {
    this.#guard.check();
    const state = this.#scopes.get(memoryId);
    if (!state) return [];
    // Messages and observations are kept in seq order: appended in order, only ever removed
    // or replaced in place.
    const { messages } = state;
    const unobserved = messages.slice(
      firstAfterSeq(messages, state.record.observedThroughMessageSeq),
      firstAfterSeq(messages, throughSeq),
    );
    return oldestWithin(unobserved, (message) => message.tokenCount, options.maxTokens);
  };

  readonly listObservations = async (memoryId: string, options?: { afterSeq?: number }): Result<'listObservations'> => {
    this.#guard.check();
    const observations = this.#scopes.get(memoryId)?.observations ?? [];
    return observations.slice(firstAfterSeq(observations, options?.afterSeq ?? 0));
  };

  readonly findObservations = async (
    memoryId: string,
    options: Parameters<MemoryStore['findObservations']>[1],
  ): Result<'findObservations'> => {
    this.#guard.check();
    const all = this.#scopes.get(memoryId)?.observations ?? [];
    const found: Observation[] = [];
    for (let index = all.length - 1; index >= 0 && found.length < options.limit; index--) {
      const observation = all[index] as Observation;
      if (options.beforeSeq !== undefined && observation.seq >= options.beforeSeq) continue;
      if (containsWords(observation.content, options.words)) found.push(observation);
    }
    return found;
  };

  readonly correctObservation = async (input: Input<'correctObservation'>): Result<'correctObservation'> => {
    this.#guard.check();
    const state = this.#scopes.get(input.memoryId);
    const index = state?.observations.findIndex((observation) => observation.seq === input.seq) ?? -1;
    const existing = state?.observations[index];
    if (!state || !existing) return undefined;
    const plan = planCorrection(existing, input.change, state.record.reflection?.throughSeq ?? 0, input.operationId);
    if (plan.observation === null) state.observations.splice(index, 1);
    else state.observations[index] = plan.observation;
    if (plan.dropsLinks) {
      state.supersessions = state.supersessions.filter(
        (link) => link.newerSeq !== input.seq && link.olderSeq !== input.seq,
      );
      state.contradictions = state.contradictions.filter((link) => link.seqA !== input.seq && link.seqB !== input.seq);
    }
    const activeObservationTokens = state.record.activeObservationTokens + plan.activeTokensDelta;
    const record = this.#update(state, {
      observationCount: state.record.observationCount + plan.countDelta,
      activeObservationTokens,
      unreflectedObservationTokens: plan.dropsReflection
        ? activeObservationTokens
        : state.record.unreflectedObservationTokens + plan.unreflectedTokensDelta,
      ...(plan.dropsReflection ? { reflection: null } : {}),
      supersessionCount: state.supersessions.length,
      contradictionCount: state.contradictions.length,
      correctionCount: state.record.correctionCount + 1,
    });
    this.#log.appendApplied({ ...input, scope: record.scope }, 'correct', plan.payload);
    return { record, observation: plan.observation };
  };

  readonly importObservations = async (input: Input<'importObservations'>): Result<'importObservations'> => {
    this.#guard.check();
    const { restore } = input;
    if (restore)
      checkRestoreTarget(STORE_NAME, input.memoryId, restoreTargetOf(this.#scopes.get(input.memoryId)), restore);
    const state = this.#ensureScope(input.scope, input.memoryId);
    const at = this.#nowIso();
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
    const record = this.#update(state, {
      observationCount: state.record.observationCount + inserted.length,
      lastObservationSeq: plan.lastObservationSeq,
      activeObservationTokens: state.record.activeObservationTokens + plan.tokens,
      unreflectedObservationTokens: state.record.unreflectedObservationTokens + plan.tokens,
    });
    const restored = restore ? this.#restore(state, restore, input.operationId, at) : record;
    this.#log.appendApplied({ ...input, scope: record.scope }, 'import', Object.freeze({ count: inserted.length }));
    return { record: restored, observations: inserted };
  };

  /** Puts an imported reflection in force and adds its links (see `importObservations`). */
  #restore(state: ScopeState, restore: ImportedReflection, operationId: string, at: string): MemoryRecord {
    const plan = planRestoreLinks(restore, state.record.lastObservationSeq);
    for (const link of plan.links) {
      const found = { operationId, createdAt: at };
      if (link.kind === 'supersession')
        state.supersessions.push(
          Object.freeze({ newerSeq: link.firstSeq, olderSeq: link.secondSeq, reason: link.detail, ...found }),
        );
      else
        state.contradictions.push(
          Object.freeze({ seqA: link.firstSeq, seqB: link.secondSeq, detail: link.detail, ...found }),
        );
    }
    const throughSeq = restore.reflection?.throughSeq ?? 0;
    return this.#update(state, {
      reflection: restore.reflection && Object.freeze({ ...restore.reflection }),
      unreflectedObservationTokens: state.observations
        .filter((observation) => observation.seq > throughSeq)
        .reduce((sum, observation) => sum + observation.tokenCount, 0),
      supersessionCount: state.supersessions.length,
      contradictionCount: state.contradictions.length,
      rejectedReferenceCount: state.record.rejectedReferenceCount + plan.rejected,
    });
  }

  readonly completeObservation = async (input: Input<'completeObservation'>): Result<'completeObservation'> => {
    this.#guard.check();
    const operation = this.#log.holdLease(input);
    const state = this.#stateOf(operation.memoryId);
    const at = this.#nowIso();
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
    let observedTokens = 0;
    state.messages = state.messages.filter((message) => {
      if (message.seq > throughSeq) return true;
      if (message.seq > state.record.observedThroughMessageSeq) observedTokens += message.tokenCount;
      return false;
    });
    for (const planned of plan.markers) this.#marker(state, planned, operation.operationId);
    this.#addLinks(state, plan.links, { operationId: operation.operationId, createdAt: at });
    const record = this.#update(state, {
      supersessionCount: state.supersessions.length,
      contradictionCount: state.contradictions.length,
      observedThroughMessageSeq: throughSeq,
      unobservedMessageTokens: state.record.unobservedMessageTokens - observedTokens,
      observationCount: state.record.observationCount + inserted.length,
      lastObservationSeq: plan.lastObservationSeq,
      activeObservationTokens: state.record.activeObservationTokens + tokens,
      unreflectedObservationTokens: state.record.unreflectedObservationTokens + tokens,
    });
    this.#log.finish(operation, 'applied', input.note ?? '');
    return { record, observations: inserted };
  };

  readonly completeReflection = async (input: Input<'completeReflection'>): Result<'completeReflection'> => {
    this.#guard.check();
    const operation = this.#log.holdLease(input);
    const state = this.#stateOf(operation.memoryId);
    if (isOutdatedReflection(input.correctionCount, state.record.correctionCount)) {
      this.#log.finish(operation, 'applied', OUTDATED_REFLECTION_NOTE);
      return state.record;
    }
    const unreflected = state.observations
      .filter((observation) => observation.seq > input.reflection.throughSeq)
      .reduce((sum, observation) => sum + observation.tokenCount, 0);
    const plan = planReflectionApply(state.record, input);
    this.#marker(state, plan.marker, operation.operationId);
    this.#addLinks(state, plan.links, { operationId: operation.operationId, createdAt: this.#nowIso() });
    const record = this.#update(state, {
      reflection: Object.freeze({ ...input.reflection }),
      unreflectedObservationTokens: unreflected,
      supersessionCount: state.supersessions.length,
      contradictionCount: state.contradictions.length,
      rejectedReferenceCount: state.record.rejectedReferenceCount + plan.rejected,
    });
    this.#log.finish(operation, 'applied', '');
    return record;
  };

  /** Adds `links` to the scope's set; a pair already there is kept as it was. */
  #addLinks(
    state: ScopeState,
    links: readonly PlannedLink[],
    found: { readonly operationId: string; readonly createdAt: string },
  ): void {
    for (const link of links) {
      if (link.kind === 'supersession') {
        const known = state.supersessions.some(
          (item) => item.newerSeq === link.firstSeq && item.olderSeq === link.secondSeq,
        );
        if (!known)
          state.supersessions.push(
            Object.freeze({ newerSeq: link.firstSeq, olderSeq: link.secondSeq, reason: link.detail, ...found }),
          );
      } else if (!state.contradictions.some((item) => item.seqA === link.firstSeq && item.seqB === link.secondSeq)) {
        state.contradictions.push(
          Object.freeze({ seqA: link.firstSeq, seqB: link.secondSeq, detail: link.detail, ...found }),
        );
      }
    }
  }

  readonly listReflectionLinks = async (memoryId: string): Result<'listReflectionLinks'> => {
    this.#guard.check();
    const state = this.#scopes.get(memoryId);
    return {
      supersessions: [...(state?.supersessions ?? [])].sort(
        (a, b) => a.newerSeq - b.newerSeq || a.olderSeq - b.olderSeq,
      ),
      contradictions: [...(state?.contradictions ?? [])].sort((a, b) => a.seqA - b.seqA || a.seqB - b.seqB),
    };
  };

  readonly listMarkers = async (memoryId: string): Result<'listMarkers'> => {
    this.#guard.check();
    return [...(this.#scopes.get(memoryId)?.markers ?? [])];
  };

  readonly listScopes = async (query: Input<'listScopes'>): Result<'listScopes'> => {
    this.#guard.check();
    const summaries: ScopeSummary[] = [];
    const candidates = [...this.#scopes.values()]
      .map((state) => state.record)
      .filter((record) => record.scope.tenantId === query.tenantId)
      .sort((a, b) => compareScopeOrder(a.scope, b.scope));
    for (const record of candidates) {
      if (summaries.length >= query.limit) break;
      if (query.after && compareScopeOrder(record.scope, query.after) <= 0) continue;
      if (!containsWords(`${record.scope.conversationId}\n${record.scope.agentId}`, query.words)) continue;
      if (query.enabled && (record.enabled ?? query.enabled.whenUnset) !== query.enabled.value) continue;
      summaries.push(this.#summaryOf(record));
    }
    return summaries;
  };

  // -- The operation log ----------------------------------------------------------------------

  readonly enqueueOperation = async (input: Input<'enqueueOperation'>): Result<'enqueueOperation'> => {
    this.#guard.check();
    return this.#log.enqueue(input);
  };

  readonly claimOperation = async (input: Input<'claimOperation'>): Result<'claimOperation'> => {
    this.#guard.check();
    return this.#log.claim(input);
  };

  readonly completeWithoutChange = async (input: Input<'completeWithoutChange'>): Result<'completeWithoutChange'> => {
    this.#guard.check();
    this.#log.finish(this.#log.holdLease(input), 'applied', input.note);
  };

  readonly failOperation = async (input: Input<'failOperation'>): Result<'failOperation'> => {
    this.#guard.check();
    return this.#log.fail(input);
  };

  readonly markOperationDead = async (input: Input<'markOperationDead'>): Result<'markOperationDead'> => {
    this.#guard.check();
    return this.#log.markDead(input);
  };

  readonly retryDeadOperation = async (input: Input<'retryDeadOperation'>): Result<'retryDeadOperation'> => {
    this.#guard.check();
    return this.#log.retryDead(input);
  };

  readonly countDeadOperations = async (memoryId: string): Result<'countDeadOperations'> => {
    this.#guard.check();
    return this.#log.deadCount(memoryId);
  };

  readonly requeueStaleOperations = async (
    input: Input<'requeueStaleOperations'>,
  ): Result<'requeueStaleOperations'> => {
    this.#guard.check();
    return this.#log.requeueStale(input.graceSeconds);
  };

  readonly listOperations = async (memoryId: string): Result<'listOperations'> => {
    this.#guard.check();
    return [...this.#log.of(memoryId)];
  };

  readonly listOpenOperations = async (memoryId: string): Promise<Operation[]> => {
    this.#guard.check();
    return this.#log.of(memoryId).filter(isOpenOperation);
  };

  readonly listOperationPage = async (
    memoryId: string,
    options: Parameters<MemoryStore['listOperationPage']>[1],
  ): Result<'listOperationPage'> => {
    this.#guard.check();
    return this.#log.page(memoryId, options);
  };

  readonly countPendingOperations = async (memoryId?: string): Result<'countPendingOperations'> => {
    this.#guard.check();
    return this.#log.pendingCount(memoryId);
  };

  readonly deleteSettledOperations = async (
    input: Input<'deleteSettledOperations'>,
  ): Result<'deleteSettledOperations'> => {
    this.#guard.check();
    const { olderThanSeconds, limit } = operationRetentionArguments(input);
    const cutoff = new Date(this.#now().getTime() - olderThanSeconds * 1000).toISOString();
    let count = 0;
    for (const { memoryId, operationIds, settledThrough } of this.#log.deleteSettled(cutoff, limit)) {
      count += operationIds.size;
      const state = this.#scopes.get(memoryId);
      if (!state) continue;
      const doomed = new Set(
        markersOfDeleted(state.markers, operationIds, settledThrough, markerScan(operationIds.size)),
      );
      if (doomed.size > 0) state.markers = state.markers.filter((_, index) => !doomed.has(index));
    }
    return count;
  };

  // -- Working memory ---------------------------------------------------------------------------

  readonly setWorkingMemoryEntry = async (input: Input<'setWorkingMemoryEntry'>): Result<'setWorkingMemoryEntry'> => {
    this.#guard.check();
    this.#ensureScope(input.scope, input.memoryId);
    const now = this.#now().getTime();
    let entries = this.#workingMemory.get(input.memoryId);
    if (!entries) {
      entries = new Map();
      this.#workingMemory.set(input.memoryId, entries);
    }
    this.#purgeExpired(input.memoryId, entries, now);
    const existing = entries.get(input.key);
    if (!existing && entries.size >= input.limits.maxEntries)
      throw workingMemoryLimitError('entries', entries.size + 1, input.limits.maxEntries);
    let total = utf8Length(input.key) + utf8Length(input.valueJson);
    for (const entry of entries.values()) {
      if (entry.key !== input.key) total += utf8Length(entry.key) + utf8Length(entry.valueJson);
    }
    if (total > input.limits.maxTotalBytes)
      throw workingMemoryLimitError('total_bytes', total, input.limits.maxTotalBytes);
    const at = new Date(now).toISOString();
    const expiresAt = input.ttlMs === undefined ? null : new Date(now + input.ttlMs).toISOString();
    const entry: WorkingMemoryEntry = Object.freeze({
      key: input.key,
      valueJson: input.valueJson,
      createdAt: existing?.createdAt ?? at,
      updatedAt: at,
      expiresAt,
    });
    entries.set(input.key, entry);
    if (expiresAt !== null) {
      const earliest = this.#earliestExpiry.get(input.memoryId);
      if (earliest === undefined || expiresAt < earliest) this.#earliestExpiry.set(input.memoryId, expiresAt);
    }
    const before = this.#workingMemoryVersions.get(input.memoryId) ?? 0;
    this.#workingMemoryChanged(input.memoryId);
    const after = this.#workingMemoryVersions.get(input.memoryId) ?? 0;
    return Object.freeze({ ...entry, versions: Object.freeze({ before, after }) });
  };

  readonly getWorkingMemoryEntry = async (memoryId: string, key: string): Result<'getWorkingMemoryEntry'> => {
    this.#guard.check();
    const entry = this.#workingMemory.get(memoryId)?.get(key);
    return entry && this.#live(entry, this.#nowIso()) ? entry : undefined;
  };

  readonly deleteWorkingMemoryEntry = async (memoryId: string, key: string): Result<'deleteWorkingMemoryEntry'> => {
    this.#guard.check();
    const entries = this.#workingMemory.get(memoryId);
    if (!entries) return false;
    const purged = this.#purgeExpired(memoryId, entries, this.#now().getTime());
    const deleted = entries.delete(key);
    if (deleted || purged > 0) this.#workingMemoryChanged(memoryId);
    return deleted;
  };

  readonly workingMemoryVersion = async (memoryId: string): Result<'workingMemoryVersion'> => {
    this.#guard.check();
    return this.#workingMemoryVersions.get(memoryId) ?? 0;
  };

  readonly purgeExpiredWorkingMemory = async (
    input: Input<'purgeExpiredWorkingMemory'>,
  ): Result<'purgeExpiredWorkingMemory'> => {
    this.#guard.check();
    const { limit } = workingMemoryPurgeArguments(input);
    const now = this.#now().getTime();
    const nowIso = new Date(now).toISOString();
    // NOTE: a pass over the scopes that have an expiring entry (the others are not in the map),
    // where the databases read an index: this store holds one process's scopes.
    const due = [...this.#earliestExpiry]
      .filter(([, earliest]) => earliest <= nowIso)
      .sort(([, a], [, b]) => (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, limit);
    let remaining = limit;
    for (const [memoryId] of due) {
      if (remaining === 0) break;
      const entries = this.#workingMemory.get(memoryId);
      if (!entries) {
        this.#earliestExpiry.delete(memoryId);
        continue;
      }
      remaining -= this.#purgeExpired(memoryId, entries, now, remaining);
      this.#workingMemoryChanged(memoryId);
    }
    return limit - remaining;
  };

  readonly listWorkingMemoryEntries = async (memoryId: string): Result<'listWorkingMemoryEntries'> => {
    this.#guard.check();
    const now = this.#nowIso();
    return [...(this.#workingMemory.get(memoryId)?.values() ?? [])]
      .filter((entry) => this.#live(entry, now))
      .sort((a, b) => compareUtf8(a.key, b.key));
  };

  // -- Generations, forget, dispose -------------------------------------------------------------

  readonly scopeGeneration = async (memoryId: string): Result<'scopeGeneration'> => {
    this.#guard.check();
    return this.#generations.get(memoryId) ?? 0;
  };

  readonly forget = async (memoryId: string): Result<'forget'> => {
    this.#guard.check();
    this.#generations.set(memoryId, newScopeGeneration());
    const forgotten = this.#scopes.get(memoryId);
    if (forgotten) this.#forgottenCreatedAt.set(memoryId, forgotten.record.createdAt);
    this.#scopes.delete(memoryId);
    this.#log.forget(memoryId);
    this.#workingMemory.delete(memoryId);
    this.#workingMemoryVersions.delete(memoryId);
    this.#earliestExpiry.delete(memoryId);
  };

  readonly dispose = async (): Result<'dispose'> => {
    this.#guard.dispose();
    this.#scopes.clear();
    this.#log.clear();
    this.#workingMemory.clear();
    this.#workingMemoryVersions.clear();
    this.#earliestExpiry.clear();
    this.#forgottenCreatedAt.clear();
    this.#generations.clear();
  };

  // -- Helpers ----------------------------------------------------------------------------------

  #nowIso(): string {
    return this.#now().toISOString();
  }

  // A record made again after a forget is created after the forgotten one, even within the same
  // millisecond or on a stopped clock: readers tell the scope's lives apart by `createdAt`.
  #newLifeAt(memoryId: string): string {
    const at = this.#nowIso();
    const previous = this.#forgottenCreatedAt.get(memoryId);
    if (previous === undefined) return at;
    this.#forgottenCreatedAt.delete(memoryId);
    return at > previous ? at : new Date(Date.parse(previous) + 1).toISOString();
  }

  #ensureScope(scope: Scope, memoryId: string): ScopeState {
    let state = this.#scopes.get(memoryId);
    if (!state) {
      state = {
        record: newRecord(scope, memoryId, this.#newLifeAt(memoryId)),
        messages: [],
        seenMessageKeys: new Set(),
        observations: [],
        markers: [],
        supersessions: [],
        contradictions: [],
      };
      this.#scopes.set(memoryId, state);
    }
    return state;
  }

  #stateOf(memoryId: string): ScopeState {
    const state = this.#scopes.get(memoryId);
    if (!state)
      throw new StoreError({
        store: STORE_NAME,
        message: `No record exists for scope ${memoryId}.`,
        data: { memoryId },
      });
    return state;
  }

  #update(state: ScopeState, patch: Partial<MemoryRecord>): MemoryRecord {
    state.record = Object.freeze({
      ...state.record,
      ...patch,
      stateVersion: state.record.stateVersion + 1,
      updatedAt: this.#nowIso(),
    });
    return state.record;
  }

  #marker(state: ScopeState, planned: PlannedMarker, cycleId: string): void {
    state.markers.push(
      Object.freeze({ ...planned, cycleId, memoryId: state.record.memoryId, createdAt: this.#nowIso() }),
    );
  }

  #summaryOf(record: MemoryRecord): ScopeSummary {
    const now = this.#nowIso();
    const entries = [...(this.#workingMemory.get(record.memoryId)?.values() ?? [])].filter((entry) =>
      this.#live(entry, now),
    );
    const lastActivityAt = entries.reduce(
      (latest, entry) => (entry.updatedAt > latest ? entry.updatedAt : latest),
      record.updatedAt,
    );
    return Object.freeze({
      memoryId: record.memoryId,
      scope: record.scope,
      enabled: record.enabled,
      observationCount: record.observationCount,
      workingMemoryEntries: entries.length,
      pendingOperations: this.#log.pendingCount(record.memoryId),
      deadOperations: this.#log.deadCount(record.memoryId),
      lastActivityAt,
    });
  }

  #live(entry: WorkingMemoryEntry, nowIso: string): boolean {
    return entry.expiresAt === null || entry.expiresAt > nowIso;
  }

  /**
   * Deletes the scope's expired entries (at most `limit`) once its earliest expiry has passed,
   * and keeps the earliest expiry of those left (an expired one left over keeps it due);
   * returns how many went.
   */
  #purgeExpired(memoryId: string, entries: Map<string, WorkingMemoryEntry>, now: number, limit = Infinity): number {
    const earliest = this.#earliestExpiry.get(memoryId);
    if (earliest === undefined || Date.parse(earliest) > now) return 0;
    const nowIso = new Date(now).toISOString();
    let purged = 0;
    let next: string | undefined;
    for (const [key, entry] of entries) {
      if (entry.expiresAt === null) continue;
      if (entry.expiresAt <= nowIso && purged < limit) {
        entries.delete(key);
        purged++;
      } else if (next === undefined || entry.expiresAt < next) next = entry.expiresAt;
    }
    if (next === undefined) this.#earliestExpiry.delete(memoryId);
    else this.#earliestExpiry.set(memoryId, next);
    return purged;
  }

  #workingMemoryChanged(memoryId: string): void {
    this.#workingMemoryVersions.set(memoryId, ++this.#lastWorkingMemoryVersion);
  }

  #checkGeneration(memoryId: string, expected: number | undefined): void {
    if (expected !== undefined && (this.#generations.get(memoryId) ?? 0) !== expected)
      throw scopeForgottenError(STORE_NAME, memoryId);
  }
}

function newRecord(scope: Scope, memoryId: string, at: string): MemoryRecord {
  return Object.freeze({
    memoryId,
    scope: Object.freeze({ ...scope }),
    enabled: null,
    stateVersion: 1,
    config: Object.freeze({}),
    observedThroughMessageSeq: 0,
    lastMessageSeq: 0,
    unobservedMessageTokens: 0,
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
  });
}

/** Orders scopes by conversation id, then agent id, in byte order. */
function compareScopeOrder(
  a: { readonly conversationId: string; readonly agentId: string },
  b: { readonly conversationId: string; readonly agentId: string },
): number {
  return compareUtf8(a.conversationId, b.conversationId) || compareUtf8(a.agentId, b.agentId);
}

function restoreTargetOf(state: ScopeState | undefined): RestoreTarget {
  return {
    observationCount: state?.record.observationCount ?? 0,
    lastObservationSeq: state?.record.lastObservationSeq ?? 0,
    hasReflection: (state?.record.reflection ?? null) !== null,
    linkCount: (state?.supersessions.length ?? 0) + (state?.contradictions.length ?? 0),
  };
}
