/**
 * The SQLite store: both memories in one embedded file, safe with several processes on it.
 * Every transaction that may write begins IMMEDIATE, and writes issued together share one
 * (see SqliteWriteBatcher); leases, backoff and stale recovery use the database clock.
 * @module
 */
import type { StoreInput as Input } from '../_memory-rows.js';
import type { Database } from 'better-sqlite3';
import { invalidOption as optionError, requireOptions, requireString } from '../../core/require-option.js';
import { HarnessMemoryError, StoreError } from '../../core/errors.js';
import type { Observation, StoredReflection } from '../../core/observation.js';
import type { Scope } from '../../core/scope.js';
import { utf8Length, workingMemoryLimitError } from '../../core/working-memory.js';
import type {
  AppendAndClaimResult,
  ImportedReflection,
  LeaseHandle,
  MemoryStore,
  Operation,
  PrefetchedObserve,
} from '../store.js';
import { checkRestoreTarget, planRestoreLinks } from '../_import-restore.js';
import type { RestoreTarget } from '../_import-restore.js';
import { configureSqliteConnection, openSqliteFile, useBackgroundCheckpoints } from './sqlite-connection.js';
import type { BackgroundCheckpoints } from './sqlite-checkpointer.js';
import {
  conflictError,
  disposedError,
  leaseLostError,
  missingRecordError,
  STORE_NAME,
  toStoreError,
} from './sqlite-errors.js';
import { migrateSqliteDatabase, SQLITE_SCHEMA_VERSION } from './sqlite-migrations.js';
import { createSchemaCheck } from './sqlite-schema-check.js';
import { createStoreGuard } from '../_store-guard.js';
import { observePayload, settingsPayload } from '../_operation-payloads.js';
import {
  planImportApply,
  planObservationApply,
  planReflectionApply,
  type PlannedLink,
  type PlannedMarker,
  type PlannedObservation,
} from '../apply-plan.js';
import { isOutdatedReflection, OUTDATED_REFLECTION_NOTE } from '../correction-plan.js';
import {
  newScopeGeneration,
  newWorkingMemoryVersion,
  oldestUnobserved,
  parseConfig,
  seqsJson,
  toMarker,
  toObservation,
  toOperation,
  toRecord,
  toReflectionLinks,
  toWorkingMemoryEntry,
} from '../_memory-rows.js';
import { scopeForgottenError } from '../_store-errors.js';
import {
  toApplyPosition as positionOf,
  type MarkerRow,
  type ObservationRow,
  type OperationRow,
  type RecordRow,
} from '../_memory-rows.js';
import { prepareStatements } from './sqlite-statements.js';
import { createSqliteInspection } from './sqlite-inspection.js';
import { createSqliteOperationRetention } from './sqlite-operation-retention.js';
import { operationRetentionArguments } from '../_operation-retention.js';
import { workingMemoryPurgeArguments } from '../_working-memory-purge.js';
import { createSqliteWorkingMemoryPurge } from './sqlite-working-memory-purge.js';
import { SqliteChangeStamp } from './sqlite-change-stamp.js';
import { SqliteEntryCache } from './sqlite-entry-cache.js';
import { SqliteWriteBatcher } from './sqlite-write-batcher.js';
import {
  emptyWriteAheadLogLater,
  emptyWriteAheadLogWithin,
  isBusyError,
  limitSynchronousBusyWait,
  retryWhileBusy,
  tryEmptyWriteAheadLog,
} from './sqlite-busy-wait.js';
import { holdSqliteConnection, privateSqliteConnection } from './sqlite-shared-connection.js';
import type { SqliteConnectionHold } from './sqlite-shared-connection.js';
import type { SqliteStatements } from './sqlite-statements.js';

export { STORE_NAME };

// The span of times SQLite's date functions write (years 0000 to 9999).
const EARLIEST_TIME = Date.parse('0000-01-01T00:00:00.000Z');
const LATEST_TIME = Date.parse('9999-12-31T23:59:59.999Z');

/** Options of {@link createSqliteStore}. */
export interface SqliteStoreOptions {
  /**
   * The database file. Missing parent directories are created. `':memory:'` gives a private
   * in-memory database (tests only: nothing survives the process).
   */
  path: string;
  /**
   * What a commit survives. In WAL mode, `NORMAL` survives application crashes (`kill -9`)
   * but the last transactions may roll back on power loss or an OS crash; `FULL` also
   * survives power loss, at about ten times the cost per commit (one fsync each).
   * @default 'NORMAL'
   */
  synchronous?: 'NORMAL' | 'FULL';
  /** How long a write waits for another process's write lock before failing. @default 5000 */
  busyTimeoutMs?: number;
  /**
   * An already-open better-sqlite3 connection to use instead of opening `path` (for tests).
   * The store configures and migrates it, and closes it on `dispose()`. `path` then only
   * names it in errors.
   */
  database?: Database;
  /**
   * Testing hook: called at step boundaries inside the `completeObservation` transaction;
   * crash tests kill the process there. `mid_apply` comes after the observations are
   * inserted and before the cursor and record update; `before_mark_applied` after every
   * memory write, just before the commit that makes the operation `applied` (the status
   * row is updated first, as the lease check, but only that commit makes it visible).
   */
  faultPoint?: (point: 'mid_apply' | 'before_mark_applied') => void;
  /**
   * Who copies committed pages from the write-ahead log into the database file.
   * `background`: a worker thread shared by the process's stores, so that no commit waits
   * for the copy and its fsyncs; the store's connection still checkpoints if the log
   * reaches about 40 MiB (writes that never pause). `inline`: SQLite's default, the commit
   * that takes the log past 1000 pages checkpoints. Either way a checkpoint is synced as
   * `synchronous` says.
   * @default 'background'
   */
  checkpoints?: 'background' | 'inline';
}

/**
 * Creates a store on a SQLite file: opens it in WAL mode, applies the migrations, and
 * prepares its statements. One connection per store, which the process's run store on the
 * same file (`createSqliteRunStore` with the same `synchronous`, `busyTimeoutMs` and
 * `checkpoints`) shares; it is closed when both are disposed.
 * @example
 * const store = createSqliteStore({ path: '.harness/state.db' });
 * const memory = createObservationalMemory({ store, model });
 */
export function createSqliteStore(options: SqliteStoreOptions): MemoryStore {
  requireOptions('createSqliteStore', options, 'Pass { path }.');
  // An empty path would open an anonymous temporary database: nothing would persist.
  requireString(
    'createSqliteStore',
    'path',
    options.path,
    "Pass the database file, such as .harness/state.db (':memory:' gives a private database for tests).",
  );
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
  const synchronous = options.synchronous ?? 'NORMAL';
  const context = { path: options.path, busyTimeoutMs };
  if (!Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0)
    throw invalidOption('busyTimeoutMs', 'must be a non-negative integer of milliseconds');
  if (synchronous !== 'NORMAL' && synchronous !== 'FULL')
    throw invalidOption('synchronous', 'must be "NORMAL" or "FULL"');
  const checkpoints = options.checkpoints ?? 'background';
  if (checkpoints !== 'background' && checkpoints !== 'inline')
    throw invalidOption('checkpoints', 'must be "background" or "inline"');

  let connection: SqliteConnectionHold | undefined;
  try {
    // The process's run store on this file shares the connection (see holdSqliteConnection).
    connection = options.database
      ? privateSqliteConnection(options.database)
      : holdSqliteConnection('memory', { path: options.path, synchronous, busyTimeoutMs, checkpoints }, () =>
          openSqliteFile(options.path, busyTimeoutMs),
        );
    const { db } = connection;
    if (connection.opened) {
      configureSqliteConnection(db, { busyTimeoutMs, synchronous, path: options.path });
      migrateSqliteDatabase(db);
      // Opening may wait for the lock; from now on the event loop never does (see sqlite-busy-wait.ts).
      limitSynchronousBusyWait(db, busyTimeoutMs);
    }
    const statements = prepareStatements(db);
    const checkpointer = checkpoints === 'background' ? useBackgroundCheckpoints(db, { synchronous }) : undefined;
    return buildStore(db, statements, context, options.faultPoint, checkpointer, connection.release);
  } catch (error) {
    try {
      connection?.release();
    } catch {
      // The error that stopped the store is the one to report.
    }
    throw toStoreError(error, context);
  }
}

function buildStore(
  db: Database,
  statements: SqliteStatements,
  context: { path: string; busyTimeoutMs: number },
  faultPoint: SqliteStoreOptions['faultPoint'],
  checkpointer: BackgroundCheckpoints | undefined,
  release: () => void,
): MemoryStore {
  const ctx = createSqliteStoreContext(db, statements, context, faultPoint, checkpointer);
  const { storeGuard, batcher, inspection, execute, write, readNow, finishLeased } = ctx;
  const retention = createSqliteOperationRetention(db);
  const expired = createSqliteWorkingMemoryPurge(db);
  const entries = new SqliteEntryCache(db.memory ? undefined : SqliteChangeStamp.open(db.name));
  const store: MemoryStore = {
    specificationVersion: 'v1',
    name: STORE_NAME,
    supportsRestore: true,

    getRecord: async (memoryId) => {
      return execute(() => {
        const row = statements.selectRecord.get(memoryId);
        return row && toRecord(row);
      }, memoryId);
    },
    updateSettings: async (input) => write(() => updateSettings(ctx, input), input.memoryId),
    appendMessages: async (input) => write(() => appendMessages(ctx, input), input.memoryId),
    appendMessagesAndClaim: async (input) => write(() => appendMessagesAndClaim(ctx, input), input.memoryId),
    listUnobservedMessages: async (memoryId, throughSeq, options = {}) =>
      execute(
        () => oldestUnobserved(statements.listUnobservedMessages.iterate({ memoryId, throughSeq }), options.maxTokens),
        memoryId,
      ),
    listObservations: async (memoryId, listOptions) =>
      execute(() => statements.listObservations.all(memoryId, listOptions?.afterSeq ?? 0).map(toObservation), memoryId),
    listMarkers: async (memoryId) => execute(() => statements.listMarkers.all(memoryId).map(toMarker), memoryId),
    findObservations: async (memoryId, options) =>
      execute(() => inspection.findObservations(memoryId, options), memoryId),
    correctObservation: async (input) => write(() => inspection.correctObservation(input, readNow()), input.memoryId),
    listScopes: async (query) => execute(() => inspection.listScopes(query)),
    listOperationPage: async (memoryId, options) =>
      execute(() => inspection.listOperationPage(memoryId, options), memoryId),
    enqueueOperation: async (input) => write(() => enqueueOperation(ctx, input), input.memoryId),
    claimOperation: async (input) => {
      // Most claims find nothing (the scope's work is done): check with a plain read first
      // and take the write lock only when there is something to claim. The claim itself
      // re-selects inside its transaction, so a race only costs an empty claim.
      const candidate = await execute(() => {
        const now = readNow();
        return input.memoryId === undefined
          ? (statements.claimCandidateOfAnyScope.get({ now }) ?? statements.claimHeadOfAnyScope.get({ now }))
          : statements.claimCandidateOfScope.get({ now, memoryId: input.memoryId });
      }, input.memoryId);
      return candidate === undefined ? undefined : write(() => claimOperationBody(ctx, input), input.memoryId);
    },
    importObservations: async (input) => write(() => importObservations(ctx, input), input.memoryId),
    completeObservation: async (input) => write(() => completeObservation(ctx, input), input.memoryId),
    completeReflection: async (input) => write(() => completeReflection(ctx, input), input.memoryId),
    listReflectionLinks: async (memoryId) =>
      execute(() => toReflectionLinks(statements.listReflectionLinks.all(memoryId)), memoryId),
    scopeGeneration: async (memoryId) => execute(() => statements.selectScopeGeneration.get(memoryId) ?? 0, memoryId),
    completeWithoutChange: async (input) => write(() => completeWithoutChange(ctx, input), input.memoryId),
    failOperation: async (input) => write(() => failOperation(ctx, input), input.memoryId),
    markOperationDead: async (input) =>
      write(() => toOperation(finishLeased(input, readNow(), 'dead', input.errorText)), input.memoryId),
    retryDeadOperation: async (input) =>
      write(() => {
        const row = statements.retryDeadOperation.get({
          memoryId: input.memoryId,
          operationId: input.operationId,
          now: readNow(),
        });
        return row && toOperation(row);
      }, input.memoryId),
    countDeadOperations: async (memoryId) =>
      execute(() => statements.countDeadOperationsOfScope.get(memoryId) ?? 0, memoryId),
    requeueStaleOperations: async (input) => write(() => requeueStaleOperations(ctx, input)),
    listOperations: async (memoryId) =>
      execute(() => statements.listOperations.all(memoryId).map(toOperation), memoryId),
    listOpenOperations: async (memoryId) =>
      execute(() => statements.listOpenOperations.all({ memoryId }).map(toOperation), memoryId),
    deleteSettledOperations: async (input) => {
      const { olderThanSeconds, limit } = operationRetentionArguments(input);
      return write(() =>
        retention.deleteSettled(shift(readNow(), 'olderThanSeconds', olderThanSeconds, 1000, '-'), limit),
      );
    },
    countPendingOperations: async (memoryId) =>
      execute(
        () =>
          (memoryId === undefined
            ? statements.countPendingOperations.get()
            : statements.countPendingOperationsOfScope.get(memoryId)) ?? 0,
        memoryId,
      ),
    setWorkingMemoryEntry: async (input) => write(() => setWorkingMemoryEntry(ctx, input), input.memoryId),
    getWorkingMemoryEntry: async (memoryId, key) =>
      execute(
        () =>
          entries.get(
            memoryId,
            key,
            () => {
              const row = statements.selectEntry.get(memoryId, key);
              return row && toWorkingMemoryEntry(row);
            },
            db.inTransaction,
          ),
        memoryId,
      ),
    deleteWorkingMemoryEntry: async (memoryId, key) =>
      write(() => deleteWorkingMemoryEntry(ctx, memoryId, key), memoryId),
    workingMemoryVersion: async (memoryId) =>
      execute(() => statements.selectWorkingMemoryVersion.get(memoryId) ?? 0, memoryId),
    purgeExpiredWorkingMemory: async (input) => {
      const { limit } = workingMemoryPurgeArguments(input);
      // Read first: a sweep that finds nothing due takes no write lock.
      if (!(await execute(() => expired.isDue(readNow())))) return 0;
      const deleted = await write(() => expired.purge(readNow(), limit));
      // The deleted values are zeroed in the file (secure_delete), but the log still holds the
      // pages that carried them until it restarts and is written over: emptied, as by forget.
      if (deleted > 0 && db.open && !tryEmptyWriteAheadLog(db)) emptyWriteAheadLogLater(db);
      return deleted;
    },
    listWorkingMemoryEntries: async (memoryId) =>
      execute(
        () =>
          statements.listEntries
            .all(memoryId)
            .map(([key, valueJson, createdAt, updatedAt, expiresAt]) =>
              Object.freeze({ key, valueJson, createdAt, updatedAt, expiresAt }),
            ),
        memoryId,
      ),
    forget: async (memoryId) => forgetAndEmptyLog(ctx, memoryId),
    dispose: async () => {
      if (!storeGuard.dispose()) return;
      try {
        // Writes already submitted still commit (or fail), another process's lock permitting.
        batcher.flush();
        for (let locked = batcher.lockedOut(); locked; locked = batcher.lockedOut()) await locked;
      } finally {
        // The worker lets go of the file first, so that this connection is its last and
        // checkpoints and removes the log as it closes (with the run store's, when it shares it).
        await checkpointer?.stop();
      }
      entries.close();
      try {
        release();
      } catch (error) {
        throw toStoreError(error, context);
      }
    },
  };
  return store;
}

function createSqliteStoreContext(
  db: Database,
  statements: SqliteStatements,
  context: { path: string; busyTimeoutMs: number },
  faultPoint: SqliteStoreOptions['faultPoint'],
  checkpointer: BackgroundCheckpoints | undefined,
) {
  const storeGuard = createStoreGuard({ store: STORE_NAME, toError: (error) => toStoreError(error, context) });
  const checkSchema = createSchemaCheck(db, STORE_NAME, SQLITE_SCHEMA_VERSION);
  const batcher = new SqliteWriteBatcher(
    db,
    (error) => toStoreError(error, context),
    checkpointer?.noteCommit,
    checkSchema,
    context.busyTimeoutMs,
  );
  const inspection = createSqliteInspection(db, statements);

  /**
   * Runs a read after every write submitted before it. Writes of `scope` (or of any scope) that
   * wait for another process's write lock are waited for, on a timer, never blocking; a read
   * that finds the file locked (another process recovering it, say) is tried again the same way.
   */
  const execute = <T>(work: () => T, scope?: string): T | Promise<T> => {
    storeGuard.run(() => batcher.flush());
    // NOTE: the usual case answers at once, without a promise: a get is a few microseconds, and
    // each promise layer would add to it.
    if (batcher.lockedOut(scope) === undefined) {
      try {
        return storeGuard.run(work);
      } catch (error) {
        if (!isBusyError(error)) throw error;
      }
    }
    return waitThenExecute(work, scope);
  };
  const waitThenExecute = async <T>(work: () => T, scope?: string): Promise<T> => {
    for (let locked = batcher.lockedOut(scope); locked; locked = batcher.lockedOut(scope)) await locked;
    return retryWhileBusy(() => storeGuard.run(work), context.busyTimeoutMs);
  };

  /** Runs a write of `scope` (any scope when undefined) in the next group commit (see SqliteWriteBatcher). */
  const write = <T>(work: () => T, scope?: string): Promise<T> =>
    storeGuard.disposed ? Promise.reject(disposedError()) : batcher.submit(work, scope);

  const readNow = (): string => {
    const now = statements.now.get();
    if (now === undefined) throw new StoreError({ store: STORE_NAME, message: 'SQLite returned no time.' });
    return now;
  };

  const recordOf = (memoryId: string): RecordRow => {
    const row = statements.selectRecord.get(memoryId);
    if (!row) throw missingRecordError(memoryId);
    return row;
  };

  const ensureRecord = (scope: Scope, memoryId: string, now: string): RecordRow => {
    statements.insertRecordIfMissing.run({ memoryId, ...pickScope(scope), now });
    return recordOf(memoryId);
  };

  const swapped = (row: RecordRow | undefined, memoryId: string): RecordRow => {
    if (!row) throw conflictError(memoryId);
    return row;
  };

  const finishLeased = (
    handle: LeaseHandle,
    now: string,
    status: 'applied' | 'failed' | 'queued' | 'dead',
    errorText: string,
    availableAt: string | null = null,
    refund = 0,
  ): OperationRow => {
    const row = statements.finishLeasedOperation.get({
      ...leaseOf(handle),
      status,
      errorText,
      availableAt,
      refund,
      now,
    });
    if (!row) throw leaseLostError(handle.operationId, handle.leaseOwner);
    return row;
  };

  /** Marks the leased operation applied; throws when the lease no longer holds. */
  const markApplied = (handle: LeaseHandle, now: string, note: string): void => {
    const { changes } = statements.finishLeasedOperation.run({
      ...leaseOf(handle),
      status: 'applied',
      errorText: note,
      availableAt: null,
      refund: 0,
      now,
    });
    if (changes !== 1) throw leaseLostError(handle.operationId, handle.leaseOwner);
  };

  const insertMarker = (
    row: Omit<MarkerRow, 'payload_json'> & { payload: Readonly<Record<string, unknown>> },
  ): void => {
    const { payload, ...columns } = row;
    statements.insertMarker.run({ ...columns, payload_json: JSON.stringify(payload) });
  };

  return {
    storeGuard,
    batcher,
    inspection,
    execute,
    write,
    readNow,
    recordOf,
    ensureRecord,
    swapped,
    finishLeased,
    markApplied,
    insertMarker,
    db,
    statements,
    context,
    faultPoint,
    checkpointer,
    checkSchema,
  };
}

type SqliteStoreContext = ReturnType<typeof createSqliteStoreContext>;

function updateSettings(ctx: SqliteStoreContext, input: Input<'updateSettings'>) {
  const { readNow, ensureRecord, swapped, statements } = ctx;

  const now = readNow();
  const current = ensureRecord(input.scope, input.memoryId, now);
  const config = parseConfig(JSON.stringify({ ...parseConfig(current.config_json), ...input.config }));
  const row = swapped(
    statements.updateSettings.get({
      memoryId: input.memoryId,
      stateVersion: current.state_version,
      enabled: input.enabled ? 1 : 0,
      configJson: JSON.stringify(config),
      now,
    }),
    input.memoryId,
  );
  statements.insertOperation.get({
    operationId: input.operationId,
    memoryId: input.memoryId,
    ...pickScope(input.scope),
    runId: input.runId,
    toolCallId: input.toolCallId,
    operationType: input.enabled ? 'enable' : 'disable',
    status: 'applied',
    payloadJson: JSON.stringify(settingsPayload(input.enabled, input.config)),
    attempt: 1,
    leaseOwner: null,
    leaseExpiresAt: null,
    now,
  });
  return toRecord(row);
}

/** Throws `SCOPE_FORGOTTEN` when the caller's generation is not the scope's any more. */
function checkGeneration(ctx: SqliteStoreContext, memoryId: string, expected: number | undefined): void {
  const { statements } = ctx;

  if (expected !== undefined && (statements.selectScopeGeneration.get(memoryId) ?? 0) !== expected)
    throw scopeForgottenError(STORE_NAME, memoryId);
}

/** `existing`: the record row when the caller just read it in this transaction; `now`, the time it read. */
function appendMessagesBody(
  ctx: SqliteStoreContext,
  input: Input<'appendMessages'>,
  existing?: RecordRow,
  now = ctx.readNow(),
) {
  const { ensureRecord, swapped, statements } = ctx;

  let row = existing ?? ensureRecord(input.scope, input.memoryId, now);
  let lastSeq = row.last_message_seq;
  let inserted = 0;
  let addedTokens = 0;
  for (const message of input.messages) {
    const { changes } = statements.insertMessage.run({
      memoryId: input.memoryId,
      seq: lastSeq + 1,
      messageKey: message.messageKey,
      role: message.role,
      name: message.name,
      toolCallId: message.toolCallId,
      content: message.content,
      tokenCount: message.tokenCount,
    });
    if (changes === 1) {
      lastSeq++;
      inserted++;
      addedTokens += message.tokenCount;
    }
  }
  if (inserted > 0) {
    // Messages observed since the last append lose their text now: they sit on the page
    // the new messages were just written to, so this costs no extra page write.
    const clearedThrough = row.messages_cleared_through_seq ?? 0;
    if (clearedThrough < row.observed_through_message_seq)
      statements.markMessagesObserved.run(input.memoryId, clearedThrough, row.observed_through_message_seq);
    row = swapped(
      statements.updateLastMessageSeq.get({
        memoryId: input.memoryId,
        stateVersion: row.state_version,
        lastMessageSeq: lastSeq,
        clearedThrough: row.observed_through_message_seq,
        addedTokens,
        now,
      }),
      input.memoryId,
    );
  }
  return { record: toRecord(row), inserted, unobservedTokens: row.unobserved_message_tokens };
}

function appendMessages(ctx: SqliteStoreContext, input: Input<'appendMessages'>) {
  checkGeneration(ctx, input.memoryId, input.generation);
  return appendMessagesBody(ctx, input);
}

function appendMessagesAndClaim(
  ctx: SqliteStoreContext,
  input: Parameters<NonNullable<MemoryStore['appendMessagesAndClaim']>>[0],
): AppendAndClaimResult {
  const { readNow, statements } = ctx;

  checkGeneration(ctx, input.memoryId, input.generation);
  const existing = statements.selectRecord.get(input.memoryId);
  const current = existing && toRecord(existing);
  const settings = input.settings(current);
  if (!settings.enabled) return { disabled: true, record: current };
  const now = readNow();
  const appended = appendMessagesBody(ctx, input, existing, now);
  if (appended.unobservedTokens < settings.minTokens) return appended;
  const fields = {
    ...input.operation,
    payload: observePayload(input.operation.payload, appended),
    scope: input.scope,
    memoryId: input.memoryId,
    operationType: 'observe' as const,
  };
  let operation: Operation;
  let claimed: Operation | undefined;
  if (statements.hasPendingOperation.get(input.memoryId) === undefined) {
    // Nothing of the scope is pending, so the new operation is the one a claim would take:
    // store it claimed, and spare the queue index an insert and a delete.
    operation = enqueueOperationBody(ctx, fields, {
      now,
      leaseOwner: input.leaseOwner,
      leaseExpiresAt: shift(now, 'leaseMs', input.leaseMs, 1),
    });
    claimed = operation;
  } else {
    operation = enqueueOperationBody(ctx, fields);
    claimed = claimOperationBody(ctx, {
      memoryId: input.memoryId,
      leaseOwner: input.leaseOwner,
      leaseMs: input.leaseMs,
    });
  }
  if (!claimed) return { ...appended, operation };
  const prefetched: PrefetchedObserve | undefined =
    claimed.operationType === 'observe'
      ? {
          operationId: claimed.operationId,
          record: appended.record,
          messages: oldestUnobserved(
            statements.listUnobservedMessages.iterate({
              memoryId: input.memoryId,
              throughSeq: appended.record.lastMessageSeq,
            }),
            input.batchTokens,
          ),
        }
      : undefined;
  return { ...appended, operation, claimed, ...(prefetched ? { prefetched } : {}) };
}

/** Enqueues; with `lease`, the operation is stored already claimed by its holder. */
function enqueueOperationBody(
  ctx: SqliteStoreContext,
  input: Input<'enqueueOperation'>,
  lease?: { now: string; leaseOwner: string; leaseExpiresAt: string },
) {
  const { readNow, statements } = ctx;

  const row = statements.insertOperation.get({
    operationId: input.operationId,
    memoryId: input.memoryId,
    ...pickScope(input.scope),
    runId: input.runId,
    toolCallId: input.toolCallId,
    operationType: input.operationType,
    status: lease ? 'processing' : 'queued',
    payloadJson: JSON.stringify(input.payload),
    attempt: lease ? 1 : 0,
    leaseOwner: lease?.leaseOwner ?? null,
    leaseExpiresAt: lease?.leaseExpiresAt ?? null,
    now: lease?.now ?? readNow(),
  });
  if (!row) throw new StoreError({ store: STORE_NAME, message: `Operation ${input.operationId} was not stored.` });
  return toOperation(row);
}

function enqueueOperation(ctx: SqliteStoreContext, input: Input<'enqueueOperation'>) {
  return enqueueOperationBody(ctx, input);
}

function claimOperationBody(ctx: SqliteStoreContext, input: Input<'claimOperation'>) {
  const { readNow, statements } = ctx;

  const now = readNow();
  const candidate =
    input.memoryId === undefined
      ? (statements.claimCandidateOfAnyScope.get({ now }) ?? statements.claimHeadOfAnyScope.get({ now }))
      : statements.claimCandidateOfScope.get({ now, memoryId: input.memoryId });
  if (candidate === undefined) return undefined;
  const leaseExpiresAt = shift(now, 'leaseMs', input.leaseMs, 1);
  // Only a scope's claim finds a processing head: one whose lease expired, taken over.
  const claim = 'status' in candidate && candidate.status === 'processing' ? 'takeOverOperation' : 'claimOperation';
  const row = statements[claim].get({
    memoryId: candidate.memory_id,
    scopeSequence: candidate.scope_sequence,
    leaseOwner: input.leaseOwner,
    leaseExpiresAt,
    now,
  });
  return row && toOperation(row);
}

function importObservations(
  ctx: SqliteStoreContext,
  input: NonNullable<MemoryStore['importObservations']> extends (input: infer I) => unknown ? I : never,
) {
  const { readNow, ensureRecord, statements } = ctx;

  const now = readNow();
  const { memoryId, operationId } = input;
  const current = ensureRecord(input.scope, memoryId, now);
  if (input.restore) checkRestoreTarget(STORE_NAME, memoryId, restoreTargetOf(current), input.restore);
  const plan = planImportApply(positionOf(current), input.observations);
  const observations = plan.observations.map((planned) =>
    insertObservation(statements, memoryId, operationId, planned, planned.createdAt ?? now),
  );
  const imported = applyPlanToRecord(ctx, memoryId, current, plan, observations.length, now);
  const row = input.restore ? restoreReflection(ctx, imported, input.restore, operationId, now) : imported;
  statements.insertOperation.get({
    operationId,
    memoryId,
    ...pickScope(input.scope),
    runId: input.runId,
    toolCallId: input.toolCallId,
    operationType: 'import',
    status: 'applied',
    payloadJson: JSON.stringify({ count: observations.length }),
    attempt: 1,
    leaseOwner: null,
    leaseExpiresAt: null,
    now,
  });
  return { record: toRecord(row), observations };
}

function restoreTargetOf(row: RecordRow): RestoreTarget {
  return {
    observationCount: row.observation_count,
    lastObservationSeq: row.last_observation_seq,
    hasReflection: row.active_reflection !== null,
    linkCount: row.supersession_count + row.contradiction_count,
  };
}

/** Adds planned links to the scope's set; a pair already there is kept as it was, and not counted. */
function insertLinks(
  statements: SqliteStoreContext['statements'],
  memoryId: string,
  operationId: string,
  now: string,
  links: readonly PlannedLink[],
): { addedSupersessions: number; addedContradictions: number } {
  const link = { memory_id: memoryId, operation_id: operationId, created_at: now };
  let addedSupersessions = 0;
  let addedContradictions = 0;
  for (const planned of links) {
    const added = statements.insertReflectionLink.run({
      ...link,
      kind: planned.kind,
      first_seq: planned.firstSeq,
      second_seq: planned.secondSeq,
      detail: planned.detail,
    }).changes;
    if (planned.kind === 'supersession') addedSupersessions += added;
    else addedContradictions += added;
  }
  return { addedSupersessions, addedContradictions };
}

/** A reflection as `applyReflection` binds it, with the compare-and-swap's version. */
function reflectionColumns(memoryId: string, stateVersion: number, reflection: StoredReflection) {
  return {
    memoryId,
    stateVersion,
    raw: reflection.raw,
    structuredJson: JSON.stringify(reflection.structured),
    tokenCount: reflection.tokenCount,
    throughSeq: reflection.throughSeq,
    createdAt: reflection.createdAt,
  };
}

/** Puts an imported reflection in force and adds its links, in the import's transaction. */
function restoreReflection(
  ctx: SqliteStoreContext,
  current: RecordRow,
  restore: ImportedReflection,
  operationId: string,
  now: string,
): RecordRow {
  const { statements, swapped } = ctx;
  const memoryId = current.memory_id;
  const plan = planRestoreLinks(restore, current.last_observation_seq);
  const { addedSupersessions, addedContradictions } = insertLinks(statements, memoryId, operationId, now, plan.links);
  const { reflection } = restore;
  if (reflection) {
    return swapped(
      statements.applyReflection.get({
        ...reflectionColumns(memoryId, current.state_version, reflection),
        addedSupersessions,
        addedContradictions,
        rejected: plan.rejected,
        now,
      }),
      memoryId,
    );
  }
  if (addedSupersessions + addedContradictions + plan.rejected === 0) return current;
  return swapped(
    statements.addLinkCounts.get({
      memoryId,
      stateVersion: current.state_version,
      addedSupersessions,
      addedContradictions,
      rejected: plan.rejected,
      now,
    }),
    memoryId,
  );
}

/** Moves the record past an applied plan of `count` observations (compare-and-swap on its state version). */
function applyPlanToRecord(
  ctx: SqliteStoreContext,
  memoryId: string,
  current: RecordRow,
  plan: { throughSeq: number; lastObservationSeq: number; tokens: number },
  count: number,
  now: string,
): RecordRow {
  const row = ctx.statements.applyObservations.get({
    memoryId,
    stateVersion: current.state_version,
    throughSeq: plan.throughSeq,
    count,
    lastObservationSeq: plan.lastObservationSeq,
    tokens: plan.tokens,
    now,
  });
  return ctx.swapped(row, memoryId);
}

function completeObservation(ctx: SqliteStoreContext, input: Input<'completeObservation'>) {
  const { readNow, recordOf, markApplied, insertMarker, statements, faultPoint } = ctx;

  const now = readNow();
  markApplied(input, now, input.note ?? '');
  const { memoryId, operationId } = input;
  const current = recordOf(memoryId);
  const plan = planObservationApply(positionOf(current), input);
  const observations = plan.observations.map((planned) =>
    insertObservation(statements, memoryId, operationId, planned, now),
  );
  faultPoint?.('mid_apply');
  for (const marker of plan.markers) insertMarker(markerRow(memoryId, operationId, marker, now));
  const applied = applyPlanToRecord(ctx, memoryId, current, plan, observations.length, now);
  const row = plan.links.length === 0 ? applied : addObservedLinks(ctx, applied, operationId, plan.links, now);
  faultPoint?.('before_mark_applied');
  return { record: toRecord(row), observations };
}

/** Adds the links an observe's observations ask for to the scope's set, and their counts to its record. */
function addObservedLinks(
  ctx: SqliteStoreContext,
  current: RecordRow,
  operationId: string,
  links: readonly PlannedLink[],
  now: string,
): RecordRow {
  const memoryId = current.memory_id;
  const { addedSupersessions, addedContradictions } = insertLinks(ctx.statements, memoryId, operationId, now, links);
  if (addedSupersessions + addedContradictions === 0) return current;
  return ctx.swapped(
    ctx.statements.addLinkCounts.get({
      memoryId,
      stateVersion: current.state_version,
      addedSupersessions,
      addedContradictions,
      rejected: 0,
      now,
    }),
    memoryId,
  );
}

function completeReflection(ctx: SqliteStoreContext, input: Input<'completeReflection'>) {
  const { readNow, recordOf, swapped, markApplied, insertMarker, statements } = ctx;

  const now = readNow();
  const { memoryId, operationId } = input;
  const found = statements.selectRecord.get(memoryId);
  const outdated = found !== undefined && isOutdatedReflection(input.correctionCount, found.correction_count);
  markApplied(input, now, outdated ? OUTDATED_REFLECTION_NOTE : '');
  const current = found ?? recordOf(memoryId);
  if (outdated) return toRecord(current);
  const { reflection } = input;
  const plan = planReflectionApply(positionOf(current), input);
  insertMarker(markerRow(memoryId, operationId, plan.marker, now));
  const { addedSupersessions, addedContradictions } = insertLinks(statements, memoryId, operationId, now, plan.links);
  const row = swapped(
    statements.applyReflection.get({
      ...reflectionColumns(memoryId, current.state_version, reflection),
      addedSupersessions,
      addedContradictions,
      rejected: plan.rejected,
      now,
    }),
    memoryId,
  );
  return toRecord(row);
}

function completeWithoutChange(ctx: SqliteStoreContext, input: Input<'completeWithoutChange'>) {
  const { readNow, markApplied } = ctx;

  markApplied(input, readNow(), input.note);
}

function failOperation(ctx: SqliteStoreContext, input: Input<'failOperation'>) {
  const { readNow, finishLeased } = ctx;

  const now = readNow();
  const row =
    input.retryAfterMs === undefined
      ? finishLeased(input, now, 'failed', input.errorText)
      : finishLeased(
          input,
          now,
          'queued',
          input.errorText,
          shift(now, 'retryAfterMs', input.retryAfterMs, 1),
          input.notAttempted ? 1 : 0,
        );
  return toOperation(row);
}

function requeueStaleOperations(ctx: SqliteStoreContext, input: Input<'requeueStaleOperations'>) {
  const { readNow, statements } = ctx;

  const now = readNow();
  return statements.requeueStaleOperations.run({
    now,
    cutoff: shift(now, 'graceSeconds', input.graceSeconds, 1000, '-'),
  }).changes;
}

// The scope's entry count and bytes live with its working-memory version and change in
// the same transaction as the entries, so the limits need no pass over every entry. So does
// its earliest expiry: never later than any entry's, so a scope whose earliest expiry has not
// passed holds no expired entry, and a set there runs no statement for expiry.
function setWorkingMemoryEntry(ctx: SqliteStoreContext, input: Input<'setWorkingMemoryEntry'>) {
  const { ensureRecord, statements } = ctx;

  const { memoryId, key, valueJson, limits } = input;
  let basis = statements.entrySetBasis.get({ memoryId, key });
  if (basis && basis[6] !== null && basis[6] <= basis[4]) {
    purgeExpiredEntries(ctx, memoryId, basis[0] ?? 0, basis[1] ?? 0, basis[4]);
    basis = statements.entrySetBasis.get({ memoryId, key });
  }
  if (!basis) throw new StoreError({ store: STORE_NAME, message: 'SQLite returned no working-memory usage.' });
  const [storedCount, storedBytes, previous, createdAt, now, before, storedEarliest] = basis;
  // A scope's first entry gives it a record, so the scope is listed.
  if (storedCount === null) ensureRecord(input.scope, memoryId, now);
  const count = storedCount ?? 0;
  if (previous === null && count >= limits.maxEntries)
    throw workingMemoryLimitError('entries', count + 1, limits.maxEntries);
  const total = (storedBytes ?? 0) - (previous ?? 0) + utf8Length(key) + utf8Length(valueJson);
  if (total > limits.maxTotalBytes) throw workingMemoryLimitError('total_bytes', total, limits.maxTotalBytes);
  const expiresAt = input.ttlMs === undefined ? null : new Date(Date.parse(now) + input.ttlMs).toISOString();
  // The basis was read under the write lock, after any purge: the entry is there exactly when it found it.
  if (previous === null) statements.upsertEntry.run({ memoryId, key, valueJson, now, expiresAt });
  else statements.replaceEntry.run(valueJson, now, expiresAt, memoryId, key);
  const after = newWorkingMemoryVersion();
  // A replaced entry's expiry may have been the earliest: the one kept is then early, which
  // costs one purge that finds nothing and sets it right.
  const earliest =
    expiresAt !== null && (storedEarliest === null || expiresAt < storedEarliest) ? expiresAt : storedEarliest;
  writeUsage(statements, memoryId, after, previous === null ? count + 1 : count, total, earliest, storedEarliest);
  return Object.freeze({
    key,
    valueJson,
    createdAt: createdAt ?? now,
    updatedAt: now,
    expiresAt,
    versions: Object.freeze({ before: before ?? 0, after }),
  });
}

/**
 * Stores a scope's usage with a new version; its earliest expiry is written only when it
 * changes, so a set that keeps it commits no page of the index on it.
 */
function writeUsage(
  statements: SqliteStatements,
  memoryId: string,
  version: number,
  count: number,
  bytes: number,
  earliest: string | null,
  storedEarliest: string | null,
): void {
  if (earliest === storedEarliest) statements.writeWorkingMemoryUsageKeepingExpiry.run(memoryId, version, count, bytes);
  else statements.writeWorkingMemoryUsage.run(memoryId, version, count, bytes, earliest);
}

/** Deletes the scope's entries expired at `now` and stores its usage and earliest expiry without them. */
function purgeExpiredEntries(
  ctx: SqliteStoreContext,
  memoryId: string,
  count: number,
  bytes: number,
  now: string,
): void {
  const { statements } = ctx;

  const removed = statements.purgeExpiredEntries.all(memoryId, now);
  const freed = removed.reduce((sum, entryBytes) => sum + entryBytes, 0);
  const earliest = statements.selectEarliestExpiry.get(memoryId) ?? null;
  statements.writeWorkingMemoryUsage.run(
    memoryId,
    newWorkingMemoryVersion(),
    count - removed.length,
    bytes - freed,
    earliest,
  );
}

function deleteWorkingMemoryEntry(ctx: SqliteStoreContext, memoryId: string, key: string): boolean {
  const { statements } = ctx;

  const removed = statements.deleteEntry.get(memoryId, key);
  const usage = statements.workingMemoryUsage.get(memoryId);
  if (removed === undefined) {
    if (usage && usage[2] !== null && usage[2] <= usage[3])
      purgeExpiredEntries(ctx, memoryId, usage[0], usage[1], usage[3]);
    return false;
  }
  const [removedBytes, removedExpiry] = removed;
  const [count, bytes, earliest, now] = usage ?? [1, removedBytes, null, ''];
  if (earliest !== null && earliest <= now) purgeExpiredEntries(ctx, memoryId, count - 1, bytes - removedBytes, now);
  else
    statements.writeWorkingMemoryUsageKeepingExpiry.run(
      memoryId,
      newWorkingMemoryVersion(),
      count - 1,
      bytes - removedBytes,
    );
  // An expired entry was already gone for readers: deleting its row removes nothing they saw.
  return removedExpiry === null || removedExpiry > now;
}

function forget(ctx: SqliteStoreContext, memoryId: string) {
  const { statements } = ctx;

  for (const statement of statements.forgetScope) statement.run(memoryId);
  statements.writeScopeGeneration.run(memoryId, newScopeGeneration());
}

function leaseOf(handle: LeaseHandle): { operationId: string; memoryId: string; leaseOwner: string } {
  return { operationId: handle.operationId, memoryId: handle.memoryId, leaseOwner: handle.leaseOwner };
}

function pickScope(scope: Scope): { tenantId: string; conversationId: string; agentId: string } {
  return { tenantId: scope.tenantId, conversationId: scope.conversationId, agentId: scope.agentId };
}

/** A bad option is the caller's mistake, not a storage failure to retry: `OPTION_INVALID`. */
function invalidOption(name: string, problem: string): HarnessMemoryError {
  return optionError('createSqliteStore', name, problem, 'Leave it out for the default.');
}

/**
 * Forgets the scope, then copies the zeroed pages into the file and empties the WAL, so the
 * old text is gone from both. Nothing here blocks the event loop on another connection: the
 * delete waits for the write lock as any write does, and emptying the log (which a reader of
 * an older snapshot, in any process, or another connection's checkpoint holds up) is tried on
 * a timer until the busy timeout has passed. The scope is forgotten once the delete commits;
 * if the log is still held then, a `HARNESS_MEMORY_FORGET_LOG` warning says old copies may
 * remain in it, and it is emptied as soon as it can be (at the latest when the last connection
 * closes).
 */
async function forgetAndEmptyLog(ctx: SqliteStoreContext, memoryId: string): Promise<void> {
  const { db, context, write } = ctx;
  await write(() => forget(ctx, memoryId), memoryId);
  if (await emptyWriteAheadLogWithin(db, context.busyTimeoutMs)) return;
  emptyWriteAheadLogLater(db);
  process.emitWarning(
    `Scope ${memoryId} was deleted, but another connection kept the write-ahead log from being emptied within ` +
      `${context.busyTimeoutMs} ms, so old copies may remain in ${context.path}-wal until it lets go; the log is ` +
      `emptied then (at the latest when the store closes).`,
    { code: FORGET_LOG_WARNING_CODE },
  );
}

/** The warning of a forget whose write-ahead log could not be emptied at once. */
const FORGET_LOG_WARNING_CODE = 'HARNESS_MEMORY_FORGET_LOG';

// Moves a database time by a caller's duration (arithmetic on the database's own clock
// reading, in the format it writes). Negative or non-finite durations are refused: a
// negative grace would requeue live leases, a NaN lease would never expire.
function shift(time: string, name: string, value: number, unitMs: number, direction: '+' | '-' = '+'): string {
  const base = Date.parse(time);
  const moved =
    Number.isFinite(value) && value >= 0
      ? base + (direction === '+' ? 1 : -1) * Math.round(value * unitMs)
      : Number.NaN;
  if (!Number.isFinite(base) || !(moved >= EARLIEST_TIME && moved <= LATEST_TIME)) {
    throw new StoreError({
      store: STORE_NAME,
      message: `${name} must be a finite, non-negative number within range; got ${value}.`,
      data: { [name]: value },
    });
  }
  return new Date(moved).toISOString();
}

/** A marker of the apply plan as its row. */
function markerRow(memoryId: string, operationId: string, marker: PlannedMarker, now: string) {
  return {
    marker_id: marker.markerId,
    memory_id: memoryId,
    marker_type: marker.markerType,
    cycle_id: operationId,
    message_index_start: marker.messageSeqStart,
    message_index_end: marker.messageSeqEnd,
    token_count: marker.tokenCount,
    payload: marker.payload,
    created_at: now,
  };
}

/** Inserts one observation of an apply plan and returns it as the port hands it out. */
function insertObservation(
  statements: SqliteStatements,
  memoryId: string,
  operationId: string,
  planned: PlannedObservation,
  createdAt: string,
): Observation {
  const row: ObservationRow = {
    memory_id: memoryId,
    seq: planned.seq,
    content: planned.content,
    token_count: planned.tokenCount,
    importance: planned.importance,
    created_at: createdAt,
    source_start_seq: planned.sourceStartSeq,
    source_end_seq: planned.sourceEndSeq,
    source: planned.source,
    source_seqs_json: seqsJson(planned.sourceMessageSeqs),
    operation_id: operationId,
  };
  statements.insertObservation.run(row);
  return toObservation(row);
}
