/**
 * The read side of observational memory: a scope's effective settings, its status, its
 * supersession set and its snippet, each built from a record already read and served from
 * in-process caches keyed by what identifies the state (the record's life and `stateVersion`,
 * the set's counts and the correction count). Never writes.
 * @module
 */
import { statusOf } from '../core/memory-status.js';
import type { MemoryStatus } from '../core/memory-status.js';
import type { MemoryRecord, Observation, ObservationConfig } from '../core/observation.js';
import { buildObservationSnippet } from '../core/observation-snippet.js';
import { firstAfterSeq } from '../core/first-after-seq.js';
import { activeReflectionLinks, EMPTY_REFLECTION_LINKS } from '../core/reflection-links.js';
import type { ReflectionLinks } from '../core/reflection-links.js';
import { memoryIdOf } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import { isOpenOperation } from '../storage/store.js';
import type { MemoryStore, Operation } from '../storage/store.js';
import type { InspectOptions, MemoryInspection } from './observational-memory-api.js';
import { ObservationCache } from './observation-cache.js';
import { progressOf } from './memory-progress.js';
import { recordStateKey, SnippetCache } from './snippet-cache.js';
import { SnippetMemo } from './snippet-memo.js';
import { effectiveConfig } from './memory-settings.js';

/** Options of {@link createScopeReader}. */
export interface ScopeReaderOptions {
  readonly store: MemoryStore;
  /** The service's resolved mode. */
  readonly mode: 'off' | 'local_coordinator';
  /** Thresholds of scopes without overrides. */
  readonly defaults: ObservationConfig;
  /** Whether scopes never enabled or disabled explicitly observe. */
  readonly defaultEnabled: boolean;
  readonly estimator: TokenEstimator;
}

/** Whether a scope observes, and its thresholds. */
export interface EffectiveSettings {
  readonly enabled: boolean;
  readonly config: ObservationConfig;
}

/** The read side of one service. */
export interface ScopeReader {
  /** The scope's cached observations (incrementally kept). */
  readonly observationCache: ObservationCache;
  /** A record's settings with the service's defaults filled in. */
  effective(record: Pick<MemoryRecord, 'enabled' | 'config'> | undefined): EffectiveSettings;
  /**
   * The scope's whole supersession set, cached by its counts and the record's `correctionCount`
   * (the set grows with reflections, and loses links only to a correction, until forget).
   */
  linksOf(memoryId: string, record: MemoryRecord): Promise<ReflectionLinks>;
  /** The status of a scope whose record (or its absence) was just read. */
  statusFrom(scope: Scope, record: MemoryRecord | undefined): Promise<MemoryStatus>;
  /** The status, reading the record unless given. */
  currentStatus(scope: Scope, record?: MemoryRecord): Promise<MemoryStatus>;
  /** The snippet from a record already read (and, when at hand, its observations and links); `""` when disabled. */
  snippetOf(
    memoryId: string,
    record: MemoryRecord | undefined,
    observations?: readonly Observation[],
    links?: ReflectionLinks,
  ): Promise<string>;
  /**
   * The scope's snippet as of now: reads the record, and for a scope where another writer's
   * observations were met, the observations after those held beside it (one round trip on a
   * networked store instead of two in a row).
   */
  currentSnippet(memoryId: string): Promise<string>;
  /** Whether observe would store anything for the scope now (mode not off, scope enabled); one read. */
  isEnabled(memoryId: string): Promise<boolean>;
  /** Everything stored for a scope, read once, with the snippet the next turn gets. */
  inspect(scope: Scope, options?: InspectOptions): Promise<MemoryInspection>;
  /** Drops everything cached for a scope (after forget). */
  forget(memoryId: string): void;
}

// Scopes remembered as written elsewhere; past it the set starts over (one read pair each to learn again).
const MAX_SCOPES_WRITTEN_ELSEWHERE = 1024;

/** The reader over `options.store`. */
export function createScopeReader(options: ScopeReaderOptions): ScopeReader {
  const { store, mode, defaults, defaultEnabled, estimator } = options;
  // Snippets are at most MAX_SNIPPET_MAX_TOKENS each; 8 M characters hold a thousand of the
  // default size, and a few hundred large ones.
  const snippetCache = new SnippetCache<string, string>(1024, { sizeOf: (text) => text.length, maxSize: 8_000_000 });
  const builtSnippets = new SnippetMemo();
  const observationCache = new ObservationCache(store);
  // Reflections only add to the set and corrections only take from it (until forget makes a new
  // record), so its counts and the correction count identify it.
  const linksCache = new SnippetCache<ReflectionLinks, string>();

  // Scopes where the record showed observations this process's cache had not been given: some
  // other process, replica or service writes them, so the next read lists them beside the record.
  const othersWrite = new Set<string>();
  const noteOtherWriters = (memoryId: string, record: MemoryRecord | undefined): void => {
    const held = observationCache.heldThrough(memoryId);
    if (record === undefined || held === undefined || record.lastObservationSeq <= held) return;
    if (othersWrite.size >= MAX_SCOPES_WRITTEN_ELSEWHERE) othersWrite.clear();
    othersWrite.add(memoryId);
  };

  const effective: ScopeReader['effective'] = (record) => ({
    enabled: record?.enabled ?? defaultEnabled,
    config: effectiveConfig(defaults, record?.config),
  });

  const linksOf: ScopeReader['linksOf'] = async (memoryId, record) => {
    if (record.supersessionCount === 0 && record.contradictionCount === 0) return EMPTY_REFLECTION_LINKS;
    const { createdAt, supersessionCount, contradictionCount, correctionCount } = record;
    const version = `${createdAt}|${supersessionCount}|${contradictionCount}|${correctionCount}`;
    const cached = linksCache.get(memoryId, version);
    if (cached) return cached;
    const links = await store.listReflectionLinks(memoryId);
    linksCache.set(memoryId, version, links);
    return links;
  };

  const statusFrom: ScopeReader['statusFrom'] = async (scope, found) => {
    const memoryId = memoryIdOf(scope);
    const { enabled, config } = effective(found);
    const [pendingOperations, deadOperations, links] = found
      ? await Promise.all([
          store.countPendingOperations(memoryId),
          store.countDeadOperations(memoryId),
          linksOf(memoryId, found),
        ])
      : [0, 0, EMPTY_REFLECTION_LINKS];
    // Links naming an observation deleted since are not counted: their observations tell.
    const observations =
      found && links !== EMPTY_REFLECTION_LINKS ? await observationCache.get(memoryId, found) : undefined;
    return statusOf({
      mode,
      memoryId,
      scope,
      record: found,
      enabled: mode !== 'off' && enabled,
      config,
      pendingOperations,
      deadOperations,
      activeLinks: activeReflectionLinks(links, observations),
    });
  };

  const reader: ScopeReader = {
    observationCache,
    effective,
    linksOf,
    statusFrom,
    async currentStatus(scope, record) {
      return statusFrom(scope, record ?? (await store.getRecord(memoryIdOf(scope))));
    },
    async snippetOf(memoryId, record, observations, links) {
      if (!record) return '';
      const { enabled, config } = effective(record);
      if (!enabled) return '';
      const stateKey = recordStateKey(record);
      const cached = snippetCache.get(memoryId, stateKey);
      if (cached !== undefined) return cached;
      const [listed, linked] = await Promise.all([
        observations ?? observationCache.get(memoryId, record),
        links ?? linksOf(memoryId, record),
      ]);
      const inputs = {
        observations: listed,
        links: linked,
        reflection: record.reflection,
        maxTokens: config.snippetMaxTokens,
      };
      // A new state that changed nothing the snippet shows (a turn's messages appended).
      let text = builtSnippets.find(memoryId, inputs);
      if (text === undefined) {
        text = buildObservationSnippet({ ...inputs, links: activeReflectionLinks(linked, listed), estimator });
        builtSnippets.hold(memoryId, inputs, text);
      }
      snippetCache.set(memoryId, stateKey, text);
      return text;
    },
    async currentSnippet(memoryId) {
      const afterSeq = othersWrite.has(memoryId) ? observationCache.heldThrough(memoryId) : undefined;
      if (afterSeq === undefined) {
        const record = await store.getRecord(memoryId);
        noteOtherWriters(memoryId, record);
        return reader.snippetOf(memoryId, record);
      }
      const [record, page] = await Promise.all([
        store.getRecord(memoryId),
        store.listObservations(memoryId, { afterSeq }),
      ]);
      if (record) observationCache.offer(memoryId, record, afterSeq, page);
      // Read for nothing: this scope's writers may have stopped (the next miss starts again).
      if (page.length === 0) othersWrite.delete(memoryId);
      return reader.snippetOf(memoryId, record);
    },
    async isEnabled(memoryId) {
      if (mode === 'off') return false;
      return effective(await store.getRecord(memoryId)).enabled;
    },
    inspect: (scope, inspectOptions = {}) => inspectScope(reader, options, scope, inspectOptions),
    forget(memoryId) {
      othersWrite.delete(memoryId);
      snippetCache.delete(memoryId);
      builtSnippets.delete(memoryId);
      observationCache.delete(memoryId);
      linksCache.delete(memoryId);
    },
  };
  return reader;
}

/** Everything stored for a scope, read once, with the snippet and the progress the next turn gets. */
async function inspectScope(
  reader: ScopeReader,
  options: ScopeReaderOptions,
  scope: Scope,
  inspectOptions: InspectOptions,
): Promise<MemoryInspection> {
  const { store, mode, estimator } = options;
  const { effective, statusFrom, linksOf } = reader;
  const memoryId = memoryIdOf(scope);
  const record = await store.getRecord(memoryId);
  if (!record) {
    return {
      progress: progressOf({
        record,
        config: effective(record).config,
        operations: [],
        snippet: '',
        estimator,
      }),
      status: await statusFrom(scope, undefined),
      observations: [],
      reflection: null,
      links: EMPTY_REFLECTION_LINKS,
      operations: [],
      snippet: '',
    };
  }
  const [status, held, links, operations] = await Promise.all([
    statusFrom(scope, record),
    // The cache brings its copy up to date with the new rows only: a scope polled by the
    // inspector is not read whole every time.
    reader.observationCache.get(memoryId, record),
    linksOf(memoryId, record),
    inspectOptions.operations === 'open' ? openOperationsOf(store, memoryId) : store.listOperations(memoryId),
  ]);
  // A copy, and only what the record read first counts: the cache's own array grows with
  // every apply, also while the reads above and the snippet below are awaited, and the
  // status, the list and the snippet must tell of one state.
  const observations = held.slice(0, firstAfterSeq(held, record.lastObservationSeq));
  const snippet = mode === 'off' ? '' : await reader.snippetOf(memoryId, record, observations, links);
  return {
    progress: progressOf({ record, config: effective(record).config, operations, snippet, estimator }),
    status,
    observations,
    reflection: record.reflection ?? null,
    links: activeReflectionLinks(links, observations),
    operations,
    snippet,
  };
}

/** The scope's open operations, filtered here from the whole log where the store cannot read them alone. */
async function openOperationsOf(store: MemoryStore, memoryId: string): Promise<Operation[]> {
  if (store.listOpenOperations) return store.listOpenOperations(memoryId);
  return (await store.listOperations(memoryId)).filter(isOpenOperation);
}
