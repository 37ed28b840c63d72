/**
 * The harness's runs, run events and conversation messages in Postgres, beside the memory
 * tables, so that any replica can serve a run's history, whichever replica executed it.
 * @module
 */
import { StoreError } from '../../core/errors.js';
import { createPostgresRunListing } from './postgres-run-listing.js';
import { memoryIdOf } from '../../core/scope.js';
import { HISTORY_COLUMNS, HistoryPageSizes, toRunEvent, toRunRecord } from '../_run-rows.js';
import { HistoryCache } from '../_history-cache.js';
import type { ConversationMessageRow, RunEventRow, RunMethodName, RunRow } from '../_run-rows.js';
import { newScopeGeneration } from '../_memory-rows.js';
import { scopeForgottenError } from '../_store-errors.js';
import { retentionArguments } from '../_run-retention.js';
import { runEndedError } from '../_run-ending.js';
import { runExistsError } from '../run-store.js';
import type { ConversationMessage, RunRecord, RunStore } from '../run-store.js';
import { createStoreGuard } from '../_store-guard.js';
import {
  callReadCommitted,
  functionCall,
  openPostgresConnection,
  query,
  readCommittedCall,
  readStatement,
  scopeLockClass,
  scopeLockSql,
  toStoreError,
  transaction,
} from './postgres-connection.js';
import type { PostgresConnectionOptions } from './postgres-connection.js';
import { migratePostgresSchema } from './postgres-migrations.js';
import { acquireReadLane, poolReads } from './postgres-read-lane.js';
import { createScopeWrites } from './postgres-scope-writes.js';
import type { PostgresReadLane } from './postgres-read-lane.js';
import { storableMessage, storablePatch, storableRun } from '../_storable-text.js';
import { checkedAfterSeq, checkedRunListQuery } from '../_run-arguments.js';
import { APPEND_MESSAGES_TYPES, APPEND_RUN_EVENT_TYPES, RUN_ENDED_SQLSTATE } from './postgres-run-functions.js';

/** What the parts of the Postgres run store share. */
interface PostgresRunContext {
  readonly connection: ReturnType<typeof openPostgresConnection>;
  readonly pool: ReturnType<typeof openPostgresConnection>['pool'];
  readonly schema: string;
  /** The schema prefix (`"schema".`). */
  readonly s: string;
  readonly guard: ReturnType<typeof createStoreGuard>;
  readonly history: HistoryCache;
  readonly lockConversation: string;
  /** The class of the conversation locks, for the function that takes them. */
  readonly conversationLockClass: number;
  readonly lane: PostgresReadLane;
  readonly wrap: <T>(work: () => Promise<T>) => Promise<T>;
  /** {@link wrap} behind the run's earlier writes (they all lock its row): see postgres-scope-writes.ts. */
  readonly runWrite: <T>(runId: string, work: () => Promise<T>) => Promise<T>;
  /** {@link wrap} behind the conversation's earlier writes (they all take its lock). */
  readonly conversationWrite: <T>(memoryId: string, work: () => Promise<T>) => Promise<T>;
  readonly missing: (runId: string) => StoreError;
  readonly errorJson: (error: RunRecord['error']) => string | null;
  readonly listRuns: ReturnType<typeof createPostgresRunListing>;
}

/** Options of {@link createPostgresRunStore}: the same connection options as the memory store. */
export type PostgresRunStoreOptions = PostgresConnectionOptions;

const STORE = 'postgres-runs';

/**
 * Creates the Postgres run store, migrating the schema first (shared with the memory store).
 * @example
 * const runs = await createPostgresRunStore({ connectionString: process.env.DATABASE_URL, schema: 'harness' });
 */
export async function createPostgresRunStore(options: PostgresRunStoreOptions): Promise<RunStore> {
  const connection = openPostgresConnection(options, STORE, 'createPostgresRunStore');
  const { pool, schema, prefix: s } = connection;
  const listRuns = createPostgresRunListing(s);
  try {
    await migratePostgresSchema(pool, schema);
  } catch (error) {
    if (connection.ownsPool) await pool.end().catch(() => {});
    throw toStoreError(error, STORE, schema);
  }
  const guard = createStoreGuard({ store: STORE, toError: (error) => toStoreError(error, STORE, schema) });
  type PageRow = ConversationMessageRow & { generation: number };
  const newerSql = historyPageSql(s, '>');
  const olderSql = historyPageSql(s, '<');
  // What a turn reads (the messages after the newest held, at most a page; the generation)
  // goes pipelined on the pool's read lane with the memory store's reads of the same turn.
  const lane = connection.readLane ? acquireReadLane(pool) : poolReads(pool);
  const history = new HistoryCache(
    {
      newer: async (memoryId, after, limit) =>
        historyPageOf((await lane.read<PageRow>(newerSql, [memoryId, after, limit])).rows),
      older: async (memoryId, before, limit) =>
        historyPageOf((await readStatement<PageRow>(pool, olderSql, [memoryId, before, limit])).rows),
    },
    new HistoryPageSizes(),
  );
  const lockConversation = scopeLockSql(schema, 'conversation', 1);
  const conversationLockClass = scopeLockClass(schema, 'conversation');

  const wrap = <T>(work: () => Promise<T>): Promise<T> => guard.runAsync(work);
  // A run's or a conversation's writes wait for each other here, not on a pooled connection
  // each: a run whose row, or a conversation whose lock, another session holds (a forget in
  // another replica, an operator's transaction) then ties up one connection, not the pool; and
  // they land in the order made (see postgres-scope-writes.ts).
  const runWrites = createScopeWrites();
  const conversationWrites = createScopeWrites();
  const runWrite = <T>(runId: string, work: () => Promise<T>): Promise<T> => wrap(() => runWrites.run(runId, work));
  const conversationWrite = <T>(memoryId: string, work: () => Promise<T>): Promise<T> =>
    wrap(() => conversationWrites.run(memoryId, work));
  const missing = (runId: string): StoreError =>
    new StoreError({ store: STORE, message: `Run ${runId} does not exist.`, data: { runId } });
  const errorJson = (error: RunRecord['error']): string | null => (error ? JSON.stringify(error) : null);
  const ctx: PostgresRunContext = {
    connection,
    pool,
    schema,
    s,
    guard,
    history,
    lane,
    lockConversation,
    conversationLockClass,
    wrap,
    runWrite,
    conversationWrite,
    missing,
    errorJson,
    listRuns,
  };

  return {
    specificationVersion: 'v1',
    supportsClipAt: true,
    name: 'postgres',
    dispose: async () => {
      if (!guard.dispose()) return;
      await lane.release();
      if (connection.ownsPool) await pool.end();
    },
    ...runMethods(ctx),
    ...conversationMethods(ctx),
  };
}

/** Runs and their events. */
function runMethods(ctx: PostgresRunContext): Pick<RunStore, RunMethodName> {
  const { pool, s, wrap, runWrite, missing, errorJson, listRuns } = ctx;
  const storedRun = async (runId: string): Promise<RunRow | undefined> =>
    (await readStatement<RunRow>(pool, `SELECT * FROM ${s}harness_runs WHERE run_id = $1`, [runId])).rows[0];
  return {
    createRun: (given) =>
      wrap(async () => {
        const run = storableRun(given);
        const result = await query<RunRow>(
          pool,
          `INSERT INTO ${s}harness_runs (run_id, memory_id, tenant_id, conversation_id, agent_id, status, prompt,
            model, system_prompt, max_steps, output, error_json,
             steps, input_tokens, output_tokens, parent_run_id, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb, $13, $14, $15, $16,
             date_trunc('milliseconds', now()), now())
           ON CONFLICT (run_id) DO NOTHING
           RETURNING *`,
          [
            run.runId,
            memoryIdOf(run.scope),
            run.scope.tenantId,
            run.scope.conversationId,
            run.scope.agentId,
            run.status,
            run.prompt,
            run.model,
            run.systemPrompt,
            run.maxSteps,
            run.output,
            errorJson(run.error),
            run.steps,
            run.usage.inputTokens,
            run.usage.outputTokens,
            run.parentRunId,
          ],
        );
        const row = result.rows[0];
        if (row === undefined) throw runExistsError(STORE, run.runId);
        return toRunRecord(row);
      }),
    getRun: (runId) =>
      wrap(async () => {
        const row = await storedRun(runId);
        return row ? toRunRecord(row) : undefined;
      }),
    // One statement: each field the patch names is written, the others keep their value.
    updateRun: (runId, given) =>
      runWrite(runId, async () => {
        const patch = storablePatch(given);
        const updated = await query<RunRow>(
          pool,
          `UPDATE ${s}harness_runs SET
             status = CASE WHEN $2 THEN $3 ELSE status END,
             output = CASE WHEN $4 THEN $5 ELSE output END,
             error_json = CASE WHEN $6 THEN $7::jsonb ELSE error_json END,
             steps = CASE WHEN $8 THEN $9::integer ELSE steps END,
             input_tokens = CASE WHEN $10 THEN $11::bigint ELSE input_tokens END,
             output_tokens = CASE WHEN $10 THEN $12::bigint ELSE output_tokens END,
             updated_at = now()
           WHERE run_id = $1 AND status IN ('queued', 'running') RETURNING *`,
          [
            runId,
            'status' in patch,
            patch.status ?? null,
            'output' in patch,
            patch.output ?? null,
            'error' in patch,
            errorJson(patch.error ?? null),
            'steps' in patch,
            patch.steps ?? null,
            'usage' in patch,
            patch.usage?.inputTokens ?? null,
            patch.usage?.outputTokens ?? null,
          ],
        );
        const row = updated.rows[0] ?? (await storedRun(runId));
        if (!row) throw missing(runId);
        // Not open: an ended run is answered as it stands.
        return toRunRecord(row);
      }),
    // One statement: the function locks the run's row, numbers the event and stores it.
    appendEvent: (runId, type, payload) =>
      runWrite(runId, async () => {
        const inserted = await query<RunEventRow>(
          pool,
          `SELECT * FROM ${functionCall(s, 'harness_append_run_event', APPEND_RUN_EVENT_TYPES)}`,
          [runId, type, JSON.stringify(payload)],
        ).catch((error: unknown) => {
          const { code, detail } = error as { code?: string; detail?: string };
          throw code === RUN_ENDED_SQLSTATE ? runEndedError(STORE, runId, detail ?? 'ended', type) : error;
        });
        const row = inserted.rows[0];
        if (!row) throw missing(runId);
        return toRunEvent(row);
      }),
    listEvents: (runId, afterSeq) =>
      wrap(async () =>
        (
          await readStatement<RunEventRow>(
            pool,
            `SELECT * FROM ${s}harness_run_events WHERE run_id = $1 AND seq > $2::bigint ORDER BY seq`,
            [runId, checkedAfterSeq(afterSeq)],
          )
        ).rows.map(toRunEvent),
      ),
    listRuns: (runQuery) => wrap(() => listRuns(pool, checkedRunListQuery(runQuery))),
    abandonStaleRun: (runId, olderThanSeconds, error) =>
      runWrite(runId, async () => {
        const { error: stored } = storablePatch({ error });
        const result = await query<RunRow>(
          pool,
          `UPDATE ${s}harness_runs SET status = 'failed', error_json = $2::jsonb, updated_at = now()
           WHERE run_id = $1 AND status IN ('queued', 'running') AND updated_at <= now() - make_interval(secs => $3)
           RETURNING *`,
          [runId, errorJson(stored ?? error), Math.max(0, olderThanSeconds)],
        );
        const row = result.rows[0];
        return row && toRunRecord(row);
      }),
    deleteEndedRuns: (olderThanSeconds, limit) =>
      wrap(async () => {
        const bounds = retentionArguments(olderThanSeconds, limit);
        // One statement: the runs are locked as they are picked (another replica's sweep skips
        // them). Their events go by the foreign key's cascade, which reads the latest snapshot:
        // deleting them in this statement's own missed one committed just before the lock.
        const result = await query(
          pool,
          `WITH ended AS (
             SELECT run_id FROM ${s}harness_runs
             WHERE created_at <= now() - make_interval(secs => $1) AND updated_at <= now() - make_interval(secs => $1)
               AND status IN ('completed', 'failed', 'cancelled')
             ORDER BY created_at, run_id LIMIT $2 FOR UPDATE SKIP LOCKED)
           DELETE FROM ${s}harness_runs WHERE run_id IN (SELECT run_id FROM ended)`,
          [bounds.olderThanSeconds, bounds.limit],
        );
        return result.rowCount ?? 0;
      }),
    listStaleRuns: (olderThanSeconds) =>
      wrap(async () => {
        const result = await readStatement<RunRow>(
          pool,
          `SELECT * FROM ${s}harness_runs WHERE status IN ('queued', 'running') AND updated_at <= now() - ` +
            `make_interval(secs => $1) ORDER BY created_at`,
          [Math.max(0, olderThanSeconds)],
        );
        return result.rows.map(toRunRecord);
      }),
  };
}

/**
 * One statement (so one snapshot, and one round trip) reading a conversation's generation and
 * up to `$3` of its messages on one side of position `$2`, newest first (`$1`: the memory id).
 * With no message, one row whose position is null carries the generation. `s` is the schema
 * prefix.
 */
function historyPageSql(s: string, side: '<' | '>'): string {
  const columns = HISTORY_COLUMNS.split(', ')
    .map((column) => `m.${column}`)
    .join(', ');
  return `SELECT g.generation, ${columns}
    FROM (SELECT COALESCE((SELECT generation FROM ${s}harness_conversation_generations
      WHERE memory_id = $1), 0) AS generation) AS g
    LEFT JOIN (SELECT ${HISTORY_COLUMNS} FROM ${s}harness_conversation_messages
      WHERE memory_id = $1 AND position ${side} $2
      ORDER BY position DESC LIMIT $3) AS m ON 1 = 1
    ORDER BY m.position DESC NULLS LAST`;
}

/** The generation and the messages of rows read by {@link historyPageSql}. */
function historyPageOf(rows: ReadonlyArray<ConversationMessageRow & { generation: number }>): {
  generation: number;
  rows: ConversationMessageRow[];
} {
  return { generation: Number(rows[0]?.generation ?? 0), rows: rows.filter((row) => row.position !== null) };
}

/** Conversation history, its generation and forget. */
function conversationMethods(
  ctx: PostgresRunContext,
): Pick<
  RunStore,
  'appendMessages' | 'recentMessages' | 'recentHistory' | 'conversationGeneration' | 'forgetConversation'
> {
  const { pool, s, history, lane, lockConversation, conversationLockClass, wrap, conversationWrite } = ctx;
  return {
    appendMessages: (memoryId, given, appendOptions = {}) => {
      // Nothing to write or check: not queued behind the conversation's writes. (Read with care:
      // a caller's bad arguments fail inside the write, as a rejection, never as a throw here.)
      if (Array.isArray(given) && given.length === 0 && appendOptions?.generation === undefined)
        return wrap(async () => {});
      return conversationWrite(memoryId, async () => {
        const messages = given.map(storableMessage);
        const column = <T>(pick: (message: ConversationMessage) => T): T[] => messages.map(pick);
        // One statement: the function takes the conversation's lock (which a forget takes too),
        // checks the generation and inserts what is new.
        const appended = await callReadCommitted<{ result: boolean }>(
          pool,
          readCommittedCall(functionCall(s, 'harness_append_messages', APPEND_MESSAGES_TYPES)),
          [
            conversationLockClass,
            memoryId,
            appendOptions.generation ?? null,
            column((message) => message.messageId),
            column((message) => message.runId),
            column((message) => message.role),
            column((message) => message.content),
            column((message) => message.name ?? null),
            column((message) => message.toolCallId ?? null),
            column((message) => (message.toolCalls ? JSON.stringify(message.toolCalls) : null)),
            column((message) => message.tokenCount),
          ],
        );
        if (appended.rows[0]?.result !== true) throw scopeForgottenError(STORE, memoryId);
      });
    },
    recentMessages: (memoryId, maxTokens, options) =>
      wrap(async () => (await history.recentHistory(memoryId, maxTokens, options)).messages),
    recentHistory: (memoryId, maxTokens, options) => wrap(() => history.recentHistory(memoryId, maxTokens, options)),
    conversationGeneration: (memoryId) =>
      wrap(
        async () =>
          (
            await lane.read<{ generation: number }>(
              `SELECT generation FROM ${s}harness_conversation_generations WHERE memory_id = $1`,
              [memoryId],
            )
          ).rows[0]?.generation ?? 0,
      ),
    forgetConversation: (memoryId) =>
      conversationWrite(memoryId, () =>
        transaction(pool, async (client) => {
          await query(client, lockConversation, [memoryId]);
          await query(
            client,
            `INSERT INTO ${s}harness_conversation_generations (memory_id, generation) VALUES ($1, $2) ON ` +
              `CONFLICT (memory_id) DO UPDATE SET generation = excluded.generation`,
            [memoryId, newScopeGeneration()],
          );
          await query(client, `DELETE FROM ${s}harness_conversation_messages WHERE memory_id = $1`, [memoryId]);
          // An event being appended holds its run's row, so this waits for it; the foreign key's
          // cascade then deletes the run's events in the latest snapshot, the one just stored
          // included (deleting them in this statement's snapshot left it behind with no run).
          await query(client, `DELETE FROM ${s}harness_runs WHERE memory_id = $1`, [memoryId]);
        }),
      ),
  };
}
