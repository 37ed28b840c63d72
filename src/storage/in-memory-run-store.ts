import { StoreError } from '../core/errors.js';
import { memoryIdOf } from '../core/scope.js';
import { createStoreGuard } from './_store-guard.js';
import { newScopeGeneration } from './_memory-rows.js';
import { scopeForgottenError } from './_store-errors.js';
import { isRunOpen, runExistsError } from './run-store.js';
import type { ConversationMessage, RunEvent, RunListQuery, RunRecord, RunStore } from './run-store.js';
import { storableMessage, storablePatch, storableRun } from './_storable-text.js';
import { checkedAfterSeq, checkedRunListQuery } from './_run-arguments.js';
import { retentionArguments } from './_run-retention.js';
import { clipAtOf } from './_run-rows.js';
import { runEndedError } from './_run-ending.js';
import { TERMINAL_EVENT_TYPES } from './event-hub.js';
import { requireFunction, requireOptions } from '../core/require-option.js';

/** Options of {@link createInMemoryRunStore}. */
export interface InMemoryRunStoreOptions {
  /** @default () => new Date() */
  now?: () => Date;
}

/** A run store that keeps everything in this process. */
export function createInMemoryRunStore(options: InMemoryRunStoreOptions = {}): RunStore {
  requireFunction(
    'createInMemoryRunStore',
    'now',
    requireOptions('createInMemoryRunStore', options, 'Pass {}, or nothing.').now,
  );
  const now = options.now ?? (() => new Date());
  const runs = new Map<string, RunRecord>();
  const events = new Map<string, RunEvent[]>();
  const conversations = new Map<string, { ids: Set<string>; messages: ConversationMessage[] }>();
  // Kept through forget: that is their point.
  const generations = new Map<string, number>();
  const storeGuard = createStoreGuard({ store: 'in-memory-runs', disposedMessage: 'The run store was disposed.' });
  const guard = storeGuard.check;
  const missing = (runId: string): StoreError =>
    new StoreError({ store: 'in-memory-runs', message: `Run ${runId} does not exist.`, data: { runId } });

  return {
    specificationVersion: 'v1',
    supportsClipAt: true,
    name: 'in-memory',
    async createRun(given) {
      guard();
      const run = storableRun(given);
      if (runs.has(run.runId)) throw runExistsError('in-memory-runs', run.runId);
      const at = now().toISOString();
      const record: RunRecord = storedCopy({ ...run, createdAt: at, updatedAt: at });
      runs.set(run.runId, record);
      events.set(run.runId, []);
      return record;
    },
    async getRun(runId) {
      guard();
      return runs.get(runId);
    },
    async listRuns(given) {
      guard();
      const query = checkedRunListQuery(given);
      return [...runs.values()]
        .filter((run) => matchesRunQuery(run, query))
        .sort(newestRunFirst)
        .slice(0, query.limit);
    },
    async updateRun(runId, given) {
      guard();
      const patch = storablePatch(given);
      const current = runs.get(runId);
      if (!current) throw missing(runId);
      if (!isRunOpen(current.status)) return current;
      const next: RunRecord = Object.freeze({ ...current, ...storedCopy(patch), updatedAt: now().toISOString() });
      runs.set(runId, next);
      return next;
    },
    async appendEvent(runId, type, payload) {
      guard();
      const list = events.get(runId);
      const run = runs.get(runId);
      if (!list || !run) throw missing(runId);
      if (
        !isRunOpen(run.status) &&
        (!TERMINAL_EVENT_TYPES.has(type) || list.some((event) => TERMINAL_EVENT_TYPES.has(event.type)))
      )
        throw runEndedError('in-memory-runs', runId, run.status, type);
      const seq = list.length;
      const event: RunEvent = Object.freeze({
        id: `${runId}:${seq}`,
        runId,
        seq,
        type,
        timestamp: now().toISOString(),
        payload: storedCopy(payload),
      });
      list.push(event);
      return event;
    },
    async listEvents(runId, given) {
      guard();
      const afterSeq = checkedAfterSeq(given);
      return (events.get(runId) ?? []).filter((event) => event.seq > afterSeq);
    },
    async appendMessages(memoryId, messages, appendOptions = {}) {
      guard();
      if (appendOptions.generation !== undefined && (generations.get(memoryId) ?? 0) !== appendOptions.generation)
        throw scopeForgottenError('in-memory-runs', memoryId);
      let conversation = conversations.get(memoryId);
      if (!conversation) {
        conversation = { ids: new Set(), messages: [] };
        conversations.set(memoryId, conversation);
      }
      for (const message of messages.map(storableMessage)) {
        if (conversation.ids.has(message.messageId)) continue;
        conversation.ids.add(message.messageId);
        conversation.messages.push(storedCopy(message));
      }
    },
    async recentMessages(memoryId, maxTokens, options) {
      guard();
      const all = conversations.get(memoryId)?.messages ?? [];
      return takeRecent(all, maxTokens, clipAtOf(options));
    },
    async recentHistory(memoryId, maxTokens, options) {
      guard();
      const all = conversations.get(memoryId)?.messages ?? [];
      return { messages: takeRecent(all, maxTokens, clipAtOf(options)), generation: generations.get(memoryId) ?? 0 };
    },
    async abandonStaleRun(runId, olderThanSeconds, error) {
      guard();
      const current = runs.get(runId);
      const cutoff = new Date(now().getTime() - olderThanSeconds * 1000).toISOString();
      if (!current || !isRunOpen(current.status) || current.updatedAt > cutoff) return undefined;
      const next: RunRecord = Object.freeze({
        ...current,
        status: 'failed',
        error: storedCopy(storablePatch({ error }).error ?? null),
        updatedAt: now().toISOString(),
      });
      runs.set(runId, next);
      return next;
    },
    async listStaleRuns(olderThanSeconds) {
      guard();
      const cutoff = new Date(now().getTime() - olderThanSeconds * 1000).toISOString();
      return [...runs.values()].filter((run) => isRunOpen(run.status) && run.updatedAt <= cutoff);
    },
    async deleteEndedRuns(olderThanSeconds, limit) {
      guard();
      const bounds = retentionArguments(olderThanSeconds, limit);
      const cutoff = new Date(now().getTime() - bounds.olderThanSeconds * 1000).toISOString();
      const ended = [...runs.values()]
        .filter((run) => !isRunOpen(run.status) && run.createdAt <= cutoff && run.updatedAt <= cutoff)
        .sort((a, b) => newestRunFirst(b, a))
        .slice(0, bounds.limit);
      for (const run of ended) {
        runs.delete(run.runId);
        events.delete(run.runId);
      }
      return ended.length;
    },
    async conversationGeneration(memoryId) {
      guard();
      return generations.get(memoryId) ?? 0;
    },
    async forgetConversation(memoryId) {
      guard();
      conversations.delete(memoryId);
      for (const [runId, run] of runs) {
        if (memoryIdOf(run.scope) !== memoryId) continue;
        runs.delete(runId);
        events.delete(runId);
      }
      generations.set(memoryId, newScopeGeneration());
    },
    async dispose() {
      storeGuard.dispose();
    },
  };
}

/**
 * `value` as a SQL store gives it back (the JSON round trip: a Date becomes its ISO text, NaN
 * and Infinity null, an undefined key is dropped), deep-frozen: nothing the store keeps or
 * answers is shared with a caller, who could otherwise change a stored run or event by
 * changing an object it passed in or got back.
 */
function storedCopy<T>(value: T): T {
  return deepFreeze(JSON.parse(JSON.stringify(value)) as T);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}

/**
 * The newest messages that fit the budget, oldest first, never starting with a tool result
 * whose call was cut off (a model rejects an orphaned tool message).
 */
export function takeRecent(
  all: readonly ConversationMessage[],
  maxTokens: number,
  clipAt: number = Number.POSITIVE_INFINITY,
): ConversationMessage[] {
  let start = all.length;
  let used = 0;
  while (start > 0) {
    const tokens = Math.min((all[start - 1] as ConversationMessage).tokenCount, clipAt);
    if (used + tokens > maxTokens) break;
    used += tokens;
    start--;
  }
  while (start < all.length && all[start]?.role === 'tool') start++;
  return all.slice(start);
}

/** Whether `run` belongs to the query's tenant, matches its filters and comes after its `before`. */
function matchesRunQuery(run: RunRecord, query: RunListQuery): boolean {
  if (run.scope.tenantId !== query.tenantId) return false;
  if (query.conversationId !== undefined && run.scope.conversationId !== query.conversationId) return false;
  if (query.agentId !== undefined && run.scope.agentId !== query.agentId) return false;
  if (query.status !== undefined && run.status !== query.status) return false;
  const before = query.before;
  return before === undefined || newestRunFirst(run, before) > 0;
}

/** Newest first: by creation time, then by run id, both descending. */
function newestRunFirst(
  a: { readonly createdAt: string; readonly runId: string },
  b: { readonly createdAt: string; readonly runId: string },
): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? 1 : -1;
  return a.runId === b.runId ? 0 : a.runId < b.runId ? 1 : -1;
}
