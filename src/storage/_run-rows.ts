/**
 * Row shapes of the harness tables (runs, run events, conversation messages), shared by the
 * SQLite and Postgres run stores, and their mapping to domain objects. Private to
 * `src/storage/`.
 *
 * Times are ISO-8601 strings and counters numbers in both adapters (Postgres through
 * `PG_TYPES`). JSON columns are text in SQLite and already decoded json/jsonb in Postgres,
 * hence `unknown` and {@link decodeJson}.
 * @module
 */
import type { ToolCall } from '../core/conversation-message.js';
import { requireCount } from '../core/require-option.js';
import type { ConversationMessage, RecentMessagesOptions, RunEvent, RunRecord, RunStatus } from './run-store.js';

/** The run store's methods of runs and their events, as each adapter groups them. */
export type RunMethodName =
  | 'createRun'
  | 'getRun'
  | 'updateRun'
  | 'appendEvent'
  | 'listEvents'
  | 'listRuns'
  | 'listStaleRuns'
  | 'abandonStaleRun'
  | 'deleteEndedRuns';

/** A row of `harness_runs`. */
export interface RunRow {
  run_id: string;
  tenant_id: string;
  conversation_id: string;
  agent_id: string;
  status: string;
  prompt: string;
  model: string;
  system_prompt: string;
  max_steps: number;
  output: string | null;
  /** JSON text (SQLite) or decoded jsonb (Postgres) of `{ code, message }`, or null. */
  error_json: unknown;
  steps: number;
  input_tokens: number;
  output_tokens: number;
  parent_run_id: string | null;
  created_at: string;
  updated_at: string;
}

/** A row of `harness_run_events`. */
export interface RunEventRow {
  run_id: string;
  seq: number;
  type: string;
  timestamp: string;
  /** JSON text (SQLite) or decoded json (Postgres) of an object. */
  payload_json: unknown;
}

/** A row of `harness_conversation_messages`. */
export interface ConversationMessageRow {
  position: number;
  message_id: string;
  run_id: string;
  role: string;
  content: string;
  name: string | null;
  tool_call_id: string | null;
  /** JSON text (SQLite) or decoded json (Postgres) of the tool calls, or null. */
  tool_calls_json: unknown;
  token_count: number;
}

/** The columns of {@link ConversationMessageRow}, as a history read selects them. */
export const HISTORY_COLUMNS =
  'position, message_id, run_id, role, content, name, tool_call_id, tool_calls_json, token_count';

/**
 * A JSON column: JSON text (SQLite) is parsed, throwing if it does not parse; a decoded value (Postgres) is
 * taken as it is.
 */
export function decodeJson(value: unknown): unknown {
  return typeof value === 'string' ? JSON.parse(value) : value;
}

/** Maps a run row. */
export function toRunRecord(row: RunRow): RunRecord {
  return Object.freeze({
    runId: row.run_id,
    scope: Object.freeze({ tenantId: row.tenant_id, conversationId: row.conversation_id, agentId: row.agent_id }),
    status: row.status as RunStatus,
    prompt: row.prompt,
    model: row.model,
    systemPrompt: row.system_prompt,
    maxSteps: row.max_steps,
    output: row.output,
    error:
      row.error_json === null || row.error_json === ''
        ? null
        : (decodeJson(row.error_json) as { code: string; message: string }),
    steps: row.steps,
    usage: { inputTokens: row.input_tokens, outputTokens: row.output_tokens },
    parentRunId: row.parent_run_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  });
}

/** Maps a run-event row. */
export function toRunEvent(row: RunEventRow): RunEvent {
  return Object.freeze({
    id: `${row.run_id}:${row.seq}`,
    runId: row.run_id,
    seq: row.seq,
    type: row.type,
    timestamp: row.timestamp,
    payload: decodeJson(row.payload_json) as Record<string, unknown>,
  });
}

/** Maps a conversation-message row. */
export function toConversationMessage(row: ConversationMessageRow): ConversationMessage {
  return {
    messageId: row.message_id,
    runId: row.run_id,
    role: row.role as ConversationMessage['role'],
    content: row.content,
    ...(row.name !== null ? { name: row.name } : {}),
    ...(row.tool_call_id !== null ? { toolCallId: row.tool_call_id } : {}),
    ...(row.tool_calls_json !== null ? { toolCalls: decodeJson(row.tool_calls_json) as ToolCall[] } : {}),
    tokenCount: row.token_count,
  };
}

/** Rows asked for by a conversation's first history page when nothing is known of it. */
const FIRST_HISTORY_PAGE = 32;
/** The largest history page. */
const MAX_HISTORY_PAGE = 1024;
/** Rows asked for beyond what the last read needed: a few messages arrive between turns. */
const HISTORY_PAGE_SLACK = 8;
/** Conversations whose last page size is remembered. */
const HISTORY_HINTS = 4096;

/**
 * Sizes of the keyset pages a history read asks for, newest first: about as many rows as the
 * conversation's last read needed (so a steady conversation costs one page of the rows its
 * budget takes), doubling only while the budget is not spent.
 */
export class HistoryPageSizes {
  readonly #needed = new Map<string, number>();

  /** The first page for `memoryId`. */
  first(memoryId: string): number {
    const needed = this.#needed.get(memoryId);
    return needed === undefined ? FIRST_HISTORY_PAGE : Math.min(MAX_HISTORY_PAGE, needed + HISTORY_PAGE_SLACK);
  }

  /** The page after one of `previous` rows that did not spend the budget. */
  next(previous: number): number {
    return Math.min(MAX_HISTORY_PAGE, previous * 2);
  }

  /** Notes that the read of `memoryId` needed `rows` rows (those it kept and the one that did not fit). */
  remember(memoryId: string, rows: number): void {
    this.#needed.delete(memoryId);
    this.#needed.set(memoryId, rows);
    if (this.#needed.size > HISTORY_HINTS) this.#needed.delete(this.#needed.keys().next().value as string);
  }
}

/** The most tokens one message counts for in a history read: `clipAt`, or no limit. */
export function clipAtOf(options: RecentMessagesOptions | undefined): number {
  return requireCount('recentMessages', 'clipAt', options?.clipAt) ?? Number.POSITIVE_INFINITY;
}

/**
 * Reads a conversation's newest messages a keyset page at a time (sized by `sizes`) through
 * `page(before, limit)` (rows with a position below `before`, newest first), until a message
 * over `maxTokens` is reached (each counted as at most `clipAt` tokens) or the rows run out
 * (`exhausted`). Returns every row read, oldest first: the newest ones within the budget, and
 * before them the rest of the last page.
 */
export async function readRecentHistory(
  memoryId: string,
  maxTokens: number,
  sizes: HistoryPageSizes,
  page: (before: number, limit: number) => ConversationMessageRow[] | Promise<ConversationMessageRow[]>,
  clipAt: number = Number.POSITIVE_INFINITY,
): Promise<{ rows: ConversationMessageRow[]; exhausted: boolean }> {
  const rows: ConversationMessageRow[] = [];
  let before = Number.MAX_SAFE_INTEGER;
  let limit = sizes.first(memoryId);
  let used = 0;
  let kept = 0;
  for (;;) {
    const batch = await page(before, limit);
    rows.push(...batch);
    for (const row of batch) {
      const tokens = Math.min(row.token_count, clipAt);
      if (used + tokens > maxTokens) {
        sizes.remember(memoryId, kept + 1);
        return { rows: rows.reverse(), exhausted: false };
      }
      used += tokens;
      kept++;
    }
    if (batch.length < limit) break;
    before = (batch.at(-1) as ConversationMessageRow).position;
    limit = sizes.next(limit);
  }
  sizes.remember(memoryId, kept + 1);
  return { rows: rows.reverse(), exhausted: true };
}
