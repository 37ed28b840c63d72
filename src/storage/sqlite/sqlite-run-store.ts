/**
 * The harness's runs, run events and conversation messages on the same SQLite file as
 * memory. Writes are IMMEDIATE transactions; event seqs are assigned inside them.
 * @module
 */
import type { Database, Statement } from 'better-sqlite3';
import { createSqliteRunListing } from './sqlite-run-listing.js';
import { requireOptions, requireString } from '../../core/require-option.js';
import { StoreError } from '../../core/errors.js';
import { createStoreGuard } from '../_store-guard.js';
import { memoryIdOf } from '../../core/scope.js';
import { HISTORY_COLUMNS, HistoryPageSizes, toRunEvent, toRunRecord } from '../_run-rows.js';
import { HistoryCache } from '../_history-cache.js';
import type { ConversationMessageRow, RunEventRow, RunMethodName, RunRow } from '../_run-rows.js';
import { newScopeGeneration } from '../_memory-rows.js';
import { scopeForgottenError } from '../_store-errors.js';
import { retentionArguments } from '../_run-retention.js';
import { runEndedError, TERMINAL_EVENT_TYPES_SQL } from '../_run-ending.js';
import { runExistsError } from '../run-store.js';
import type { RunStore } from '../run-store.js';
import { configureSqliteConnection, openSqliteFile, useBackgroundCheckpoints } from './sqlite-connection.js';
import { migrateSqliteDatabase, SQLITE_SCHEMA_VERSION } from './sqlite-migrations.js';
import { createSchemaCheck } from './sqlite-schema-check.js';
import { SQL_NOW } from './sqlite-statements.js';
import { storableMessage, storablePatch, storableRun } from '../_storable-text.js';
import { checkedAfterSeq, checkedRunListQuery } from '../_run-arguments.js';
import { toStoreError } from './sqlite-errors.js';
import {
  emptyWriteAheadLogLater,
  emptyWriteAheadLogWithin,
  isBusyError,
  limitSynchronousBusyWait,
  retryWhileBusy,
} from './sqlite-busy-wait.js';
import { holdSqliteConnection } from './sqlite-shared-connection.js';
import type { SqliteConnectionHold } from './sqlite-shared-connection.js';

/** Options of {@link createSqliteRunStore}. */
export interface SqliteRunStoreOptions {
  /** The database file (shared with the memory store). */
  path: string;
  /** @default 'NORMAL' */
  synchronous?: 'NORMAL' | 'FULL';
  /** @default 5000 */
  busyTimeoutMs?: number;
  /** As the memory store's option of the same name. @default 'background' */
  checkpoints?: 'background' | 'inline';
}

const STORE = 'sqlite-runs';

/** The parameters of the one-statement run update: a 1 in `has_<field>` writes that field. */
interface RunUpdate {
  run_id: string;
  has_status: number;
  status: string | null;
  has_output: number;
  output: string | null;
  has_error: number;
  error_json: string | null;
  has_steps: number;
  steps: number | null;
  has_usage: number;
  input_tokens: number | null;
  output_tokens: number | null;
}

/** What the parts of the SQLite run store share. */
interface SqliteRunContext {
  readonly db: Database;
  readonly statements: RunStatements;
  readonly guard: ReturnType<typeof createStoreGuard>;
  readonly wrap: <T>(work: () => T) => Promise<T>;
  readonly write: <T>(work: () => T) => Promise<T>;
  readonly path: string;
  readonly busyTimeoutMs: number;
  readonly history: HistoryCache;
  readonly missing: (runId: string) => StoreError;
  readonly listRuns: ReturnType<typeof createSqliteRunListing>;
  readonly checkpointer: ReturnType<typeof useBackgroundCheckpoints> | undefined;
}

/**
 * Creates the SQLite run store. It shares the connection of the process's memory store on the
 * same file (`createSqliteStore` with the same `synchronous`, `busyTimeoutMs` and
 * `checkpoints`), which is closed when both are disposed.
 */
export function createSqliteRunStore(options: SqliteRunStoreOptions): RunStore {
  requireOptions('createSqliteRunStore', options, 'Pass { path }.');
  requireString(
    'createSqliteRunStore',
    'path',
    options.path,
    "Pass the database file, such as .harness/state.db (':memory:' gives a private database for tests).",
  );
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
  const synchronous = options.synchronous ?? 'NORMAL';
  let connection: SqliteConnectionHold | undefined;
  try {
    // The process's memory store on this file shares the connection (see holdSqliteConnection).
    connection = holdSqliteConnection(
      'runs',
      { path: options.path, synchronous, busyTimeoutMs, checkpoints: options.checkpoints ?? 'background' },
      () => openSqliteFile(options.path, busyTimeoutMs),
    );
    const { db } = connection;
    if (connection.opened) {
      configureSqliteConnection(db, { busyTimeoutMs, synchronous, path: options.path });
      migrateSqliteDatabase(db);
      // Opening may wait for the lock; from now on the event loop never does (see sqlite-busy-wait.ts).
      limitSynchronousBusyWait(db, busyTimeoutMs);
    }
    return buildRunStore(db, options, connection.release);
  } catch (error) {
    // As the memory store: the connection is not left open, and the error says what to do.
    try {
      connection?.release();
    } catch {
      // The error that stopped the store is the one to report.
    }
    throw toStoreError(error, { path: options.path, busyTimeoutMs });
  }
}

function buildRunStore(db: Database, options: SqliteRunStoreOptions, release: () => void): RunStore {
  const checkpointer =
    (options.checkpoints ?? 'background') === 'background'
      ? useBackgroundCheckpoints(db, { synchronous: options.synchronous ?? 'NORMAL' })
      : undefined;
  const context = { path: options.path, busyTimeoutMs: options.busyTimeoutMs ?? 5000 };
  const guard = createStoreGuard({
    store: STORE,
    disposedMessage: 'The run store was disposed.',
    toError: (error) =>
      isBusyError(error)
        ? toStoreError(error, context)
        : new StoreError({ store: STORE, message: `SQLite failed: ${(error as Error).message}`, cause: error }),
  });

  const statements = prepareRunStatements(db);

  const listRuns = createSqliteRunListing(db);
  // Another process's lock is waited for on a timer, never blocking the event loop; `work`
  // undoes itself when it throws (a statement or transaction that could not begin).
  const wrap = <T>(work: () => T): Promise<T> => retryWhileBusy(() => guard.run(work), context.busyTimeoutMs);
  const checkSchema = createSchemaCheck(db, STORE, SQLITE_SCHEMA_VERSION);
  /** A write transaction, counted for the background checkpoints. */
  const write = async <T>(work: () => T): Promise<T> => {
    const result = await wrap(() => {
      checkSchema();
      return work();
    });
    checkpointer?.noteCommit();
    return result;
  };
  const history = new HistoryCache(
    {
      newer: async (memoryId, after, limit) =>
        wrap(() => historyPage(statements, memoryId, statements.newerMessages.all(memoryId, memoryId, after, limit))),
      older: async (memoryId, before, limit) =>
        wrap(() => historyPage(statements, memoryId, statements.olderMessages.all(memoryId, memoryId, before, limit))),
    },
    new HistoryPageSizes(),
  );
  const missing = (runId: string): StoreError =>
    new StoreError({ store: STORE, message: `Run ${runId} does not exist.`, data: { runId } });
  const ctx: SqliteRunContext = {
    db,
    statements,
    guard,
    wrap,
    write,
    history,
    missing,
    listRuns,
    checkpointer,
    ...context,
  };

  return {
    specificationVersion: 'v1',
    supportsClipAt: true,
    name: 'sqlite',
    async dispose() {
      if (!guard.dispose()) return;
      await checkpointer?.stop();
      release();
    },
    ...runMethods(ctx),
    ...conversationMethods(ctx),
  };
}

/**
 * The first row a one-statement write returns, read to the statement's end: a statement outside
 * a transaction commits as it ends, and better-sqlite3's `get` stops at the first row and drops
 * that commit's error (a full disk, a file size limit), so a write that was lost would be
 * reported stored.
 */
function firstRow<P, R>(statement: Statement<[P], R>, params: P): R | undefined {
  return statement.all(params)[0];
}

/** A history row with the conversation's generation, read by the same statement. */
type HistoryRow = ConversationMessageRow & { generation: number | null };

/**
 * Up to `limit` messages on one side of a position, newest first, each with the generation:
 * one range scan of the primary key, with nothing to materialize or sort (a form that also
 * answers a row when there are no messages needs both, and took half as long again).
 */
function historyRowsSql(side: '<' | '>'): string {
  return `SELECT (SELECT generation FROM harness_conversation_generations WHERE memory_id = ?) AS generation,
      ${HISTORY_COLUMNS}
    FROM harness_conversation_messages WHERE memory_id = ? AND position ${side} ?
    ORDER BY position DESC LIMIT ?`;
}

/**
 * A history page with its generation. With rows, the generation is read in their snapshot.
 * With none, it is read just after. That serves as well: every forget sets a new random
 * generation, so an unchanged value means no forget came between the two reads and the empty
 * page was right; a changed one makes the cache read the history afresh, and a turn that
 * began before the forget is refused.
 */
function historyPage(
  statements: RunStatements,
  memoryId: string,
  rows: HistoryRow[],
): { generation: number; rows: ConversationMessageRow[] } {
  const first = rows[0];
  if (first === undefined) return { generation: statements.selectGeneration.get(memoryId) ?? 0, rows: [] };
  return { generation: first.generation ?? 0, rows };
}

type RunStatements = ReturnType<typeof prepareRunStatements>;

/** Every statement of the run store, prepared once per connection. */
function prepareRunStatements(db: Database) {
  return {
    insertRun: db.prepare(
      `INSERT INTO harness_runs (run_id, memory_id, tenant_id, conversation_id, agent_id, status, prompt, model,
        system_prompt, max_steps, output, error_json, steps, input_tokens, output_tokens, parent_run_id, created_at,
        updated_at)
       VALUES (@run_id, @memory_id, @tenant_id, @conversation_id, @agent_id, @status, @prompt, @model, @system_prompt,
         @max_steps, @output, @error_json, @steps, @input_tokens, @output_tokens, @parent_run_id, ${SQL_NOW},
         ${SQL_NOW})
       ON CONFLICT (run_id) DO NOTHING
       RETURNING *`,
    ),
    getRun: db.prepare<[string], RunRow>('SELECT * FROM harness_runs WHERE run_id = ?'),
    // One statement: each field the patch names (flag 1) is written, the others keep their value.
    updateRun: db.prepare<[RunUpdate], RunRow>(
      `UPDATE harness_runs SET
         status = CASE WHEN @has_status THEN @status ELSE status END,
         output = CASE WHEN @has_output THEN @output ELSE output END,
         error_json = CASE WHEN @has_error THEN @error_json ELSE error_json END,
         steps = CASE WHEN @has_steps THEN @steps ELSE steps END,
         input_tokens = CASE WHEN @has_usage THEN @input_tokens ELSE input_tokens END,
         output_tokens = CASE WHEN @has_usage THEN @output_tokens ELSE output_tokens END,
         updated_at = ${SQL_NOW}
       WHERE run_id = @run_id AND status IN ('queued', 'running') RETURNING *`,
    ),
    // One statement, so one implicit transaction that takes the write lock before it reads
    // the last seq: numbering, the run's existence check and the insert cannot interleave.
    appendEvent: db.prepare<[{ run_id: string; type: string; payload_json: string }], RunEventRow>(
      `INSERT INTO harness_run_events (run_id, seq, type, timestamp, payload_json)
       SELECT @run_id, COALESCE((SELECT MAX(seq) FROM harness_run_events WHERE run_id = @run_id), -1) + 1, @type,
         ${SQL_NOW}, @payload_json
       WHERE EXISTS (SELECT 1 FROM harness_runs WHERE run_id = @run_id AND (status IN ('queued', 'running') OR
         (@type IN (${TERMINAL_EVENT_TYPES_SQL}) AND NOT EXISTS (SELECT 1 FROM harness_run_events
           WHERE run_id = @run_id AND type IN (${TERMINAL_EVENT_TYPES_SQL})))))
       RETURNING *`,
    ),
    listEvents: db.prepare<[string, number], RunEventRow>(
      'SELECT * FROM harness_run_events WHERE run_id = ? AND seq > ? ORDER BY seq',
    ),
    nextPosition: db
      .prepare<[string], number>(
        'SELECT COALESCE(MAX(position), 0) + 1 FROM harness_conversation_messages WHERE memory_id = ?',
      )
      .pluck(),
    insertMessage: db.prepare(
      `INSERT OR IGNORE INTO harness_conversation_messages (memory_id, position, message_id, run_id, role, content,
        name, tool_call_id, tool_calls_json, token_count)
       VALUES (@memory_id, @position, @message_id, @run_id, @role, @content, @name, @tool_call_id, @tool_calls_json,
         @token_count)`,
    ),
    newerMessages: db.prepare<[string, string, number, number], HistoryRow>(historyRowsSql('>')),
    olderMessages: db.prepare<[string, string, number, number], HistoryRow>(historyRowsSql('<')),
    abandonRun: db.prepare<[{ run_id: string; error_json: string; age: string }], RunRow>(
      `UPDATE harness_runs SET status = 'failed', error_json = @error_json, updated_at = ${SQL_NOW}
       WHERE run_id = @run_id AND status IN ('queued', 'running')
         AND updated_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', @age)
       RETURNING *`,
    ),
    staleRuns: db.prepare<[string], RunRow>(
      `SELECT * FROM harness_runs WHERE status IN ('queued', 'running') AND updated_at <= ` +
        `strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?) ORDER BY created_at`,
    ),
    forgetMessages: db.prepare<[string]>('DELETE FROM harness_conversation_messages WHERE memory_id = ?'),
    selectGeneration: db
      .prepare<[string], number>('SELECT generation FROM harness_conversation_generations WHERE memory_id = ?')
      .pluck(),
    writeGeneration: db.prepare<[string, number]>(
      'INSERT INTO harness_conversation_generations (memory_id, generation) VALUES (?, ?) ON CONFLICT (memory_id) ' +
        'DO UPDATE SET generation = excluded.generation',
    ),
    forgetEvents: db.prepare<[string]>(
      'DELETE FROM harness_run_events WHERE run_id IN (SELECT run_id FROM harness_runs WHERE memory_id = ?)',
    ),
    forgetRuns: db.prepare<[string]>('DELETE FROM harness_runs WHERE memory_id = ?'),
    endedRuns: db
      .prepare<[{ age: string; limit: number }], string>(
        `SELECT run_id FROM harness_runs
         WHERE created_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', @age)
           AND updated_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', @age)
           AND status IN ('completed', 'failed', 'cancelled')
         ORDER BY created_at, run_id LIMIT @limit`,
      )
      .pluck(),
    deleteRunEvents: db.prepare<[string]>('DELETE FROM harness_run_events WHERE run_id = ?'),
    deleteRun: db.prepare<[string]>('DELETE FROM harness_runs WHERE run_id = ?'),
  };
}

/** Runs and their events. */
function runMethods(ctx: SqliteRunContext): Pick<RunStore, RunMethodName> {
  const { db, statements, wrap, write, missing, listRuns } = ctx;
  return {
    async createRun(given) {
      const run = storableRun(given);
      return write(() => {
        const row = firstRow(statements.insertRun, {
          run_id: run.runId,
          memory_id: memoryIdOf(run.scope),
          tenant_id: run.scope.tenantId,
          conversation_id: run.scope.conversationId,
          agent_id: run.scope.agentId,
          status: run.status,
          prompt: run.prompt,
          model: run.model,
          system_prompt: run.systemPrompt,
          max_steps: run.maxSteps,
          output: run.output,
          error_json: run.error ? JSON.stringify(run.error) : null,
          steps: run.steps,
          input_tokens: run.usage.inputTokens,
          output_tokens: run.usage.outputTokens,
          parent_run_id: run.parentRunId,
        }) as RunRow | undefined;
        if (row === undefined) throw runExistsError(STORE, run.runId);
        return toRunRecord(row);
      });
    },
    async getRun(runId) {
      return wrap(() => {
        const row = statements.getRun.get(runId);
        return row ? toRunRecord(row) : undefined;
      });
    },
    async updateRun(runId, given) {
      const patch = storablePatch(given);
      return write(() => {
        const row = firstRow(statements.updateRun, {
          run_id: runId,
          has_status: 'status' in patch ? 1 : 0,
          status: patch.status ?? null,
          has_output: 'output' in patch ? 1 : 0,
          output: patch.output ?? null,
          has_error: 'error' in patch ? 1 : 0,
          error_json: patch.error ? JSON.stringify(patch.error) : null,
          has_steps: 'steps' in patch ? 1 : 0,
          steps: patch.steps ?? null,
          has_usage: 'usage' in patch ? 1 : 0,
          input_tokens: patch.usage?.inputTokens ?? null,
          output_tokens: patch.usage?.outputTokens ?? null,
        });
        if (row) return toRunRecord(row);
        // Not open: an ended run is answered as it stands.
        const stored = statements.getRun.get(runId);
        if (!stored) throw missing(runId);
        return toRunRecord(stored);
      });
    },
    async appendEvent(runId, type, payload) {
      return write(() => {
        const row = firstRow(statements.appendEvent, { run_id: runId, type, payload_json: JSON.stringify(payload) });
        if (row) return toRunEvent(row);
        const stored = statements.getRun.get(runId);
        if (!stored) throw missing(runId);
        throw runEndedError(STORE, runId, stored.status, type);
      });
    },
    async listEvents(runId, afterSeq) {
      return wrap(() => statements.listEvents.all(runId, checkedAfterSeq(afterSeq)).map(toRunEvent));
    },
    async listRuns(query) {
      return wrap(() => listRuns(checkedRunListQuery(query)));
    },
    async abandonStaleRun(runId, olderThanSeconds, error) {
      const { error: stored } = storablePatch({ error });
      return write(() => {
        const row = firstRow(statements.abandonRun, {
          run_id: runId,
          error_json: JSON.stringify(stored ?? error),
          age: `-${Math.max(0, olderThanSeconds)} seconds`,
        });
        return row && toRunRecord(row);
      });
    },
    async listStaleRuns(olderThanSeconds) {
      return wrap(() => statements.staleRuns.all(`-${Math.max(0, olderThanSeconds)} seconds`).map(toRunRecord));
    },
    async deleteEndedRuns(olderThanSeconds, limit) {
      const bounds = retentionArguments(olderThanSeconds, limit);
      return write(() =>
        db
          .transaction(() => {
            const runIds = statements.endedRuns.all({
              age: `-${bounds.olderThanSeconds} seconds`,
              limit: bounds.limit,
            });
            for (const runId of runIds) {
              statements.deleteRunEvents.run(runId);
              statements.deleteRun.run(runId);
            }
            return runIds.length;
          })
          .immediate(),
      );
    },
  };
}

/** Conversation history, its generation and forget. */
function conversationMethods(
  ctx: SqliteRunContext,
): Pick<
  RunStore,
  'appendMessages' | 'recentMessages' | 'recentHistory' | 'conversationGeneration' | 'forgetConversation'
> {
  const { db, statements, guard, wrap, write, history, path, busyTimeoutMs } = ctx;
  return {
    async appendMessages(memoryId, messages, appendOptions = {}) {
      await write(() =>
        db
          .transaction(() => {
            if (
              appendOptions.generation !== undefined &&
              (statements.selectGeneration.get(memoryId) ?? 0) !== appendOptions.generation
            )
              throw scopeForgottenError(STORE, memoryId);
            let position = statements.nextPosition.get(memoryId) ?? 1;
            for (const message of messages.map(storableMessage)) {
              const result = statements.insertMessage.run({
                memory_id: memoryId,
                position,
                message_id: message.messageId,
                run_id: message.runId,
                role: message.role,
                content: message.content,
                name: message.name ?? null,
                tool_call_id: message.toolCallId ?? null,
                tool_calls_json: message.toolCalls ? JSON.stringify(message.toolCalls) : null,
                token_count: message.tokenCount,
              });
              if (result.changes === 1) position++;
            }
          })
          .immediate(),
      );
    },
    async recentMessages(memoryId, maxTokens, options) {
      guard.check();
      return (await history.recentHistory(memoryId, maxTokens, options)).messages;
    },
    async recentHistory(memoryId, maxTokens, options) {
      guard.check();
      return history.recentHistory(memoryId, maxTokens, options);
    },
    async conversationGeneration(memoryId) {
      return wrap(() => statements.selectGeneration.get(memoryId) ?? 0);
    },
    async forgetConversation(memoryId) {
      await write(() => {
        db.transaction(() => {
          statements.forgetMessages.run(memoryId);
          statements.forgetEvents.run(memoryId);
          statements.forgetRuns.run(memoryId);
          statements.writeGeneration.run(memoryId, newScopeGeneration());
        }).immediate();
      });
      // As the memory store's forget: the log is emptied now if nothing holds it, else later.
      if (await emptyWriteAheadLogWithin(db, busyTimeoutMs)) return;
      emptyWriteAheadLogLater(db);
      process.emitWarning(
        `The conversation history of ${memoryId} was deleted, but another connection kept the write-ahead log ` +
          `from being emptied within ${busyTimeoutMs} ms, so old copies may remain in ${path}-wal until it lets go; ` +
          `the log is emptied then (at the latest when the store closes).`,
        { code: 'HARNESS_MEMORY_FORGET_LOG' },
      );
    },
  };
}
