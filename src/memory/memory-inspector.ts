/**
 * The listing and correction side of observational memory: a tenant's scopes, a scope's
 * observations (each with why the next snippet shows it or not), its operation log, search,
 * hand corrections, and the progress toward the next observe and reflection.
 * @module
 */
import { shownValue } from '../core/require-option.js';
import { HarnessMemoryError } from '../core/errors.js';
import type { IdGenerator } from '../core/ids.js';
import type { MemoryStatus } from '../core/memory-status.js';
import type { MemoryRecord, Observation } from '../core/observation.js';
import { planObservationSnippet, scoreObservation } from '../core/observation-snippet.js';
import type { ObservationSnippetPlan } from '../core/observation-snippet.js';
import { activeReflectionLinks } from '../core/reflection-links.js';
import { redactSecrets } from '../core/redact-secrets.js';
import { stripInvisible } from '../core/sanitize-text.js';
import { isScopeId, memoryIdOf, validateScopeId } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import type { MemoryStore, ObservationChange, Operation, OperationStatus } from '../storage/store.js';
import { progressOf } from './memory-progress.js';
import { firstAfterSeq } from '../core/first-after-seq.js';
import type {
  ListedScope,
  MemoryProgress,
  ObservationView,
  Page,
  PageRequest,
  ScopeListRequest,
} from './observational-memory-api.js';
import type { KeyedLock } from './scope-lock.js';
import type { ScopeReader } from './scope-reader.js';
import { recordStateKey, SnippetCache } from './snippet-cache.js';
import { repeatedSeqsOf } from '../core/repeated-observations.js';

/** Pages hold 50 items unless asked otherwise. */
export const DEFAULT_PAGE_SIZE = 50;
/** The largest page any listing returns. */
export const MAX_PAGE_SIZE = 200;
/** The most words a search holds. */
export const MAX_SEARCH_WORDS = 8;
/** The longest corrected observation, in UTF-16 code units (as for an import). */
export const MAX_CORRECTED_OBSERVATION_LENGTH = 16_384;

const OPERATION_STATUSES: readonly string[] = ['queued', 'processing', 'applied', 'failed', 'dead'];

/** What the inspector needs of its service. */
export interface MemoryInspectorDependencies {
  readonly store: MemoryStore;
  readonly reader: ScopeReader;
  readonly estimator: TokenEstimator;
  readonly defaultEnabled: boolean;
  readonly mode: 'off' | 'local_coordinator';
  readonly redact: boolean;
  readonly locks: KeyedLock;
  readonly generateId: IdGenerator;
  readonly currentStatus: (scope: Scope, record?: MemoryRecord) => Promise<MemoryStatus>;
}

/** The inspector's methods, which the service exposes as its own (see `ObservationalMemory`). */
export interface MemoryInspector {
  listScopes(tenantId: string, request?: ScopeListRequest): Promise<Page<ListedScope>>;
  observationPage(scope: Scope, request?: PageRequest & { readonly query?: string }): Promise<Page<ObservationView>>;
  /**
   * Observations holding every word of `query`, newest and most important first, in pages. The
   * first page fixes a snapshot (the scope's newest seq then), and the rest follow it: paging
   * on with `nextCursor` returns every match of the snapshot still stored, each once, while
   * observations are deleted, corrected or added meanwhile. Observations added after the first
   * page are not mixed in (a new search shows them). One whose importance is corrected while
   * paging moves in the order, so it may come again or be passed.
   */
  searchObservations(scope: Scope, request: PageRequest & { readonly query: string }): Promise<Page<ObservationView>>;
  operationPage(scope: Scope, request?: PageRequest & { readonly status?: string }): Promise<Page<Operation>>;
  /**
   * Replaces observation `seq`'s text and, when given, its importance. With `content` left out
   * the stored text stays (the store keeps it in its own transaction) and `importance` (then
   * required) alone changes; the reflection and the supersessions naming it stay.
   */
  correctObservation(
    scope: Scope,
    seq: number,
    change: { readonly content?: string; readonly importance?: number | null },
    meta?: { runId?: string; toolCallId?: string },
  ): Promise<{ observation: ObservationView; status: MemoryStatus }>;
  deleteObservation(
    scope: Scope,
    seq: number,
    meta?: { runId?: string; toolCallId?: string },
  ): Promise<{ seq: number; status: MemoryStatus }>;
  progress(scope: Scope): Promise<MemoryProgress>;
}

/** The inspector over a service's store and reader. */
export function createMemoryInspector(dependencies: MemoryInspectorDependencies): MemoryInspector {
  return new ScopeInspector(dependencies);
}

/** {@link MemoryInspector} over one service's store, reader and clock of ids. */
class ScopeInspector implements MemoryInspector {
  readonly #dependencies: MemoryInspectorDependencies;
  readonly #plans = new SnippetCache<ObservationSnippetPlan, string>(1024, {
    // The text and, roughly, the sets of seqs beside it.
    sizeOf: (plan) => plan.text.length + 8 * (plan.includedSeqs.size + plan.supersededBy.size),
    maxSize: 8_000_000,
  });

  constructor(dependencies: MemoryInspectorDependencies) {
    this.#dependencies = dependencies;
  }

  /** The scope's observations and the plan of its next snippet, cached per state version. */
  async #selectionOf(memoryId: string, record: MemoryRecord) {
    const dependencies = this.#dependencies;
    const { reader, estimator } = dependencies;
    const plans = this.#plans;
    const observations = await reader.observationCache.get(memoryId, record);
    const { enabled, config } = reader.effective(record);
    let plan = plans.get(memoryId, recordStateKey(record));
    if (!plan) {
      const links = activeReflectionLinks(await reader.linksOf(memoryId, record), observations);
      plan = planObservationSnippet({
        observations,
        reflection: record.reflection,
        links,
        maxTokens: config.snippetMaxTokens,
        estimator,
      });
      plans.set(memoryId, recordStateKey(record), plan);
    }
    const shown = enabled && dependencies.mode !== 'off';
    const repeated = repeatedSeqsOf(observations);
    const view = (observation: Observation): ObservationView => {
      const position = firstAfterSeq(observations, observation.seq - 1);
      const ageSteps = Math.max(0, observations.length - 1 - position);
      const replacedBy = plan.supersededBy.get(observation.seq) ?? null;
      const included = shown && plan.includedSeqs.has(observation.seq);
      return Object.freeze({
        ...observation,
        ageSteps,
        score: scoreObservation(observation.importance, ageSteps, replacedBy !== null),
        included,
        notShownBecause: included
          ? null
          : !shown
            ? 'memory_off'
            : repeated.has(observation.seq)
              ? 'repeated'
              : replacedBy !== null
                ? 'superseded'
                : 'budget',
        supersededBy: replacedBy,
      });
    };
    return { observations, view };
  }

  /** Applies `change` under the scope's lock; throws `OBSERVATION_NOT_FOUND` when there is no such observation. */
  async #correct(scope: Scope, seq: number, change: ObservationChange, meta: { runId?: string; toolCallId?: string }) {
    const dependencies = this.#dependencies;
    const { store } = dependencies;
    const memoryId = memoryIdOf(scope);
    const result = await dependencies.locks.run(memoryId, () =>
      store.correctObservation({
        scope,
        memoryId,
        seq,
        change,
        runId: meta.runId ?? 'unknown',
        toolCallId: meta.toolCallId ?? 'system',
        operationId: dependencies.generateId('op'),
      }),
    );
    if (!result) throw notFound(seq);
    return result;
  }

  async listScopes(tenantId: string, request: ScopeListRequest = {}): Promise<Page<ListedScope>> {
    const { store } = this.#dependencies;
    const dependencies = this.#dependencies;
    const tenant = validateScopeId('tenant_id', tenantId);
    const limit = pageSize(request.limit);
    const after = request.cursor === undefined ? undefined : decodeScopeCursor(request.cursor);
    const words = wordsOf(request.query);
    const found = await store.listScopes({
      tenantId: tenant,
      limit: limit + 1,
      ...(after ? { after } : {}),
      ...(words.length > 0 ? { words } : {}),
      ...(request.enabled === undefined
        ? {}
        : { enabled: { value: request.enabled, whenUnset: dependencies.defaultEnabled } }),
    });
    const items = found.slice(0, limit).map((summary): ListedScope =>
      Object.freeze({
        ...summary,
        enabled: dependencies.mode !== 'off' && (summary.enabled ?? dependencies.defaultEnabled),
      }),
    );
    const last = items.at(-1);
    return {
      items,
      nextCursor:
        found.length > limit && last ? encodeCursor({ c: last.scope.conversationId, a: last.scope.agentId }) : null,
    };
  }

  async observationPage(
    scope: Scope,
    request: PageRequest & { readonly query?: string } = {},
  ): Promise<Page<ObservationView>> {
    const { store } = this.#dependencies;
    const memoryId = memoryIdOf(scope);
    const limit = pageSize(request.limit);
    const beforeSeq = request.cursor === undefined ? undefined : decodeNumberCursor(request.cursor, 's');
    const words = wordsOf(request.query);
    const record = await store.getRecord(memoryId);
    if (!record) return { items: [], nextCursor: null };
    const [page, selection] = await Promise.all([
      store.findObservations(memoryId, {
        limit: limit + 1,
        ...(beforeSeq === undefined ? {} : { beforeSeq }),
        ...(words.length > 0 ? { words } : {}),
      }),
      this.#selectionOf(memoryId, record),
    ]);
    const items = page.slice(0, limit).map(selection.view);
    const last = items.at(-1);
    return { items, nextCursor: page.length > limit && last ? encodeCursor({ s: last.seq }) : null };
  }

  async searchObservations(
    scope: Scope,
    request: PageRequest & { readonly query: string },
  ): Promise<Page<ObservationView>> {
    const { store } = this.#dependencies;
    const memoryId = memoryIdOf(scope);
    const limit = pageSize(request.limit);
    const after = request.cursor === undefined ? undefined : decodeSearchCursor(request.cursor);
    const words = wordsOf(request.query);
    if (words.length === 0) throw invalidRequest('query', 'query must hold at least one word');
    const record = await store.getRecord(memoryId);
    if (!record || record.observationCount === 0) return { items: [], nextCursor: null };
    const [found, selection] = await Promise.all([
      store.findObservations(memoryId, {
        limit: record.observationCount,
        words,
        ...(after ? { beforeSeq: after.snapshotSeq + 1 } : {}),
      }),
      this.#selectionOf(memoryId, record),
    ]);
    const snapshotSeq = after?.snapshotSeq ?? selection.observations.at(-1)?.seq ?? 0;
    // Each rank depends on the observation alone and the snapshot, never on what was deleted,
    // added or (un)superseded since: a page resumes exactly where the last one ended.
    const ranked = found
      .filter((observation) => observation.seq <= snapshotSeq)
      .map((observation) => ({ observation, rank: searchRank(observation, snapshotSeq) }))
      .filter(({ observation, rank }) => after === undefined || isRankedAfter(rank, observation.seq, after))
      .sort((a, b) => b.rank - a.rank || b.observation.seq - a.observation.seq);
    const shown = ranked.slice(0, limit);
    const last = shown.at(-1);
    return {
      items: shown.map(({ observation }) => selection.view(observation)),
      nextCursor:
        ranked.length > limit && last ? encodeCursor({ h: snapshotSeq, r: last.rank, l: last.observation.seq }) : null,
    };
  }

  async operationPage(
    scope: Scope,
    request: PageRequest & { readonly status?: string } = {},
  ): Promise<Page<Operation>> {
    const { store } = this.#dependencies;
    const limit = pageSize(request.limit);
    const beforeSequence = request.cursor === undefined ? undefined : decodeNumberCursor(request.cursor, 'q');
    const status = request.status;
    if (status !== undefined && !OPERATION_STATUSES.includes(status))
      throw invalidRequest(
        'status',
        `status must be one of ${OPERATION_STATUSES.join(', ')}, got ${JSON.stringify(status)}`,
      );
    const page = await store.listOperationPage(memoryIdOf(scope), {
      limit: limit + 1,
      ...(beforeSequence === undefined ? {} : { beforeSequence }),
      ...(status === undefined ? {} : { status: status as OperationStatus }),
    });
    const items = page.slice(0, limit);
    const last = items.at(-1);
    return { items, nextCursor: page.length > limit && last ? encodeCursor({ q: last.scopeSequence }) : null };
  }

  async correctObservation(
    scope: Scope,
    seq: number,
    change: { readonly content?: string; readonly importance?: number | null },
    meta: { runId?: string; toolCallId?: string } = {},
  ): Promise<{ observation: ObservationView; status: MemoryStatus }> {
    const dependencies = this.#dependencies;
    checkSeq(seq);
    const result = await this.#correct(scope, seq, plannedReplacement(dependencies, change), meta);
    const selection = await this.#selectionOf(memoryIdOf(scope), result.record);
    return {
      observation: selection.view(result.observation as Observation),
      status: await dependencies.currentStatus(scope, result.record),
    };
  }

  async deleteObservation(
    scope: Scope,
    seq: number,
    meta: { runId?: string; toolCallId?: string } = {},
  ): Promise<{ seq: number; status: MemoryStatus }> {
    const dependencies = this.#dependencies;
    checkSeq(seq);
    const result = await this.#correct(scope, seq, { kind: 'delete' }, meta);
    return { seq, status: await dependencies.currentStatus(scope, result.record) };
  }

  async progress(scope: Scope): Promise<MemoryProgress> {
    const { store, reader, estimator } = this.#dependencies;
    const memoryId = memoryIdOf(scope);
    const record = await store.getRecord(memoryId);
    const { config } = reader.effective(record);
    const [operations, snippet] = record
      ? await Promise.all([
          store.listOperationPage(memoryId, { status: 'processing', limit: 10 }),
          reader.snippetOf(memoryId, record),
        ])
      : [[], ''];
    return progressOf({ record, config, operations, snippet, estimator });
  }
}

/**
 * The replacement `change` asks for, checked. Without `content` the store keeps the text it holds
 * when its transaction runs, so a text corrected meanwhile by another process is not put back.
 */
function plannedReplacement(
  dependencies: MemoryInspectorDependencies,
  change: { readonly content?: string; readonly importance?: number | null },
): ObservationChange {
  if (change.content === undefined) {
    const importance = checkImportance(change.importance);
    if (importance === undefined)
      throw invalidObservation('content', 'content is required to replace an observation unless importance is given');
    return { kind: 'replace', importance };
  }
  const content = cleanContent(change.content, dependencies.redact);
  const importance = checkImportance(change.importance);
  return {
    kind: 'replace',
    content,
    tokenCount: dependencies.estimator.estimate(content),
    ...(importance === undefined ? {} : { importance }),
  };
}

/** `limit` checked: 1 to {@link MAX_PAGE_SIZE}, {@link DEFAULT_PAGE_SIZE} when unset. */
export function pageSize(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_PAGE_SIZE;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE)
    throw invalidRequest('limit', `limit must be an integer from 1 to ${MAX_PAGE_SIZE}, got ${JSON.stringify(limit)}`);
  return limit;
}

function wordsOf(query: string | undefined): string[] {
  if (query === undefined) return [];
  if (typeof query !== 'string') throw invalidRequest('query', 'query must be a string');
  if (query.length > 500) throw invalidRequest('query', 'query is longer than 500 characters');
  const words = stripInvisible(query)
    .split(/\s+/u)
    .filter((word) => word !== '');
  if (words.length > MAX_SEARCH_WORDS)
    throw invalidRequest('query', `query holds ${words.length} words; at most ${MAX_SEARCH_WORDS} are searched`);
  return words;
}

function encodeCursor(value: Record<string, string | number>): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): Record<string, unknown> {
  if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > 2048 || !/^[\w-]+$/.test(cursor))
    throw invalidRequest('cursor', 'cursor is not one this API returned');
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Reported below, as any other cursor this API did not return.
  }
  throw invalidRequest('cursor', 'cursor is not one this API returned');
}

function decodeNumberCursor(cursor: string, key: string): number {
  const value = decodeCursor(cursor)[key];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    throw invalidRequest('cursor', 'cursor is not one this API returned for this list');
  return value;
}

function decodeScopeCursor(cursor: string): { conversationId: string; agentId: string } {
  const value = decodeCursor(cursor);
  const conversationId = value['c'];
  const agentId = value['a'];
  // Only what a listing wrote: scope ids (a stray U+0000 would fail a Postgres read).
  if (
    typeof conversationId !== 'string' ||
    typeof agentId !== 'string' ||
    !isScopeId(conversationId) ||
    !isScopeId(agentId)
  )
    throw invalidRequest('cursor', 'cursor is not one this API returned for this list');
  return { conversationId, agentId };
}

/** Where a search page resumes: its snapshot, and the rank and seq of the last item shown. */
interface SearchCursor {
  readonly snapshotSeq: number;
  readonly rank: number;
  readonly seq: number;
}

/**
 * A search's order: importance (0.5 when unscored) over one plus the seqs between the
 * observation and the snapshot's newest, the snippet's score without its supersession penalty.
 * It equals the snippet's score when no observation was deleted and none is superseded.
 */
function searchRank(observation: Observation, snapshotSeq: number): number {
  return scoreObservation(observation.importance, snapshotSeq - observation.seq, false);
}

/** Whether `(rank, seq)` comes after the cursor's item in the search order (rank, then seq, descending). */
function isRankedAfter(rank: number, seq: number, after: SearchCursor): boolean {
  return rank < after.rank || (rank === after.rank && seq < after.seq);
}

function decodeSearchCursor(cursor: string): SearchCursor {
  const value = decodeCursor(cursor);
  const snapshotSeq = value['h'];
  const rank = value['r'];
  const seq = value['l'];
  if (
    typeof snapshotSeq !== 'number' ||
    typeof rank !== 'number' ||
    typeof seq !== 'number' ||
    !Number.isSafeInteger(snapshotSeq) ||
    !Number.isSafeInteger(seq) ||
    seq < 1 ||
    seq > snapshotSeq ||
    !(rank >= 0 && rank <= 1)
  )
    throw invalidRequest('cursor', 'cursor is not one this API returned for this list');
  return { snapshotSeq, rank, seq };
}

function checkSeq(seq: number): void {
  if (!Number.isSafeInteger(seq) || seq < 1)
    throw invalidObservation('seq', `seq must be a positive integer, got ${JSON.stringify(seq)}`);
}

function cleanContent(content: unknown, redact: boolean): string {
  if (typeof content !== 'string') throw invalidObservation('content', 'content must be a string');
  if (content.length > MAX_CORRECTED_OBSERVATION_LENGTH)
    throw invalidObservation('content', `content is longer than ${MAX_CORRECTED_OBSERVATION_LENGTH} characters`);
  const cleaned = stripInvisible(content).trim();
  if (cleaned === '') throw invalidObservation('content', 'content is empty');
  return redact ? redactSecrets(cleaned).text : cleaned;
}

function checkImportance(importance: unknown): number | null | undefined {
  if (importance === undefined || importance === null) return importance;
  if (typeof importance !== 'number' || !(importance >= 0 && importance <= 1))
    throw invalidObservation(
      'importance',
      `importance must be a number from 0 to 1 or null, got ${shownValue(importance)}`,
    );
  return importance;
}

function invalidRequest(field: string, problem: string): HarnessMemoryError {
  return new HarnessMemoryError({
    code: 'REQUEST_INVALID',
    component: 'memory',
    message: `${problem}.`,
    data: { field },
  });
}

function invalidObservation(field: string, problem: string): HarnessMemoryError {
  return new HarnessMemoryError({
    code: 'OBSERVATION_INVALID',
    component: 'memory',
    message: `${problem}.`,
    data: { field },
  });
}

function notFound(seq: number): HarnessMemoryError {
  return new HarnessMemoryError({
    code: 'OBSERVATION_NOT_FOUND',
    component: 'memory',
    message: `The scope has no observation ${seq}.`,
    data: { seq },
  });
}
