/**
 * Working memory: key/value entries the agent manages explicitly, all injected into every
 * turn, so every size is bounded.
 * @module
 */
import { redactValue } from '../core/redact-value.js';
import { requireObject, requireOptions } from '../core/require-option.js';
import type { ScopeInput } from '../core/scope.js';
import {
  DEFAULT_WORKING_MEMORY_LIMITS,
  buildWorkingMemorySnippet,
  encodeWorkingMemoryValue,
  normalizeWorkingMemoryKey,
} from '../core/working-memory.js';
import type { WorkingMemoryLimitsConfig } from '../core/working-memory.js';
import type { MemoryStore, WorkingMemoryEntry } from '../storage/store.js';
import { ConfigError } from '../core/errors.js';
import { ScopeTargetCache } from './scope-target-cache.js';
import { SnippetCache } from './snippet-cache.js';

/** Options of {@link createWorkingMemory}. */
export interface WorkingMemoryOptions {
  store: MemoryStore;
  /** @default 8 KiB per value, 100 entries and 32 KiB per scope */
  limits?: Partial<WorkingMemoryLimitsConfig>;
  /** Redact secrets inside string values before storing. @default true */
  redactSecrets?: boolean;
}

/** The answer of `get`: `value` is the JSON-encoded value, or `""` when not found. */
export interface WorkingMemoryGetResult {
  readonly key: string;
  readonly value: string;
  readonly found: boolean;
}

/** The working memory service. */
export interface WorkingMemory {
  readonly limits: WorkingMemoryLimitsConfig;
  /** Stores `value` as JSON under the trimmed key. */
  set(scope: ScopeInput, key: string, value: unknown): Promise<{ ok: true; key: string; entry: WorkingMemoryEntry }>;
  get(scope: ScopeInput, key: string): Promise<WorkingMemoryGetResult>;
  /** Removing a missing key is not an error; `deleted` says whether one existed. */
  delete(scope: ScopeInput, key: string): Promise<{ ok: true; key: string; deleted: boolean }>;
  /** Every entry as `{key: jsonString}`, sorted by key. */
  list(scope: ScopeInput): Promise<{ entries: Record<string, string> }>;
  /** Every entry with its timestamps, sorted by key. */
  entries(scope: ScopeInput): Promise<WorkingMemoryEntry[]>;
  /** The `<working-memory>` snippet, or `""` when the scope has no entries. */
  snippet(scope: ScopeInput): Promise<string>;
}

/**
 * Creates the working memory service.
 * @example
 * ```ts
 * import { createInMemoryStore, createWorkingMemory } from 'harness-memory';
 *
 * const workingMemory = createWorkingMemory({ store: createInMemoryStore() });
 * await workingMemory.set({ conversationId: 'c1' }, 'plan', { step: 1 });
 * ```
 */
export function createWorkingMemory(options: WorkingMemoryOptions): WorkingMemory {
  requireOptions('createWorkingMemory', options, 'Pass { store }.');
  requireObject(
    'createWorkingMemory',
    'store',
    options.store,
    ['setWorkingMemoryEntry', 'getWorkingMemoryEntry', 'deleteWorkingMemoryEntry', 'listWorkingMemoryEntries'],
    'Pass a MemoryStore, such as createInMemoryStore() or createSqliteStore({ path }).',
  );
  const limits = Object.freeze({ ...DEFAULT_WORKING_MEMORY_LIMITS, ...options.limits });
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new ConfigError({
        key: name,
        source: 'createWorkingMemory.limits',
        message: `must be a positive integer, got ${JSON.stringify(value)}`,
      });
    }
  }
  const { store } = options;
  const redact = options.redactSecrets ?? true;
  // Rendered snippets of recently read scopes, by the store's working-memory version.
  const snippets = new SnippetCache();
  const targets = new ScopeTargetCache();
  const target = (scope: ScopeInput) => targets.resolve(scope);

  return {
    limits,
    async set(scopeInput, key, value) {
      const { scope, memoryId } = target(scopeInput);
      const normalized = normalizeWorkingMemoryKey(key);
      let valueJson = encodeWorkingMemoryValue(value, limits.maxValueBytes);
      // Validate first (cycles, depth, non-JSON), then redact the plain JSON copy, keys too.
      if (redact) {
        const plain: unknown = JSON.parse(valueJson);
        const redacted = redactValue(plain, { keys: true });
        if (redacted !== plain) valueJson = encodeWorkingMemoryValue(redacted, limits.maxValueBytes);
      }
      const entry = await store.setWorkingMemoryEntry({ scope, memoryId, key: normalized, valueJson, limits });
      return { ok: true, key: normalized, entry };
    },
    async get(scopeInput, key) {
      const { memoryId } = target(scopeInput);
      const normalized = normalizeWorkingMemoryKey(key);
      const entry = await store.getWorkingMemoryEntry(memoryId, normalized);
      return { key: normalized, value: entry?.valueJson ?? '', found: entry !== undefined };
    },
    async delete(scopeInput, key) {
      const { memoryId } = target(scopeInput);
      const normalized = normalizeWorkingMemoryKey(key);
      return { ok: true, key: normalized, deleted: await store.deleteWorkingMemoryEntry(memoryId, normalized) };
    },
    async list(scopeInput) {
      const entries: Record<string, string> = {};
      for (const entry of await store.listWorkingMemoryEntries(target(scopeInput).memoryId))
        entries[entry.key] = entry.valueJson;
      return { entries };
    },
    async entries(scopeInput) {
      return store.listWorkingMemoryEntries(target(scopeInput).memoryId);
    },
    async snippet(scopeInput) {
      const { memoryId } = target(scopeInput);
      if (!store.workingMemoryVersion) return buildWorkingMemorySnippet(await store.listWorkingMemoryEntries(memoryId));
      // The version is read before the entries: a write in between makes the next read's
      // version differ, so a snippet is never reused past a change.
      const version = await store.workingMemoryVersion(memoryId);
      const cached = snippets.get(memoryId, version);
      if (cached !== undefined) return cached;
      const text = buildWorkingMemorySnippet(await store.listWorkingMemoryEntries(memoryId));
      snippets.set(memoryId, version, text);
      return text;
    },
  };
}
