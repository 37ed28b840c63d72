/**
 * The Postgres store: both memories in one database shared by many harness replicas. Every
 * read-then-write runs in one transaction holding the scope's advisory lock; leases,
 * backoff and stale recovery use the database clock.
 * @module
 */
import type { StoreInput as Input } from '../_memory-rows.js';
import type { PoolClient } from 'pg';
import { StoreError } from '../../core/errors.js';
import type { Observation, StoredReflection } from '../../core/observation.js';
import type { Scope } from '../../core/scope.js';
import { workingMemoryLimitError } from '../../core/working-memory.js';
import type {
  AppendAndClaimResult,
  AppendMessagesResult,
  ImportedReflection,
  LeaseHandle,
  MemoryStore,
  PrefetchedObserve,
} from '../store.js';
import { createPostgresInspection } from './postgres-inspection.js';
import {
  createPostgresObservePath,
  markerParameters,
  messageColumns,
  observationColumns,
} from './postgres-observe-path.js';
import {
  beginWithScopeLock,
  callReadCommitted,
  openPostgresConnection,
  query,
  readStatement,
  rowFromJson,
  scopeLockClass,
  toStoreError,
  transaction,
  writeStatement,
} from './postgres-connection.js';
import type { PostgresConnection, PostgresConnectionOptions, Queryable } from './postgres-connection.js';
import { migratePostgresSchema } from './postgres-migrations.js';
import { createScopeWrites } from './postgres-scope-writes.js';
import { acquireReadLane, poolReads } from './postgres-read-lane.js';
import { createStoreGuard } from '../_store-guard.js';
import { observePayload, settingsPayload } from '../_operation-payloads.js';
import { planImportApply, planObservationApply, planReflectionApply, type PlannedLink } from '../apply-plan.js';
import { isOutdatedReflection, OUTDATED_REFLECTION_NOTE } from '../correction-plan.js';
import {
  newScopeGeneration,
  newWorkingMemoryVersion,
  parseConfig,
  toMarker,
  toObservation,
  toOperation,
  toRecord,
  toReflectionLinks,
  toStoredMessage,
  toWorkingMemoryEntry,
} from '../_memory-rows.js';
import { toApplyPosition } from '../_memory-rows.js';
import type {
  MarkerRow,
  MessageRow,
  ObservationRow,
  OperationRow,
  RecordRow,
  ReflectionLinkRow,
  WorkingMemoryRow,
} from '../_memory-rows.js';
import { scopeForgottenError } from '../_store-errors.js';
import { checkRestoreTarget, planRestoreLinks } from '../_import-restore.js';
import type { RestoreTarget } from '../_import-restore.js';
import { buildStatements } from './postgres-statements.js';
import { createPostgresOperationRetention } from './postgres-operation-retention.js';
import { operationRetentionArguments } from '../_operation-retention.js';
import { workingMemoryPurgeArguments } from '../_working-memory-purge.js';
import { createPostgresWorkingMemoryPurge } from './postgres-working-memory-purge.js';

/** Name of this adapter. */
export const STORE_NAME = 'postgres';

/**
 * Options of {@link createPostgresStore}: `connectionString` (or an existing `pool`),
 * `schema` (default `public`, created if missing) and `max` (pool size, default 10).
 */
export type PostgresStoreOptions = PostgresConnectionOptions;

/**
 * Creates a store on a Postgres database: opens a pool (or adopts `pool`), then applies the
 * migrations under an advisory lock, so replicas may start together. `dispose()` ends the
 * pool only if the store created it.
 * @example
 * const store = await createPostgresStore({ connectionString: process.env.DATABASE_URL, schema: 'harness' });
 */
export async function createPostgresStore(options: PostgresStoreOptions): Promise<MemoryStore> {
  const connection = openPostgresConnection(options, STORE_NAME);
  try {
    await migratePostgresSchema(connection.pool, connection.schema);
  } catch (error) {
    if (connection.ownsPool) await connection.pool.end().catch(() => {});
    throw toStoreError(error, STORE_NAME, connection.schema);
  }
  return buildStore(connection);
}

function buildStore(connection: PostgresConnection): MemoryStore {
  const ctx = createPostgresStoreContext(connection);
  const { storeGuard, pool } = ctx;
  const store: MemoryStore = {
    specificationVersion: 'v1',
    name: STORE_NAME,
    supportsRestore: true,
    dispose: async () => {
      if (!storeGuard.dispose()) return;
      await ctx.lane.release();
      if (connection.ownsPool) await pool.end();
    },
    ...recordAndMessageMethods(ctx),
    ...importMethods(ctx),
    ...applyMethods(ctx),
    ...operationLogMethods(ctx),
    ...listingMethods(ctx),
    ...workingMemoryMethods(ctx),
  };
  return store;
}

/** What `wm_set_entry` answers: the stored entry, or the limit the set would break. */
interface EntrySetAnswer {
  readonly entry?: unknown;
  /** The scope's working-memory version before the set (0 when it had none). */
  readonly previous_version?: number;
  readonly limit?: 'entries' | 'total_bytes';
  readonly actual: number;
  readonly max: number;
}

const ENTRY_TIMES = ['created_at', 'updated_at', 'expires_at'] as const;

// Observations read on the read lane at most at once (see listObservations).
const LANE_PAGE = 64;

/** What every part of the store shares: the pool, the statements, the guard and the query helpers. */
function createPostgresStoreContext(connection: PostgresConnection) {
  const { pool, schema } = connection;
  const sql = buildStatements(connection.prefix);
  const inspection = createPostgresInspection(connection.prefix);
  // Why an advisory lock per scope, not a row lock on the record: working-memory entries and
  // queued operations exist without a record row, and a lock must exist before the first
  // row does. The lock lasts until commit, so a scope's seq assignment (messages, operations,
  // observations) and its limit checks see every earlier writer's committed rows. It is
  // taken with BEGIN, in one round trip (beginWithScopeLock).
  const storeGuard = createStoreGuard({
    store: STORE_NAME,
    toError: (error) => toStoreError(error, STORE_NAME, schema),
  });
  const execute = <T>(work: () => Promise<T>): Promise<T> => storeGuard.runAsync(work);
  // A scope's writes wait for each other here, not on pooled connections (see postgres-scope-writes.ts).
  const scopeWrites = createScopeWrites();
  const scopeWrite = <T>(memoryId: string, work: () => Promise<T>): Promise<T> =>
    execute(() => scopeWrites.run(memoryId, work));
  const rows = async <R extends object>(
    target: Queryable,
    text: string,
    values: readonly unknown[] = [],
  ): Promise<R[]> => (await query<R & Record<string, unknown>>(target, text, values)).rows;
  const first = async <R extends object>(
    target: Queryable,
    text: string,
    values: readonly unknown[] = [],
  ): Promise<R | undefined> => (await rows<R>(target, text, values))[0];
  // Reads on the pool, outside any transaction: one that lost its connection is made again on
  // a new one (readStatement). Writes never go through these.
  const poolRows = async <R extends object>(text: string, values: readonly unknown[] = []): Promise<R[]> =>
    (await readStatement<R & Record<string, unknown>>(pool, text, values)).rows;
  const poolFirst = async <R extends object>(text: string, values: readonly unknown[] = []): Promise<R | undefined> =>
    (await poolRows<R>(text, values))[0];
  // The short reads of a turn go pipelined on the pool's read lane (one round trip together).
  const lane = connection.readLane ? acquireReadLane(pool) : poolReads(pool);
  const readRows = async <R extends object>(text: string, values: readonly unknown[]): Promise<R[]> =>
    (await lane.read<R & Record<string, unknown>>(text, values)).rows;
  const readFirst = async <R extends object>(text: string, values: readonly unknown[]): Promise<R | undefined> =>
    (await readRows<R>(text, values))[0];
  const observePath = createPostgresObservePath(pool, schema, connection.prefix, async (memoryId) => {
    const row = await readFirst<RecordRow>(sql.selectRecord, [memoryId]);
    return row && toRecord(row);
  });

  /** A transaction holding the scope's lock from its first statement. */
  const inScope = <T>(memoryId: string, work: (client: PoolClient) => Promise<T>): Promise<T> =>
    transaction(pool, work, { begin: (client) => beginWithScopeLock(schema, 'memory', memoryId, client) });

  const memoryLockClass = scopeLockClass(schema, 'memory');
  return {
    sql,
    inspection,
    observePath,
    storeGuard,
    execute,
    scopeWrite,
    rows,
    first,
    poolRows,
    poolFirst,
    lane,
    readRows,
    readFirst,
    inScope,
    pool,
    schema,
    connection,
    memoryLockClass,
  };
}

type PostgresStoreContext = ReturnType<typeof createPostgresStoreContext>;

/**
 * Throws `SCOPE_FORGOTTEN` when the caller's generation is not the scope's any more; call it holding the
 * scope's lock.
 */
async function checkGeneration(
  ctx: PostgresStoreContext,
  client: PoolClient,
  memoryId: string,
  expected: number | undefined,
): Promise<void> {
  const { sql, first } = ctx;

  if (expected === undefined) return;
  const found = await first<{ generation: number }>(client, sql.selectScopeGeneration, [memoryId]);
  if ((found?.generation ?? 0) !== expected) throw scopeForgottenError(STORE_NAME, memoryId);
}

/** Appends messages inside a transaction that holds the scope's lock. */
async function appendIn(
  ctx: PostgresStoreContext,
  client: PoolClient,
  input: Input<'appendMessages'>,
): Promise<AppendMessagesResult> {
  const { sql, first } = ctx;

  await checkGeneration(ctx, client, input.memoryId, input.generation);
  let row = await ensureRecord(ctx, client, input.scope, input.memoryId);
  let inserted = 0;
  let addedTokens = 0;
  if (input.messages.length > 0) {
    const result = await query<{ token_count: number }>(client, sql.insertMessages, [
      input.memoryId,
      ...messageColumns(input.messages),
      row.last_message_seq,
    ]);
    inserted = result.rows.length;
    for (const added of result.rows) addedTokens += added.token_count;
  }
  if (inserted > 0) {
    row = swapped(
      ctx,
      await first<RecordRow>(client, sql.updateLastMessageSeq, [
        input.memoryId,
        row.state_version,
        row.last_message_seq + inserted,
        addedTokens,
      ]),
      input.memoryId,
    );
  }
  return { record: toRecord(row), inserted, unobservedTokens: row.unobserved_message_tokens };
}

async function ensureRecord(
  ctx: PostgresStoreContext,
  client: PoolClient,
  scope: Scope,
  memoryId: string,
): Promise<RecordRow> {
  const { sql, first } = ctx;

  const row = await first<RecordRow>(client, sql.ensureRecord, [
    memoryId,
    scope.tenantId,
    scope.conversationId,
    scope.agentId,
  ]);
  if (!row)
    throw new StoreError({
      store: STORE_NAME,
      message: `The record of scope ${memoryId} could not be created.`,
      data: { memoryId },
    });
  return row;
}

async function recordOf(ctx: PostgresStoreContext, client: PoolClient, memoryId: string): Promise<RecordRow> {
  const { sql, first } = ctx;

  const row = await first<RecordRow>(client, sql.selectRecord, [memoryId]);
  if (!row)
    throw new StoreError({
      store: STORE_NAME,
      message: `No record exists for scope ${memoryId}.`,
      data: { memoryId },
    });
  return row;
}

function swapped(ctx: PostgresStoreContext, row: RecordRow | undefined, memoryId: string): RecordRow {
  if (row) return row;
  throw new StoreError({
    store: STORE_NAME,
    code: 'STORE_CONFLICT',
    message: `The record of scope ${memoryId} changed during the update; retry the operation.`,
    data: { memoryId },
  });
}

function leaseLost(ctx: PostgresStoreContext, handle: LeaseHandle): StoreError {
  return new StoreError({
    store: STORE_NAME,
    code: 'OPERATION_LEASE_LOST',
    message: `Operation ${handle.operationId} is no longer leased to ${handle.leaseOwner}; its result is discarded.`,
    data: { operationId: handle.operationId },
  });
}

async function finishLeased(
  ctx: PostgresStoreContext,
  target: Queryable,
  handle: LeaseHandle,
  status: 'applied' | 'failed' | 'queued' | 'dead',
  errorText: string,
  retrySeconds: number | null = null,
  refund = 0,
): Promise<OperationRow> {
  const { sql, pool } = ctx;

  const values = [handle.operationId, handle.leaseOwner, status, errorText, retrySeconds, refund];
  const row = (
    target === pool
      ? await writeStatement<OperationRow>(pool, sql.finishLeased, values)
      : await query<OperationRow>(target, sql.finishLeased, values)
  ).rows[0];
  if (!row) throw leaseLost(ctx, handle);
  return row;
}

/**
 * Applies a leased operation: takes its scope's lock with `BEGIN` (before any row lock, the
 * order every writer follows, so apply and forget cannot deadlock), checks and ends the
 * lease, then runs `work` in the same transaction. A lapsed lease rolls everything back.
 * `note`, the applied operation's text, may be read in the transaction, under the lock.
 */
function applyLeased<T>(
  ctx: PostgresStoreContext,
  handle: LeaseHandle,
  work: (client: PoolClient, operation: OperationRow) => Promise<T>,
  note: string | ((client: PoolClient) => Promise<string>) = '',
): Promise<T> {
  const { pool, schema } = ctx;

  return transaction(
    pool,
    async (client) => {
      const text = typeof note === 'string' ? note : await note(client);
      const operation = await finishLeased(ctx, client, handle, 'applied', text);
      // The handle names the scope locked above; an operation of another scope is not this lease.
      if (operation.memory_id !== handle.memoryId) throw leaseLost(ctx, handle);
      return work(client, operation);
    },
    { begin: (client) => beginWithScopeLock(schema, 'memory', handle.memoryId, client) },
  );
}

async function insertOperation(
  ctx: PostgresStoreContext,
  client: PoolClient,
  input: Input<'enqueueOperation'>,
  status: 'queued' | 'applied',
  attempt: number,
): Promise<OperationRow> {
  const { sql, first } = ctx;

  const { scope } = input;
  const row = await first<OperationRow>(client, sql.insertOperation, [
    input.operationId,
    input.memoryId,
    scope.tenantId,
    scope.conversationId,
    scope.agentId,
    input.runId,
    input.toolCallId,
    input.operationType,
    status,
    JSON.stringify(input.payload),
    attempt,
  ]);
  if (!row) throw new StoreError({ store: STORE_NAME, message: `Operation ${input.operationId} was not stored.` });
  return row;
}

// A caller's duration in seconds for make_interval. Negative or non-finite durations are
// refused: a negative grace would requeue live leases, a NaN lease would never expire.
function seconds(name: string, value: number, unitMs: number): number {
  if (!Number.isFinite(value) || value < 0) {
    throw new StoreError({
      store: STORE_NAME,
      message: `${name} must be a finite, non-negative number; got ${value}.`,
      data: { [name]: value },
    });
  }
  return (value * unitMs) / 1000;
}

/** Records, settings and the messages of a scope. */
function recordAndMessageMethods(
  ctx: PostgresStoreContext,
): Pick<
  MemoryStore,
  | 'getRecord'
  | 'updateSettings'
  | 'appendMessages'
  | 'appendMessagesAndClaim'
  | 'listUnobservedMessages'
  | 'listObservations'
  | 'listMarkers'
> {
  const { sql, execute, scopeWrite, first, poolRows, readRows, readFirst, inScope, observePath } = ctx;
  return {
    getRecord: (memoryId) =>
      execute(async () => {
        const row = await readFirst<RecordRow>(sql.selectRecord, [memoryId]);
        const record = row && toRecord(row);
        observePath.noteRecord(memoryId, record);
        return record;
      }),

    updateSettings: (input) =>
      scopeWrite(input.memoryId, () =>
        inScope(input.memoryId, async (client) => {
          const current = await ensureRecord(ctx, client, input.scope, input.memoryId);
          const config = parseConfig({ ...parseConfig(current.config_json), ...input.config });
          const row = swapped(
            ctx,
            await first<RecordRow>(client, sql.updateSettings, [
              input.memoryId,
              current.state_version,
              input.enabled,
              JSON.stringify(config),
            ]),
            input.memoryId,
          );
          const payload = settingsPayload(input.enabled, input.config);
          await insertOperation(
            ctx,
            client,
            { ...input, operationType: input.enabled ? 'enable' : 'disable', payload },
            'applied',
            1,
          );
          return toRecord(row);
        }),
      ),

    appendMessages: (input) =>
      scopeWrite(input.memoryId, () => inScope(input.memoryId, (client) => appendIn(ctx, client, input))),

    // One statement (a database function) when its premise holds; otherwise one transaction:
    // append, then (at the threshold) enqueue and claim.
    appendMessagesAndClaim: (input) =>
      scopeWrite(input.memoryId, async () => {
        const fast = await observePath.appendMessagesAndClaim(input);
        return fast ?? appendAndClaimInTransaction(ctx, input);
      }),

    listUnobservedMessages: (memoryId, throughSeq, options = {}) =>
      execute(async () =>
        (await poolRows<MessageRow>(sql.listUnobservedMessages, [memoryId, throughSeq, options.maxTokens ?? null])).map(
          toStoredMessage,
        ),
      ),
    // What a turn reads after a write (the few observations after the ones held) takes the
    // lane, a page at most; a longer tail, or the whole log, is read on the pool, so it never
    // holds up other reads.
    listObservations: (memoryId, listOptions) =>
      execute(async () => {
        const afterSeq = listOptions?.afterSeq ?? 0;
        if (afterSeq === 0)
          return (await poolRows<ObservationRow>(sql.listObservations, [memoryId, 0])).map(toObservation);
        const page = await readRows<ObservationRow>(sql.listObservationsPage, [memoryId, afterSeq, LANE_PAGE]);
        const rest =
          page.length < LANE_PAGE
            ? []
            : await poolRows<ObservationRow>(sql.listObservations, [memoryId, page.at(-1)?.seq ?? afterSeq]);
        return [...page, ...rest].map(toObservation);
      }),
    listMarkers: (memoryId) =>
      execute(async () => (await poolRows<MarkerRow>(sql.listMarkers, [memoryId])).map(toMarker)),
  };
}

/** The statement-by-statement `appendMessagesAndClaim`: one transaction holding the scope's lock. */
function appendAndClaimInTransaction(
  ctx: PostgresStoreContext,
  input: Input<'appendMessagesAndClaim'>,
): Promise<AppendAndClaimResult> {
  const { sql, rows, first, inScope, observePath } = ctx;
  return inScope(input.memoryId, async (client): Promise<AppendAndClaimResult> => {
    await checkGeneration(ctx, client, input.memoryId, input.generation);
    const existing = await first<RecordRow>(client, sql.selectRecord, [input.memoryId]);
    const current = existing && toRecord(existing);
    observePath.noteRecord(input.memoryId, current);
    const settings = input.settings(current);
    if (!settings.enabled) return { disabled: true, record: current };
    // The generation was checked above, under the same lock.
    const { generation: _checked, ...unchecked } = input;
    const appended = await appendIn(ctx, client, unchecked);
    if (appended.unobservedTokens < settings.minTokens) return appended;
    const operation = toOperation(
      await insertOperation(
        ctx,
        client,
        {
          ...input.operation,
          payload: observePayload(input.operation.payload, appended),
          scope: input.scope,
          memoryId: input.memoryId,
          operationType: 'observe',
        },
        'queued',
        0,
      ),
    );
    const claimedRow = await first<OperationRow>(client, sql.claimOfScope, [
      input.leaseOwner,
      seconds('leaseMs', input.leaseMs, 1),
      input.memoryId,
    ]);
    if (!claimedRow) return { ...appended, operation };
    const claimed = toOperation(claimedRow);
    // What the worker reads first, read here: two round trips fewer for the apply.
    const prefetched: PrefetchedObserve | undefined =
      claimed.operationType === 'observe'
        ? {
            operationId: claimed.operationId,
            record: appended.record,
            messages: (
              await rows<MessageRow>(client, sql.listUnobservedMessages, [
                input.memoryId,
                appended.record.lastMessageSeq,
                input.batchTokens ?? null,
              ])
            ).map(toStoredMessage),
          }
        : undefined;
    return { ...appended, operation, claimed, ...(prefetched ? { prefetched } : {}) };
  });
}

/** Imports, and the reads of the supersession set and the generation. */
function importMethods(
  ctx: PostgresStoreContext,
): Pick<MemoryStore, 'importObservations' | 'listReflectionLinks' | 'scopeGeneration'> {
  const { sql, execute, scopeWrite, rows, first, poolRows, readFirst, inScope } = ctx;
  return {
    importObservations: (input) =>
      scopeWrite(input.memoryId, () =>
        inScope(input.memoryId, async (client) => {
          const { memoryId } = input;
          const current = await ensureRecord(ctx, client, input.scope, memoryId);
          if (input.restore) checkRestoreTarget(STORE_NAME, memoryId, restoreTargetOf(current), input.restore);
          const plan = planImportApply(toApplyPosition(current), input.observations);
          const planned = plan.observations;
          const inserted =
            planned.length === 0
              ? []
              : await rows<ObservationRow>(client, sql.importObservations, [
                  memoryId,
                  planned.map((item) => item.seq),
                  input.operationId,
                  ...observationColumns(planned),
                  planned.map((item) => item.createdAt ?? null),
                ]);
          const imported = swapped(
            ctx,
            await first<RecordRow>(client, sql.applyObservations, [
              memoryId,
              current.state_version,
              plan.throughSeq,
              inserted.length,
              plan.lastObservationSeq,
              plan.tokens,
            ]),
            memoryId,
          );
          const row = input.restore
            ? await restoreReflection(ctx, client, imported, input.restore, input.operationId)
            : imported;
          await insertOperation(
            ctx,
            client,
            { ...input, operationType: 'import', payload: { count: inserted.length } },
            'applied',
            1,
          );
          return { record: toRecord(row), observations: inserted.map(toObservation).sort((a, b) => a.seq - b.seq) };
        }),
      ),

    listReflectionLinks: (memoryId) =>
      execute(async () => toReflectionLinks(await poolRows<ReflectionLinkRow>(sql.listReflectionLinks, [memoryId]))),

    scopeGeneration: (memoryId) =>
      execute(
        async () => (await readFirst<{ generation: number }>(sql.selectScopeGeneration, [memoryId]))?.generation ?? 0,
      ),
  };
}

function restoreTargetOf(row: RecordRow): RestoreTarget {
  return {
    observationCount: Number(row.observation_count),
    lastObservationSeq: Number(row.last_observation_seq),
    hasReflection: row.active_reflection !== null,
    linkCount: Number(row.supersession_count) + Number(row.contradiction_count),
  };
}

/** Adds planned links to the scope's set in one statement; counts those that were not there. */
async function insertLinks(
  ctx: PostgresStoreContext,
  client: PoolClient,
  memoryId: string,
  operationId: string,
  links: readonly PlannedLink[],
): Promise<{ supersessions: number; contradictions: number }> {
  if (links.length === 0) return { supersessions: 0, contradictions: 0 };
  const added = await ctx.rows<{ kind: string }>(client, ctx.sql.insertReflectionLinks, [
    memoryId,
    links.map((link) => link.kind),
    links.map((link) => link.firstSeq),
    links.map((link) => link.secondSeq),
    links.map((link) => link.detail),
    operationId,
  ]);
  const supersessions = added.filter((link) => link.kind === 'supersession').length;
  return { supersessions, contradictions: added.length - supersessions };
}

/** `applyReflection`'s parameters: the reflection, the compare-and-swap's version, the link counts. */
function reflectionParams(
  memoryId: string,
  stateVersion: unknown,
  reflection: StoredReflection,
  added: { supersessions: number; contradictions: number },
  rejected: number,
): unknown[] {
  return [
    memoryId,
    stateVersion,
    reflection.raw,
    JSON.stringify(reflection.structured),
    reflection.tokenCount,
    reflection.throughSeq,
    reflection.createdAt,
    added.supersessions,
    added.contradictions,
    rejected,
  ];
}

/** Puts an imported reflection in force and adds its links, in the import's transaction. */
async function restoreReflection(
  ctx: PostgresStoreContext,
  client: PoolClient,
  current: RecordRow,
  restore: ImportedReflection,
  operationId: string,
): Promise<RecordRow> {
  const { sql, first } = ctx;
  const memoryId = current.memory_id;
  const { links, rejected } = planRestoreLinks(restore, Number(current.last_observation_seq));
  const { supersessions, contradictions } = await insertLinks(ctx, client, memoryId, operationId, links);
  const { reflection } = restore;
  if (!reflection && supersessions + contradictions + rejected === 0) return current;
  const row = reflection
    ? await first<RecordRow>(
        client,
        sql.applyReflection,
        reflectionParams(memoryId, current.state_version, reflection, { supersessions, contradictions }, rejected),
      )
    : await first<RecordRow>(client, sql.addLinkCounts, [
        memoryId,
        current.state_version,
        supersessions,
        contradictions,
        rejected,
      ]);
  return swapped(ctx, row, memoryId);
}

/** Adds the links an observe's observations ask for to the scope's set, and their counts to its record. */
async function addObservedLinks(
  ctx: PostgresStoreContext,
  client: PoolClient,
  current: RecordRow,
  operationId: string,
  links: readonly PlannedLink[],
): Promise<RecordRow> {
  const memoryId = current.memory_id;
  const { supersessions, contradictions } = await insertLinks(ctx, client, memoryId, operationId, links);
  if (supersessions + contradictions === 0) return current;
  const row = await ctx.first<RecordRow>(client, ctx.sql.addLinkCounts, [
    memoryId,
    current.state_version,
    supersessions,
    contradictions,
    0,
  ]);
  return swapped(ctx, row, memoryId);
}

/** The leased applies of observe and reflect operations. */
function applyMethods(ctx: PostgresStoreContext): Pick<MemoryStore, 'completeObservation' | 'completeReflection'> {
  const { sql, scopeWrite, rows, first, observePath } = ctx;
  return {
    // One statement when the observe was claimed by this store's fast path and the scope has
    // not moved since; otherwise the leased transaction.
    completeObservation: (input) =>
      scopeWrite(input.memoryId, async () => {
        // The function marks the operation applied without a note: an apply with one (rare:
        // a message passed over) takes the transaction.
        const fast = input.note ? undefined : await observePath.completeObservation(input);
        if (fast) return fast;
        return applyLeased(
          ctx,
          input,
          async (client, operation) => {
            const memoryId = operation.memory_id;
            const current = await recordOf(ctx, client, memoryId);
            const plan = planObservationApply(toApplyPosition(current), input);
            const planned = plan.observations;
            let observations: Observation[] = [];
            if (planned.length > 0) {
              const inserted = await rows<ObservationRow>(client, sql.insertObservations, [
                memoryId,
                planned.map((item) => item.seq),
                plan.startSeq,
                plan.throughSeq,
                operation.operation_id,
                ...observationColumns(planned),
              ]);
              observations = inserted.map(toObservation).sort((a, b) => a.seq - b.seq);
            }
            await query(client, sql.markMessagesObserved, [memoryId, plan.throughSeq]);
            const [start, end] = plan.markers;
            await query(client, sql.insertMarkerPair, [
              memoryId,
              operation.operation_id,
              plan.tokens,
              ...markerParameters(start),
              ...markerParameters(end),
            ]);
            const applied = swapped(
              ctx,
              await first<RecordRow>(client, sql.applyObservations, [
                memoryId,
                current.state_version,
                plan.throughSeq,
                observations.length,
                plan.lastObservationSeq,
                plan.tokens,
              ]),
              memoryId,
            );
            const row = await addObservedLinks(ctx, client, applied, operation.operation_id, plan.links);
            return { record: toRecord(row), observations };
          },
          input.note,
        );
      }),

    completeReflection: (input) =>
      scopeWrite(input.memoryId, () => {
        const outdated = (record: RecordRow): boolean =>
          isOutdatedReflection(input.correctionCount, record.correction_count);
        let found: RecordRow | undefined;
        const noteOf = async (client: PoolClient): Promise<string> => {
          found = await first<RecordRow>(client, sql.selectRecord, [input.memoryId]);
          return found !== undefined && outdated(found) ? OUTDATED_REFLECTION_NOTE : '';
        };
        return applyLeased(
          ctx,
          input,
          async (client, operation) => {
            const memoryId = operation.memory_id;
            const current = found ?? (await recordOf(ctx, client, memoryId));
            if (outdated(current)) return toRecord(current);
            const { reflection } = input;
            const plan = planReflectionApply(toApplyPosition(current), input);
            const { marker, links } = plan;
            await query(client, sql.insertMarker, [
              marker.markerId,
              memoryId,
              marker.markerType,
              operation.operation_id,
              marker.messageSeqStart,
              marker.messageSeqEnd,
              marker.tokenCount,
              JSON.stringify(marker.payload),
            ]);
            const added = await insertLinks(ctx, client, memoryId, operation.operation_id, links);
            const row = swapped(
              ctx,
              await first<RecordRow>(
                client,
                sql.applyReflection,
                reflectionParams(memoryId, current.state_version, reflection, added, plan.rejected),
              ),
              memoryId,
            );
            return toRecord(row);
          },
          noteOf,
        );
      }),
  };
}

/** The operation log: enqueue, claim, finish, fail, dead, retry, requeue, lists, counts and retention. */
function operationLogMethods(
  ctx: PostgresStoreContext,
): Pick<
  MemoryStore,
  | 'enqueueOperation'
  | 'claimOperation'
  | 'completeWithoutChange'
  | 'failOperation'
  | 'markOperationDead'
  | 'retryDeadOperation'
  | 'countDeadOperations'
  | 'requeueStaleOperations'
  | 'listOperations'
  | 'listOpenOperations'
  | 'countPendingOperations'
  | 'deleteSettledOperations'
> {
  const { sql, execute, scopeWrite, first, poolRows, poolFirst, inScope, pool } = ctx;
  const retention = createPostgresOperationRetention(pool, ctx.connection.prefix);
  return {
    enqueueOperation: (input) =>
      scopeWrite(input.memoryId, () =>
        inScope(input.memoryId, async (client) => toOperation(await insertOperation(ctx, client, input, 'queued', 0))),
      ),

    claimOperation: (input) =>
      execute(async () => {
        const leaseSeconds = seconds('leaseMs', input.leaseMs, 1);
        const row =
          input.memoryId === undefined
            ? await writeStatement<OperationRow>(pool, sql.claimOfAnyScope, [input.leaseOwner, leaseSeconds])
            : await writeStatement<OperationRow>(pool, sql.claimOfScope, [
                input.leaseOwner,
                leaseSeconds,
                input.memoryId,
              ]);
        return row.rows[0] && toOperation(row.rows[0]);
      }),

    completeWithoutChange: (input) =>
      execute(async () => {
        await finishLeased(ctx, pool, input, 'applied', input.note);
      }),

    failOperation: (input) =>
      execute(async () => {
        const row =
          input.retryAfterMs === undefined
            ? await finishLeased(ctx, pool, input, 'failed', input.errorText)
            : await finishLeased(
                ctx,
                pool,
                input,
                'queued',
                input.errorText,
                seconds('retryAfterMs', input.retryAfterMs, 1),
                input.notAttempted ? 1 : 0,
              );
        return toOperation(row);
      }),

    markOperationDead: (input) =>
      execute(async () => toOperation(await finishLeased(ctx, pool, input, 'dead', input.errorText))),

    retryDeadOperation: (input) =>
      scopeWrite(input.memoryId, () =>
        inScope(input.memoryId, async (client) => {
          const row = await first<OperationRow>(client, sql.retryDead, [input.memoryId, input.operationId]);
          return row && toOperation(row);
        }),
      ),

    countDeadOperations: (memoryId) =>
      execute(async () => (await poolFirst<{ count: number }>(sql.countDeadOfScope, [memoryId]))?.count ?? 0),

    requeueStaleOperations: (input) =>
      execute(
        async () =>
          (await writeStatement(pool, sql.requeueStale, [seconds('graceSeconds', input.graceSeconds, 1000)]))
            .rowCount ?? 0,
      ),

    listOperations: (memoryId) =>
      execute(async () => (await poolRows<OperationRow>(sql.listOperations, [memoryId])).map(toOperation)),

    listOpenOperations: (memoryId) =>
      execute(async () => (await poolRows<OperationRow>(sql.listOpenOperations, [memoryId])).map(toOperation)),

    deleteSettledOperations: (input) =>
      execute(async () => {
        const { olderThanSeconds, limit } = operationRetentionArguments(input);
        return retention.deleteSettled(olderThanSeconds, limit);
      }),

    countPendingOperations: (memoryId) =>
      execute(async () => {
        const row =
          memoryId === undefined
            ? await poolFirst<{ count: number }>(sql.countPending)
            : await poolFirst<{ count: number }>(sql.countPendingOfScope, [memoryId]);
        return row?.count ?? 0;
      }),
  };
}

/** Pages of scopes, observations and operations, and hand corrections. */
function listingMethods(
  ctx: PostgresStoreContext,
): Pick<MemoryStore, 'listOperationPage' | 'findObservations' | 'listScopes' | 'correctObservation'> {
  const { inspection, execute, scopeWrite, inScope, pool } = ctx;
  return {
    listOperationPage: (memoryId, options) => execute(() => inspection.listOperationPage(pool, memoryId, options)),
    findObservations: (memoryId, options) => execute(() => inspection.findObservations(pool, memoryId, options)),
    listScopes: (scopeQuery) => execute(() => inspection.listScopes(pool, scopeQuery)),
    correctObservation: (input) =>
      scopeWrite(input.memoryId, () =>
        inScope(input.memoryId, (client) =>
          inspection.correctObservation(client, input, (payload) =>
            insertOperation(ctx, client, { ...input, operationType: 'correct', payload: { ...payload } }, 'applied', 1),
          ),
        ),
      ),
  };
}

/** Working memory entries and their version, and forget. */
function workingMemoryMethods(
  ctx: PostgresStoreContext,
): Pick<
  MemoryStore,
  | 'setWorkingMemoryEntry'
  | 'getWorkingMemoryEntry'
  | 'deleteWorkingMemoryEntry'
  | 'workingMemoryVersion'
  | 'listWorkingMemoryEntries'
  | 'purgeExpiredWorkingMemory'
  | 'forget'
> {
  const { sql, execute, scopeWrite, readRows, readFirst, inScope, pool } = ctx;
  const expired = createPostgresWorkingMemoryPurge(pool, ctx.connection.prefix);
  return {
    // One statement: the function takes the scope's lock, checks the limits, and writes.
    setWorkingMemoryEntry: (input) =>
      scopeWrite(input.memoryId, async () => {
        const { memoryId, key, valueJson, limits, scope } = input;
        const after = newWorkingMemoryVersion();
        const { rows: answers } = await callReadCommitted<{ result: EntrySetAnswer }>(pool, sql.setEntry, [
          ctx.memoryLockClass,
          memoryId,
          scope.tenantId,
          scope.conversationId,
          scope.agentId,
          key,
          valueJson,
          after,
          limits.maxEntries,
          limits.maxTotalBytes,
          input.ttlMs ?? null,
        ]);
        const result = answers[0]?.result;
        if (result?.limit) throw workingMemoryLimitError(result.limit, result.actual, result.max);
        if (!result?.entry)
          throw new StoreError({ store: STORE_NAME, message: `Working-memory entry ${key} was not stored.` });
        const entry = toWorkingMemoryEntry(rowFromJson<WorkingMemoryRow>(result.entry, ENTRY_TIMES));
        // A database at an older schema answers no earlier version: then none is reported.
        if (typeof result.previous_version !== 'number') return entry;
        return Object.freeze({ ...entry, versions: Object.freeze({ before: result.previous_version, after }) });
      }),

    getWorkingMemoryEntry: (memoryId, key) =>
      execute(async () => {
        const row = await readFirst<WorkingMemoryRow>(sql.selectEntry, [memoryId, key]);
        return row && toWorkingMemoryEntry(row);
      }),
    deleteWorkingMemoryEntry: (memoryId, key) =>
      scopeWrite(
        memoryId,
        async () =>
          ((
            await writeStatement<{ count: number }>(pool, sql.deleteEntry, [
              memoryId,
              key,
              newWorkingMemoryVersion(),
              ctx.memoryLockClass,
            ])
          ).rows[0]?.count ?? 0) > 0,
      ),
    workingMemoryVersion: (memoryId) =>
      execute(
        async () => (await readFirst<{ version: number }>(sql.selectWorkingMemoryVersion, [memoryId]))?.version ?? 0,
      ),
    listWorkingMemoryEntries: (memoryId) =>
      execute(async () => (await readRows<WorkingMemoryRow>(sql.listEntries, [memoryId])).map(toWorkingMemoryEntry)),
    purgeExpiredWorkingMemory: (input) =>
      execute(async () => {
        const { limit } = workingMemoryPurgeArguments(input);
        return expired.purge(limit);
      }),

    // The rows are gone for every reader at commit; their old versions stay in table pages
    // and WAL until (auto)vacuum and checkpoints reclaim them, as with any Postgres DELETE.
    forget: (memoryId) =>
      scopeWrite(memoryId, () =>
        inScope(memoryId, async (client) => {
          for (const statement of sql.forgetScope) await query(client, statement, [memoryId]);
          await query(client, sql.writeScopeGeneration, [memoryId, newScopeGeneration()]);
        }),
      ),
  };
}
