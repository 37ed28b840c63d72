/**
 * Working memory: key/value entries the agent manages explicitly, all injected into every
 * turn, so every size is bounded.
 * @module
 */
import { requireObject, requireOptions } from '../core/require-option.js';
import { compareUtf8 } from '../core/compare-utf8.js';
import type { Scope, ScopeInput } from '../core/scope.js';
import {
  DEFAULT_WORKING_MEMORY_LIMITS,
  MAX_WORKING_MEMORY_TTL_SECONDS,
  buildWorkingMemorySnippet,
  encodeWorkingMemoryValue,
  joinWorkingMemoryLines,
  checkNewWorkingMemoryKey,
  normalizeWorkingMemoryKey,
  redactWorkingMemoryValue,
  refuseSecretKey,
  stripInvisibleFromValueJson,
  utf8Length,
  workingMemoryLine,
} from '../core/working-memory.js';
import type { WorkingMemoryLimitsConfig } from '../core/working-memory.js';
import type { MemoryStore, WorkingMemoryEntry } from '../storage/store.js';
import { ConfigError, HarnessMemoryError } from '../core/errors.js';
import { ScopeTargetCache } from './scope-target-cache.js';
import { SnippetCache } from './snippet-cache.js';

/** Options of {@link createWorkingMemory}. */
export interface WorkingMemoryOptions {
  store: MemoryStore;
  /** @default 8 KiB per value, 100 entries and 32 KiB per scope */
  limits?: Partial<WorkingMemoryLimitsConfig>;
  /**
   * Redact secrets inside values before storing, a value labelled by its key included: an
   * object key (`{"password": "…"}`) or the entry's own (`set(scope, 'password', '…')`).
   * @default true
   */
  redactSecrets?: boolean;
  /**
   * Seconds an entry set without `ttlSeconds` lives, from 1 to {@link MAX_WORKING_MEMORY_TTL_SECONDS};
   * 0 means such entries never expire. @default 0
   */
  defaultTtlSeconds?: number;
  /**
   * The clock that tells when a held snippet's earliest entry expiry has passed (entries
   * themselves expire by the store's clock: give both the same one in tests). @default `() => new Date()`
   */
  now?: () => Date;
}

/** The answer of `get`: `value` is the JSON-encoded value, or `""` when not found. */
export interface WorkingMemoryGetResult {
  readonly key: string;
  readonly value: string;
  readonly found: boolean;
}

/**
 * What working memory tells its subscribers, after the write is stored: an entry set (never
 * its value: `bytes` is the size of its JSON) or deleted, in `scope`. `runId` is the run whose
 * tool made the change, when it was one; the agent runner puts those on the run's stream.
 */
export type WorkingMemoryEvent =
  | {
      readonly type: 'memory.working_memory.set';
      readonly scope: Scope;
      readonly key: string;
      readonly bytes: number;
      /** When the entry expires (ISO 8601 UTC), present only when it does. */
      readonly expiresAt?: string;
      readonly runId?: string;
    }
  | {
      readonly type: 'memory.working_memory.deleted';
      readonly scope: Scope;
      readonly key: string;
      readonly runId?: string;
    };

/** Options of one write: the run whose tool makes it, for its events. */
export interface WorkingMemoryWriteOptions {
  readonly runId?: string;
}

/** Options of a set: those of any write, and the entry's time to live. */
export interface WorkingMemorySetOptions extends WorkingMemoryWriteOptions {
  /**
   * Seconds the entry lives, an integer from 1 to {@link MAX_WORKING_MEMORY_TTL_SECONDS}: then
   * it is gone for every reader. Without it the service's `defaultTtlSeconds` applies (by
   * default none); either way the set replaces any expiry the entry had.
   */
  readonly ttlSeconds?: number;
}

/** The working memory service. */
export interface WorkingMemory {
  readonly limits: WorkingMemoryLimitsConfig;
  /** Stores `value` as JSON under the trimmed key, expiring after `options.ttlSeconds` when given. */
  set(
    scope: ScopeInput,
    key: string,
    value: unknown,
    options?: WorkingMemorySetOptions,
  ): Promise<{ ok: true; key: string; entry: WorkingMemoryEntry }>;
  get(scope: ScopeInput, key: string): Promise<WorkingMemoryGetResult>;
  /** Removing a missing key is not an error; `deleted` says whether one existed (only then an event). */
  delete(
    scope: ScopeInput,
    key: string,
    options?: WorkingMemoryWriteOptions,
  ): Promise<{ ok: true; key: string; deleted: boolean }>;
  /** Every entry as `{key: jsonString}`, sorted by key. */
  list(scope: ScopeInput): Promise<{ entries: Record<string, string> }>;
  /** Every entry with its timestamps, sorted by key. */
  entries(scope: ScopeInput): Promise<WorkingMemoryEntry[]>;
  /** The `<working-memory>` snippet, or `""` when the scope has no entries. */
  snippet(scope: ScopeInput): Promise<string>;
  /**
   * Calls `listener` after each set and each delete that removed an entry, in this process;
   * returns the unsubscribe function. A listener that throws is ignored.
   */
  subscribe(listener: (event: WorkingMemoryEvent) => void): () => void;
  /**
   * Present when the store has `purgeExpiredWorkingMemory` (SQLite, Postgres and in-memory do).
   * Deletes the stored rows of expired entries in every scope, at most `limit` (1 to 1,000) in
   * one short call, and resolves how many: without it an expired entry, gone for every reader,
   * keeps its row until its scope's next set or delete. Call it again while it returns `limit`;
   * the harness server does it at every maintenance sweep. No event is sent: readers see no
   * change.
   */
  purgeExpired?(options: { readonly limit: number }): Promise<number>;
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
  const defaultTtlSeconds = options.defaultTtlSeconds ?? 0;
  if (defaultTtlSeconds !== 0) checkTtlSeconds(defaultTtlSeconds, 'defaultTtlSeconds');
  const clock = options.now ?? (() => new Date());
  // Snippets of recently read scopes, by the store's working-memory version.
  const snippets = new SnippetCache<HeldSnippet>(1024, { sizeOf: sizeOfHeld, maxSize: 16_000_000 });
  const targets = new ScopeTargetCache();
  const target = (scope: ScopeInput) => targets.resolve(scope);
  const listeners = new Set<(event: WorkingMemoryEvent) => void>();
  const emit = (event: WorkingMemoryEvent): void => {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch {
        // A subscriber's failure is its own: the write is stored and the others are told.
      }
    }
  };

  return {
    limits,
    async set(scopeInput, key, value, writeOptions) {
      const { scope, memoryId } = target(scopeInput);
      const normalized = checkNewWorkingMemoryKey(normalizeWorkingMemoryKey(key));
      if (redact) refuseSecretKey(normalized);
      const ttlSeconds = writeOptions?.ttlSeconds ?? (defaultTtlSeconds === 0 ? undefined : defaultTtlSeconds);
      if (writeOptions?.ttlSeconds !== undefined) checkTtlSeconds(writeOptions.ttlSeconds, 'ttl_seconds');
      // Validate first (cycles, depth, non-JSON), strip hidden characters (they could split a
      // secret), then redact the plain JSON copy, keys too, and as labelled by the entry's key.
      let valueJson = stripInvisibleFromValueJson(encodeWorkingMemoryValue(value, limits.maxValueBytes));
      if (redact) {
        const plain: unknown = JSON.parse(valueJson);
        const redacted = redactWorkingMemoryValue(normalized, plain);
        if (redacted !== plain) valueJson = encodeRedactedValue(redacted, valueJson, limits.maxValueBytes);
      }
      const { versions, ...stored } = await store.setWorkingMemoryEntry({
        scope,
        memoryId,
        key: normalized,
        valueJson,
        limits,
        ...(ttlSeconds === undefined ? {} : { ttlMs: ttlSeconds * 1000 }),
      });
      const entry = Object.freeze(stored);
      // The snippet held is of the state this set changed: the new one is that plus this entry,
      // held under the version the set wrote (served only while the store still shows it) and
      // rendered when a turn asks for it.
      const held = versions && current(snippets.get(memoryId, versions.before));
      const next = held && withSet(held, entry, limits.maxTotalBytes);
      if (versions && next) snippets.set(memoryId, versions.after, next);
      if (listeners.size > 0)
        emit({
          type: 'memory.working_memory.set',
          scope,
          key: normalized,
          bytes: utf8Length(valueJson),
          ...(entry.expiresAt === null ? {} : { expiresAt: entry.expiresAt }),
          ...(writeOptions?.runId === undefined ? {} : { runId: writeOptions.runId }),
        });
      return { ok: true, key: normalized, entry };
    },
    async get(scopeInput, key) {
      const { memoryId } = target(scopeInput);
      const normalized = normalizeWorkingMemoryKey(key);
      const entry = await store.getWorkingMemoryEntry(memoryId, normalized);
      return { key: normalized, value: entry?.valueJson ?? '', found: entry !== undefined };
    },
    async delete(scopeInput, key, writeOptions) {
      const { scope, memoryId } = target(scopeInput);
      const normalized = normalizeWorkingMemoryKey(key);
      const deleted = await store.deleteWorkingMemoryEntry(memoryId, normalized);
      if (deleted && listeners.size > 0)
        emit({
          type: 'memory.working_memory.deleted',
          scope,
          key: normalized,
          ...(writeOptions?.runId === undefined ? {} : { runId: writeOptions.runId }),
        });
      return { ok: true, key: normalized, deleted };
    },
    async list(scopeInput) {
      const entries: Record<string, string> = {};
      // defineProperty keeps an entry keyed "__proto__", which assignment would drop.
      for (const entry of await store.listWorkingMemoryEntries(target(scopeInput).memoryId))
        Object.defineProperty(entries, entry.key, {
          value: entry.valueJson,
          enumerable: true,
          writable: true,
          configurable: true,
        });
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
      const cached = current(snippets.get(memoryId, version));
      if (cached !== undefined) {
        const text = rendered(cached);
        if (text !== cached) snippets.set(memoryId, version, text);
        return text.text;
      }
      const listed = renderEntries(await store.listWorkingMemoryEntries(memoryId));
      // Version 0 is every scope without entries, and comes back after a forget: entries
      // written between the two reads must never be held under it.
      if (version !== 0 || listed.keys.length === 0) snippets.set(memoryId, version, listed);
      return listed.text;
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    ...purgeMethod(store),
  };

  // A held snippet is served until its earliest entry expiry: an expiry changes no version.
  function current(held: HeldSnippet | undefined): HeldSnippet | undefined {
    return held !== undefined && clock().getTime() < expiryOf(held) ? held : undefined;
  }
}

/** `purgeExpired`, when the store can purge (an adapter written before the method cannot). */
function purgeMethod(store: MemoryStore): Pick<WorkingMemory, 'purgeExpired'> {
  const purge = store.purgeExpiredWorkingMemory?.bind(store);
  return purge ? { purgeExpired: async (options) => purge(options) } : {};
}

function checkTtlSeconds(value: unknown, field: string): void {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_WORKING_MEMORY_TTL_SECONDS)
    return;
  throw new HarnessMemoryError({
    code: 'WORKING_MEMORY_INVALID',
    component: 'working-memory',
    message:
      `${field} must be a whole number of seconds from 1 to ${MAX_WORKING_MEMORY_TTL_SECONDS} (ten years), got ` +
      `${typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? String(value))}. Leave it out for an ` +
      'entry that takes the default (by default, never expires).',
    data: { field },
  });
}

/** A scope's snippet with the keys and lines it was joined from, in key order. */
interface RenderedSnippet {
  readonly text: string;
  readonly keys: readonly string[];
  readonly lines: readonly string[];
  /** The earliest expiry of its entries, in epoch milliseconds; Infinity when none expires. */
  readonly expiresAt: number;
}

/** A snippet held for a version: rendered, or a held one with the entry a set wrote on top. */
type HeldSnippet =
  | RenderedSnippet
  | {
      readonly base: HeldSnippet;
      readonly entry: WorkingMemoryEntry;
      readonly depth: number;
      /** The earliest expiry below and of this entry (a replaced entry's stays: early is safe). */
      readonly expiresAt: number;
      /** Characters of the sets held unrendered, this one included. */
      readonly pending: number;
      /** Characters held in all: the rendered snippet below (text and lines) and the pending sets. */
      readonly size: number;
    };

// Sets held unrendered on top of one snippet at most; past them the next turn lists the entries.
const MAX_PENDING_SETS = 64;

function depthOf(held: HeldSnippet): number {
  return 'depth' in held ? held.depth : 0;
}

function expiryOf(held: HeldSnippet): number {
  return held.expiresAt;
}

function entryExpiry(entry: WorkingMemoryEntry): number {
  return entry.expiresAt === null ? Infinity : Date.parse(entry.expiresAt);
}

function pendingOf(held: HeldSnippet): number {
  return 'pending' in held ? held.pending : 0;
}

/** Characters a held snippet keeps: a rendered one's text twice (joined and as lines), and its pending sets. */
function sizeOfHeld(held: HeldSnippet): number {
  return 'size' in held ? held.size : 2 * held.text.length;
}

/**
 * `held` with the set of `entry` on top, or undefined past {@link MAX_PENDING_SETS} sets or
 * when the sets held would exceed `maxBytes` (the scope's whole allowance): then the next turn
 * lists the entries. Sets of the same key stack otherwise, each holding its whole value.
 */
function withSet(held: HeldSnippet, entry: WorkingMemoryEntry, maxBytes: number): HeldSnippet | undefined {
  const added = entry.key.length + entry.valueJson.length;
  const pending = pendingOf(held) + added;
  if (depthOf(held) >= MAX_PENDING_SETS || pending > maxBytes) return undefined;
  const expiresAt = Math.min(expiryOf(held), entryExpiry(entry));
  return { base: held, entry, depth: depthOf(held) + 1, pending, size: sizeOfHeld(held) + added, expiresAt };
}

function rendered(held: HeldSnippet): RenderedSnippet {
  if (!('base' in held)) return held;
  const written: WorkingMemoryEntry[] = [];
  let base: HeldSnippet = held;
  while ('base' in base) {
    written.push(base.entry);
    base = base.base;
  }
  const keys = [...base.keys];
  const lines = [...base.lines];
  for (let index = written.length - 1; index >= 0; index--) putEntry(keys, lines, written[index] as WorkingMemoryEntry);
  return { text: joinWorkingMemoryLines(lines), keys, lines, expiresAt: held.expiresAt };
}

function renderEntries(entries: readonly WorkingMemoryEntry[]): RenderedSnippet {
  const lines = entries.map(workingMemoryLine);
  let expiresAt = Infinity;
  for (const entry of entries) if (entry.expiresAt !== null) expiresAt = Math.min(expiresAt, entryExpiry(entry));
  return { text: joinWorkingMemoryLines(lines), keys: entries.map((entry) => entry.key), lines, expiresAt };
}

/** Sets `entry` in the key-ordered `keys` and `lines`: its line replaced, or inserted in order. */
function putEntry(keys: string[], lines: string[], entry: WorkingMemoryEntry): void {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (compareUtf8(keys[middle] as string, entry.key) < 0) low = middle + 1;
    else high = middle;
  }
  const replaces = keys[low] === entry.key ? 1 : 0;
  keys.splice(low, replaces, entry.key);
  lines.splice(low, replaces, workingMemoryLine(entry));
}

/**
 * The redacted copy of a value that fit the limit as given: a placeholder can be longer than
 * the secret it replaces (`[REDACTED:email_address]` for `a@b.co`), and the error must then
 * say why the value grew, not quote a size the caller never sent.
 */
function encodeRedactedValue(redacted: unknown, givenJson: string, maxValueBytes: number): string {
  const json = JSON.stringify(redacted);
  const bytes = Buffer.byteLength(json);
  if (bytes <= maxValueBytes) return json;
  throw new HarnessMemoryError({
    code: 'WORKING_MEMORY_LIMIT',
    component: 'working-memory',
    message:
      `value is ${Buffer.byteLength(givenJson)} bytes as JSON, but ${bytes} once its secrets are redacted ` +
      `(placeholders such as [REDACTED:email_address] can be longer than what they replace), over the ` +
      `${maxValueBytes}-byte limit. Store a shorter value, or raise working_memory_max_value_bytes.`,
    data: { limit: 'value_bytes', actual: bytes, max: maxValueBytes },
  });
}
