/**
 * The storage port. Every multi-step mutation is one atomic method, so no adapter ever
 * reads, then writes, in separate steps. Every method takes the scope's `memoryId`:
 * there is no unscoped read.
 * @module
 */
import type {
  MemoryRecord,
  Observation,
  ObservationConfig,
  ObservationSource,
  StoredReflection,
} from '../core/observation.js';
import type { ReflectionLinks } from '../core/reflection-links.js';
import type { Contradiction, Supersession } from '../core/reflection.js';
import type { Scope } from '../core/scope.js';
import type { PreparedMessage } from '../core/transcript.js';

/** Kinds of operation in the operation log. */
export type OperationType = 'enable' | 'disable' | 'observe' | 'reflect' | 'reflect_now' | 'import' | 'correct';
/**
 * `queued → processing → applied | failed | dead`. `dead`: the operation used up its attempts
 * (see `maxOperationAttempts`); it no longer blocks its scope and goes back to `queued` only
 * when retried by hand ({@link MemoryStore.retryDeadOperation}).
 */
export type OperationStatus = 'queued' | 'processing' | 'applied' | 'failed' | 'dead';

/** Whether an operation is open: queued, processing or dead (see {@link MemoryStore.listOpenOperations}). */
export function isOpenOperation(operation: { readonly status: OperationStatus }): boolean {
  return operation.status === 'queued' || operation.status === 'processing' || operation.status === 'dead';
}

/** One row of the operation log: an audit entry and, while queued, a unit of work. */
export interface Operation {
  readonly operationId: string;
  readonly memoryId: string;
  readonly scope: Scope;
  readonly runId: string;
  readonly toolCallId: string;
  /** Position in the scope's log, from 1; unique per memoryId. */
  readonly scopeSequence: number;
  readonly operationType: OperationType;
  readonly status: OperationStatus;
  readonly payload: Readonly<Record<string, unknown>>;
  readonly errorText: string;
  /** Attempts started so far. */
  readonly attempt: number;
  readonly leaseOwner: string | null;
  readonly leaseExpiresAt: string | null;
  /** A queued operation is not claimed before this time (retry backoff). */
  readonly availableAt: string;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/**
 * A transcript message as stored until it is observed: its stable identity
 * (`messageKey`, the caller's id or `#<index>`), rendered text and token cost, plus
 * `seq`, its per-scope sequence number from 1 in arrival order.
 */
export interface StoredMessage extends PreparedMessage {
  readonly seq: number;
}

/** A message to append (before the store assigns its seq). */
export type NewMessage = PreparedMessage;

/** An observation to insert (the store assigns seq and createdAt; the batch's range gives its source span). */
export interface NewObservation {
  readonly content: string;
  readonly importance: number | null;
  readonly tokenCount: number;
  /** Where it came from. @default 'mixed' */
  readonly source?: ObservationSource;
  /** Message seqs the observer cited, within the batch. @default [] */
  readonly sourceMessageSeqs?: readonly number[];
  /**
   * Earlier observations (by seq) it replaces, added to the scope's supersession set as it is
   * stored; a seq the scope never assigned is dropped. Read by `completeObservation` only. @default []
   */
  readonly supersedes?: readonly number[];
  /** Earlier observations (by seq) it conflicts with, neither known to win: added as contradictions. @default [] */
  readonly contradicts?: readonly number[];
}

/** An observation brought in from elsewhere (another memory system, a test, a benchmark). */
export interface ImportedObservation extends NewObservation {
  /** When it was first observed. @default the import's time */
  readonly createdAt?: string;
}

/**
 * A reflection and supersession set restored with imported observations (a JSON export's,
 * see {@link MemoryStore.importObservations}), naming observations by the seqs the import gives
 * them: the one given first gets `afterSeq + 1`, and so on.
 */
export interface ImportedReflection {
  /** The scope's last observation seq as the caller read it; the seqs here are numbered after it. */
  readonly afterSeq: number;
  /** The reflection to put in force, or `null` for none. */
  readonly reflection: StoredReflection | null;
  readonly supersessions: readonly Supersession[];
  /** Stored with the smaller seq first. */
  readonly contradictions: readonly Contradiction[];
}

/**
 * A fix to one stored observation ({@link MemoryStore.correctObservation}): new text (and, when
 * given, a new importance), a new importance alone, or its removal.
 *
 * A replacement that keeps the text (`content` left out, or equal to the stored text) changes
 * the importance alone: the text is the one stored when the store's transaction runs (never
 * one read before it), the token totals stay, and the reflection and the supersession set's
 * links naming the observation stay, since what they say of its text still holds; the
 * `correctionCount` and state version still go up. Only a new text, or a deletion, drops them.
 * A replacement with neither `content` nor `importance` is refused with `OBSERVATION_INVALID`
 * (field `content`), changing nothing.
 */
export type ObservationChange =
  | {
      readonly kind: 'replace';
      readonly content: string;
      /** `content`'s tokens; unused when `content` is the stored text. */
      readonly tokenCount: number;
      /** Kept as it was when undefined. */
      readonly importance?: number | null;
    }
  | {
      readonly kind: 'replace';
      /** Left out: the stored text and its token count stay. */
      readonly content?: undefined;
      readonly tokenCount?: undefined;
      readonly importance: number | null;
    }
  | { readonly kind: 'delete' };

/** One of a tenant's scopes, with its counts, as {@link MemoryStore.listScopes} lists it. */
export interface ScopeSummary {
  readonly memoryId: string;
  readonly scope: Scope;
  /** Explicitly enabled or disabled; `null` follows the current default. */
  readonly enabled: boolean | null;
  readonly observationCount: number;
  readonly workingMemoryEntries: number;
  /** Queued or processing operations. */
  readonly pendingOperations: number;
  readonly deadOperations: number;
  /** The latest change to the scope's record or working memory (ISO 8601 UTC). */
  readonly lastActivityAt: string;
}

/** What {@link MemoryStore.listScopes} takes. */
export interface ScopeListQuery {
  readonly tenantId: string;
  /** Words that must each appear (case-insensitive) in the conversation or agent id. */
  readonly words?: readonly string[];
  /** Only scopes whose effective enabled flag is `value`; an unset flag counts as `whenUnset`. */
  readonly enabled?: { readonly value: boolean; readonly whenUnset: boolean };
  /** Only scopes ordered after this one (by conversation id, then agent id, in byte order). */
  readonly after?: { readonly conversationId: string; readonly agentId: string };
  readonly limit: number;
}

/** A marker written at an observation or reflection cycle boundary. */
export interface Marker {
  readonly markerId: string;
  readonly memoryId: string;
  readonly markerType: 'observation_start' | 'observation_end' | 'reflection_end';
  readonly cycleId: string;
  readonly messageSeqStart: number;
  readonly messageSeqEnd: number;
  readonly tokenCount: number;
  readonly payload: Readonly<Record<string, unknown>>;
  readonly createdAt: string;
}

/** One working-memory entry as stored. */
export interface WorkingMemoryEntry {
  readonly key: string;
  /** The value, JSON-encoded. */
  readonly valueJson: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** When the entry expires (ISO 8601 UTC), by the store's clock; `null` when it never does. */
  readonly expiresAt: string | null;
}

/**
 * What a working-memory set stored: the entry and, from a store that keeps working-memory
 * versions, the scope's version right before the write and the one the write gave it (both
 * read in the write's transaction). With them the working-memory service turns the snippet it
 * holds into the new one without listing the entries again.
 */
export type StoredWorkingMemoryEntry = WorkingMemoryEntry & {
  readonly versions?: { readonly before: number; readonly after: number };
};

/** Per-scope limits enforced atomically when an entry is written. */
export interface WorkingMemoryLimits {
  readonly maxEntries: number;
  /** Sum of key and value bytes (UTF-8) over all entries of the scope. */
  readonly maxTotalBytes: number;
}

/** Result of {@link MemoryStore.appendMessages}. */
export interface AppendMessagesResult {
  readonly record: MemoryRecord;
  /** Messages newly stored (already-known message keys are skipped). */
  readonly inserted: number;
  /** Tokens of every message received but not yet observed. */
  readonly unobservedTokens: number;
}

/** Result of {@link MemoryStore.appendMessagesAndClaim}. */
export type AppendAndClaimResult =
  | { readonly disabled: true; readonly record: MemoryRecord | undefined }
  | (AppendMessagesResult & {
      readonly disabled?: undefined;
      readonly operation?: Operation;
      readonly claimed?: Operation;
      readonly prefetched?: PrefetchedObserve;
    });

/** What a claimed observe operation reads first, read in the transaction that claimed it. */
export interface PrefetchedObserve {
  readonly operationId: string;
  readonly record: MemoryRecord;
  /**
   * Messages after the record's observation cursor, through its last message, in seq order:
   * the oldest of them only when the claim gave `batchTokens`.
   */
  readonly messages: readonly StoredMessage[];
}

/** Identifies the worker holding an operation's lease. */
export interface LeaseHandle {
  readonly operationId: string;
  /** The operation's scope: with it an adapter finds the operation among the scope's pending ones. */
  readonly memoryId: string;
  readonly leaseOwner: string;
}

/**
 * What the service asks of a storage backend. The repository's adapters are held to it by one
 * conformance suite (`src/storage/store.suite.ts`, not in the package); an adapter of your own
 * can start from the in-memory store (`harness-memory/storage/in-memory`), the reference for
 * every rule here. Every type this interface names is exported from `harness-memory`.
 */
export interface MemoryStore {
  readonly specificationVersion: 'v1';
  /** Adapter name for errors and logs, e.g. `in-memory`, `sqlite`. */
  readonly name: string;
  /**
   * True when `importObservations` follows its `restore` input (puts the reflection in force,
   * adds the links, refuses a scope that is not empty). An adapter written before `restore`
   * would import the observations alone and drop the rest without a word, so `importExport`
   * refuses an export with a reflection or links (`STORE_FAILED`) unless this is set.
   */
  readonly supportsRestore?: boolean;

  /** The scope's record, or undefined. Never creates one. */
  getRecord(memoryId: string): Promise<MemoryRecord | undefined>;

  /**
   * Creates the record if missing, then sets `enabled` and merges the `config` overrides
   * per field, bumps the state version, and logs an applied `enable`/`disable` operation
   * whose payload is `{"enabled":bool}`, with `"config"` holding the overrides given, their
   * keys in snake_case (`observe_min_tokens`).
   */
  updateSettings(input: {
    scope: Scope;
    memoryId: string;
    enabled: boolean;
    config?: Partial<ObservationConfig>;
    runId: string;
    toolCallId: string;
    operationId: string;
  }): Promise<MemoryRecord>;

  /**
   * Appends observations brought in from elsewhere, in the order given, with the next seqs,
   * in one transaction (creating the record if missing): the message cursor does not move,
   * the token totals and the state version follow, and an `applied` operation of type
   * `import` records it. Optional: a store without it cannot import.
   *
   * With `restore`, the same transaction also puts `restore.reflection` in force (the
   * unreflected total becomes the tokens after its `throughSeq`) and adds the supersessions and
   * contradictions to the scope's set, each checked as {@link completeReflection} checks a
   * reflection's, against the seqs this import assigns (the dropped ones are added to the
   * record's `rejectedReferenceCount`), with the import's operation id. Only into a scope that
   * holds no observation, no reflection and no link, and whose last observation seq is still
   * `restore.afterSeq`: otherwise it throws `STORE_CONFLICT` and writes nothing.
   */
  importObservations?(input: {
    scope: Scope;
    memoryId: string;
    observations: readonly ImportedObservation[];
    restore?: ImportedReflection;
    runId: string;
    toolCallId: string;
    operationId: string;
  }): Promise<{ record: MemoryRecord; observations: Observation[] }>;

  /**
   * Creates the record if missing (following the defaults), stores the messages whose keys are new (in order), and
   * reports the unobserved token total. Idempotent per message key. With `generation`, writes
   * nothing and throws `SCOPE_FORGOTTEN` unless the scope's generation (see
   * {@link scopeGeneration}) is still that value: messages of a forgotten scope never come back.
   */
  appendMessages(input: {
    scope: Scope;
    memoryId: string;
    messages: readonly NewMessage[];
    generation?: number;
  }): Promise<AppendMessagesResult>;

  /**
   * Optional fast path, one transaction instead of four calls. It reads the scope's record
   * (undefined when there is none) and asks `settings` whether the scope observes and from
   * how many unobserved tokens; when disabled it writes nothing and answers `disabled`.
   * Otherwise {@link appendMessages}; then, when the unobserved tokens reach `minTokens`,
   * {@link enqueueOperation} of an `observe` operation and {@link claimOperation} for the
   * scope (which claims the scope's oldest pending operation: the new one, or an older one
   * that must run first; it may leave a `processing` operation whose lease expired to the
   * {@link claimOperation} a service makes when this one claimed nothing). Services fall back
   * to the separate calls when an adapter lacks it. When the claimed operation is an
   * observe, `prefetched` may carry the record and the unobserved messages as the same
   * transaction saw them, so the worker need not read them again. `settings` must depend
   * only on the record's `enabled` and `config`: an adapter may call it first with a record
   * it remembers and act on the answer only after checking, in the same transaction, that
   * the stored record's `enabled` and `config` are those.
   */
  appendMessagesAndClaim?(input: {
    scope: Scope;
    memoryId: string;
    messages: readonly NewMessage[];
    /** As {@link appendMessages}: checked in the same transaction, before anything is written. */
    generation?: number;
    settings: (record: MemoryRecord | undefined) => { enabled: boolean; minTokens: number };
    /**
     * The observe to enqueue. Its logged payload is `payload` with `messages` (how many
     * messages this call stored: repeated keys are not counted) and `unobserved_tokens` (the
     * unobserved tokens after it) set by the adapter, as the service logs them without the fast path.
     */
    operation: { operationId: string; payload: Record<string, unknown>; runId: string; toolCallId: string };
    leaseOwner: string;
    leaseMs: number;
    /** The prefetched messages are read as {@link listUnobservedMessages} with this `maxTokens`. */
    batchTokens?: number;
  }): Promise<AppendAndClaimResult>;

  /**
   * Messages with `observedThroughMessageSeq < seq <= throughSeq`, in seq order. With
   * `maxTokens`, only the oldest of them: each one whose predecessors in the list hold fewer
   * than `maxTokens` tokens (so at least one when there is any), so a batch never reads the
   * whole backlog.
   */
  listUnobservedMessages(
    memoryId: string,
    throughSeq: number,
    options?: { readonly maxTokens?: number },
  ): Promise<StoredMessage[]>;

  /** Observations in seq order; `afterSeq` keeps only those with a greater seq. */
  listObservations(memoryId: string, options?: { afterSeq?: number }): Promise<Observation[]>;

  /**
   * A page of the scope's observations, newest first: those with a seq below `beforeSeq` (all
   * when unset) whose content holds every one of `words` (case-insensitive), at most `limit`.
   */
  findObservations(
    memoryId: string,
    options: { readonly beforeSeq?: number; readonly words?: readonly string[]; readonly limit: number },
  ): Promise<Observation[]>;

  /**
   * Replaces or deletes the scope's observation `seq` in one transaction: the token totals and
   * counts follow (the unreflected total only for an observation after the reflection), the
   * supersession set's links naming `seq` are dropped unless the replacement keeps the text
   * (see {@link ObservationChange}; their counts follow), the record's `correctionCount` and
   * state version go up, and an `applied` operation of type `correct` records it (its payload
   * holds the seq and the action, never the old text). When the scope's reflection covers `seq`
   * (`seq <= throughSeq`) and the text changes (or it is deleted), it is taken out of force too: the
   * record is left with no reflection, and every observation counts as unreflected (the
   * unreflected total becomes the active total), as `planCorrection` says.
   * Returns undefined, changing nothing, when the scope has no observation `seq`.
   */
  correctObservation(input: {
    scope: Scope;
    memoryId: string;
    seq: number;
    change: ObservationChange;
    runId: string;
    toolCallId: string;
    operationId: string;
  }): Promise<{ record: MemoryRecord; observation: Observation | null } | undefined>;

  /**
   * A page of a tenant's scopes that have a record, ordered by conversation id then agent id
   * (byte order), at most `limit`, with their counts. Never another tenant's.
   */
  listScopes(query: ScopeListQuery): Promise<ScopeSummary[]>;

  /**
   * Markers in creation order. Operation retention ({@link deleteSettledOperations}) deletes
   * them with their operations.
   */
  listMarkers(memoryId: string): Promise<Marker[]>;

  /** Appends a queued operation with the next scope sequence. */
  enqueueOperation(input: {
    operationId: string;
    scope: Scope;
    memoryId: string;
    operationType: OperationType;
    payload: Record<string, unknown>;
    runId: string;
    toolCallId: string;
  }): Promise<Operation>;

  /**
   * Claims the oldest available queued operation (of `memoryId` when given) whose scope has
   * no operation in `processing` and no older queued one: operations of one scope run in
   * order. Sets `processing`, the lease and attempt+1. With `memoryId`, a scope whose
   * `processing` operation's lease has expired (by the store's clock: its holder died or
   * stalled) has that operation claimed again instead, with the same changes and the error
   * text `requeued after stale processing operation`, as {@link requeueStaleOperations} and a
   * claim would leave it: so the scope's next observe recovers it without a background worker.
   */
  claimOperation(input: { memoryId?: string; leaseOwner: string; leaseMs: number }): Promise<Operation | undefined>;

  /**
   * Applies an observe operation atomically, only while the lease holds: inserts the
   * observations with the next seqs, advances the message cursor to `throughMessageSeq`
   * (never backwards), drops the observed messages' content (here, or at the scope's next
   * append, whose page write it then shares; the keys stay), writes markers, bumps the
   * state version and marks the operation `applied`, with `note` as its error text when given
   * (why messages were passed over). Throws `OPERATION_LEASE_LOST` if the lease lapsed or was
   * taken over.
   */
  completeObservation(
    input: LeaseHandle & {
      observations: readonly NewObservation[];
      throughMessageSeq: number;
      markerIds: { start: string; end: string };
      note?: string;
      /**
       * The record's `correctionCount` when the observer's input was read: the observations'
       * `supersedes` and `contradicts` links are added only while it holds (a correction since
       * may have changed what they name); the observations are stored either way.
       */
      correctionCount?: number;
    },
  ): Promise<{ record: MemoryRecord; observations: Observation[] }>;

  /**
   * Applies a reflection atomically under the lease, like {@link completeObservation}, and
   * grows the scope's supersession set in the same transaction: the reflection's
   * supersessions and contradictions are checked against the scope as it is then (see
   * `checkReflectionReferences`: a seq the scope never assigned or, when `citableSeqs` is
   * given, one not in it (the reflector's prompt showed only those), a supersession whose
   * newer seq is not greater than its older one, or a self-reference is dropped and added to
   * the record's `rejectedReferenceCount`), and the rest added to the set (a pair already in
   * it is kept as it was), with the operation's id; the record's counts follow.
   * `refusedReferences`, references the caller refused before (a supersession turned into a
   * contradiction by `refuseToolSupersessions`), are added to that count too.
   *
   * With `correctionCount` (the record's when the reflector's input was read), a scope whose
   * observations were corrected or deleted since gets nothing of the reflection, which may
   * restate what was removed: the operation is marked applied with a note saying so, and the
   * record is returned as it stands (its `correctionCount` tells the caller).
   */
  completeReflection(
    input: LeaseHandle & {
      reflection: StoredReflection;
      markerId: string;
      citableSeqs?: readonly number[];
      correctionCount?: number;
      refusedReferences?: number;
    },
  ): Promise<MemoryRecord>;

  /**
   * The scope's supersession set; supersessions ordered by newer, then older seq; contradictions by `seqA`, then
   * `seqB`.
   */
  listReflectionLinks(memoryId: string): Promise<ReflectionLinks>;

  /** Marks a claimed operation applied without changing memory (nothing to do). */
  completeWithoutChange(input: LeaseHandle & { note: string }): Promise<void>;

  /**
   * Records a failed attempt. With `retryAfterMs` the operation returns to `queued`,
   * claimable after that delay; otherwise it becomes `failed`. With `notAttempted` (the work
   * never started: the model's circuit was open) the attempt is not counted, `attempt` going
   * back by one, so waiting out another scope's failures never uses up this one's attempts.
   * Lease-checked.
   */
  failOperation(
    input: LeaseHandle & { errorText: string; retryAfterMs?: number; notAttempted?: boolean },
  ): Promise<Operation>;

  /**
   * Parks a claimed operation as `dead`, with `errorText`: it used up its attempts. Lease-checked,
   * like {@link failOperation}. A dead operation no longer blocks the scope's later operations,
   * and the messages it would have observed stay unobserved for a later observe.
   */
  markOperationDead(input: LeaseHandle & { errorText: string }): Promise<Operation>;

  /**
   * Retries a dead operation by hand, in one atomic step: it moves to the end of its scope's
   * log (the next scope sequence, so the scope's order holds), `queued`, available now, with
   * its attempts reset to 0 and its error text kept until the next attempt. Returns undefined
   * when the scope has no dead operation with that id.
   */
  retryDeadOperation(input: { memoryId: string; operationId: string }): Promise<Operation | undefined>;

  /** Count of the scope's `dead` operations. */
  countDeadOperations(memoryId: string): Promise<number>;

  /**
   * Returns operations stuck in `processing` whose lease expired more than `graceSeconds`
   * ago (by the store's clock) to `queued`. Returns how many.
   */
  requeueStaleOperations(input: { graceSeconds: number }): Promise<number>;

  /** The scope's operations in scope-sequence order. */
  listOperations(memoryId: string): Promise<Operation[]>;

  /**
   * The scope's open operations (queued, processing or dead: work still to do, or to retry
   * by hand) in scope-sequence order, read without the applied ones, which pile up with every
   * turn. Optional: without it, callers filter {@link listOperations}.
   */
  listOpenOperations?(memoryId: string): Promise<Operation[]>;

  /**
   * A page of the scope's operation log, newest first: those with a scope sequence below
   * `beforeSequence` (all when unset) and, when given, the status, at most `limit`.
   */
  listOperationPage(
    memoryId: string,
    options: { readonly beforeSequence?: number; readonly status?: OperationStatus; readonly limit: number },
  ): Promise<Operation[]>;

  /** Count of queued or processing operations (of one scope, or all). */
  countPendingOperations(memoryId?: string): Promise<number>;

  /**
   * Operation retention: deletes settled operations (`applied`, and `failed`, which nothing
   * retries) not written for `olderThanSeconds` (by the store's clock: the database's on SQLite
   * and Postgres), with their markers, at most `limit` (1 to 1,000) in one short call, and
   * returns how many operations it deleted. Bad arguments are `OPTION_INVALID` naming them.
   *
   * Never deleted, whatever their age: open operations (queued and processing ones, which are
   * work, claims and leases; dead ones, which the scope counts and a user retries by hand),
   * and each scope's newest operation, whose sequence the next operation of the scope (an
   * enqueue, or a dead one retried) is numbered after (`MAX(scope_sequence) + 1`), so no
   * sequence is used twice and a page cursor of the log (`beforeSequence`) never comes to name
   * another operation. Nothing else reads a settled operation: the snippet, the observation
   * cursor and the counts live in the record, an export lists open operations only, an
   * observation's or link's `operationId` is a label, and the inspector's log pages show what is
   * left. A scope's markers go with the operations deleted (see `listMarkers`): they mark the
   * cycles of applied operations, and nothing but `listMarkers` reads them.
   *
   * Each call looks at a bounded number of scopes, from where the store's previous call left
   * off, and in each only at its oldest operations, up to the first settled one written after
   * the cut-off, so it never reads the whole log; adapters add no index for it, as every
   * write of the operation log pays for one. A call that deleted `limit` may leave more: call
   * again. Optional: without it, operation retention (`operationRetentionSeconds`) cannot be
   * turned on for the store.
   */
  deleteSettledOperations?(input: { olderThanSeconds: number; limit: number }): Promise<number>;

  /**
   * Inserts or replaces an entry, enforcing `limits` atomically. Creates the scope's record if
   * missing (as {@link appendMessages} does), so the scope is listed by {@link listScopes}.
   *
   * With `ttlMs` the entry expires that many milliseconds after the write, by the store's
   * clock; without it, never (a replaced entry takes the new set's expiry). An expired entry
   * is gone for every reader (get, list, version-held snippets, the limits) at once, and its
   * row is deleted in the scope's next write (set or delete), or by
   * {@link purgeExpiredWorkingMemory}, whichever comes first: the store keeps the scope's
   * earliest expiry with its usage, so a scope without expired entries pays nothing for it.
   */
  setWorkingMemoryEntry(input: {
    scope: Scope;
    memoryId: string;
    key: string;
    valueJson: string;
    limits: WorkingMemoryLimits;
    /** Milliseconds the entry lives, a positive integer; absent: it never expires. */
    ttlMs?: number;
  }): Promise<StoredWorkingMemoryEntry>;
  getWorkingMemoryEntry(memoryId: string, key: string): Promise<WorkingMemoryEntry | undefined>;
  /** True if an entry was removed (an expired one does not count). */
  deleteWorkingMemoryEntry(memoryId: string, key: string): Promise<boolean>;
  /** All unexpired entries of the scope, sorted by key in byte order. */
  listWorkingMemoryEntries(memoryId: string): Promise<WorkingMemoryEntry[]>;
  /**
   * Deletes the rows of working-memory entries past their expiry (by the store's clock), in
   * every scope, without waiting for each scope's next write: at most `limit` (1 to 1,000)
   * entries, from at most `limit` scopes, those whose earliest expiry passed longest ago first,
   * in one short call; returns how many entries it deleted. Bad arguments are `OPTION_INVALID`
   * naming them.
   *
   * Readers see no change (the entries were already gone for them), but each scope it looks at
   * is left as a set's purge would leave it: its usage (the entry count and bytes the limits
   * check) and earliest expiry without the deleted rows, and a new working-memory version, so a
   * snippet held for the old one (judged by another clock, see `workingMemoryVersion`) is not
   * served again. The stores find the scopes due through their earliest expiry, never by
   * reading every scope. A call that deleted `limit` may leave more: call again. Optional:
   * without it, expired rows stay until their scope's next write; the harness server calls it
   * at every maintenance sweep.
   */
  purgeExpiredWorkingMemory?(input: { limit: number }): Promise<number>;
  /**
   * Optional. A number that changes whenever the scope's entries change (an entry set, an
   * entry deleted, the scope forgotten), by whichever process changed them, and does not
   * come back to an earlier value (a forgotten scope starts from a fresh random one); `0`
   * for a scope that has stored none. The working-memory service reuses a rendered
   * snippet while it stays the same; without it, every snippet lists the entries.
   */
  workingMemoryVersion?(memoryId: string): Promise<number>;

  /**
   * The scope's generation: 0 until the scope is first forgotten; then a new random value at
   * every `forget`, never an earlier one. Work that began before a forget (a run on this or
   * another process) passes the generation it read to {@link appendMessages} and is refused.
   */
  scopeGeneration(memoryId: string): Promise<number>;

  /**
   * Deletes everything of the scope from every table, and gives it a new generation: the one
   * row left is its id with that number (see {@link scopeGeneration}).
   */
  forget(memoryId: string): Promise<void>;

  /** Releases resources. Idempotent; every later call throws `STORE_DISPOSED`. */
  dispose(): Promise<void>;
}
