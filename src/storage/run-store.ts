/**
 * The run-store port: runs, their event history and each conversation's messages.
 * The harness keeps these beside memory (SQLite by default) so that a client connecting
 * late, or reconnecting, misses nothing.
 * @module
 */
import { StoreError } from '../core/errors.js';
import type { Scope } from '../core/scope.js';
import type { ConversationMessage } from '../core/conversation-message.js';

export type { ConversationMessage } from '../core/conversation-message.js';

/** Lifecycle of a run. */
export type RunStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';

/** Token usage summed over a run's model calls. */
export interface RunUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/** One run: a prompt answered by the agent loop in a scope. */
export interface RunRecord {
  readonly runId: string;
  readonly scope: Scope;
  readonly status: RunStatus;
  readonly prompt: string;
  readonly model: string;
  readonly systemPrompt: string;
  readonly maxSteps: number;
  readonly output: string | null;
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly steps: number;
  readonly usage: RunUsage;
  /** The run this one continues, if any. */
  readonly parentRunId: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/**
 * One event of a run's stream. `seq` counts from 0 per run. `isRunEvent` (from
 * `harness-memory/agent`) narrows `payload` to its type's documented fields.
 */
export interface RunEvent {
  /** `<run_id>:<seq>` */
  readonly id: string;
  readonly runId: string;
  readonly seq: number;
  readonly type: string;
  /** ISO 8601 UTC. */
  readonly timestamp: string;
  readonly payload: Readonly<Record<string, unknown>>;
}

/** Fields a run update may change. */
export type RunPatch = Partial<Pick<RunRecord, 'status' | 'output' | 'error' | 'steps' | 'usage'>>;

/** What {@link RunStore.listRuns} takes. */
export interface RunListQuery {
  readonly tenantId: string;
  readonly conversationId?: string;
  readonly agentId?: string;
  readonly status?: RunStatus;
  /**
   * Only runs after this one in the order (created before it, or at the same time with a smaller
   * id); `createdAt` as a store answered it (`toISOString`'s form), another form is `OPTION_INVALID`.
   */
  readonly before?: { readonly createdAt: string; readonly runId: string };
  readonly limit: number;
}

/** Run statuses, in lifecycle order. */
export const RUN_STATUSES: readonly RunStatus[] = ['queued', 'running', 'completed', 'failed', 'cancelled'];

/** Whether a run of `status` has not ended yet (`queued` or `running`): an ended run is never changed again. */
export function isRunOpen(status: RunStatus): boolean {
  return status === 'queued' || status === 'running';
}

/**
 * Whether `value` is a run time as a store answers it and a listing cursor carries it:
 * toISOString's plain form, in years 1 to 9999. toISOString also prints year 0 and signed
 * six-digit years, which Postgres's timestamptz refuses (SQLSTATE 22008/22009); another form
 * (no milliseconds, an offset) would page differently by backend, SQLite comparing it as text.
 */
export function isRunListTime(value: unknown): value is string {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(value)) return false;
  const time = new Date(value);
  return !Number.isNaN(time.getTime()) && time.toISOString() === value && !value.startsWith('0000');
}

/** The error of `createRun` for a run id already stored (a caller's `generateRunId` that repeats itself). */
export function runExistsError(store: string, runId: string): StoreError {
  return new StoreError({
    store,
    code: 'STORE_CONFLICT',
    message: `Run ${runId} already exists; a new run needs an id of its own.`,
    data: { runId },
  });
}

/** How {@link RunStore.recentMessages} counts a message toward its budget. */
export interface RecentMessagesOptions {
  /**
   * A message of more tokens counts as this many: the caller replays it clipped to that size,
   * so one large message (a file a tool read) does not end the history. A positive integer;
   * without it every message counts whole.
   */
  readonly clipAt?: number;
}

/** What {@link RunStore.recentHistory} answers. */
export interface RecentHistory {
  /** As `recentMessages` answers them. */
  readonly messages: ConversationMessage[];
  readonly generation: number;
}

/** Storage for runs, events and conversation history. */
export interface RunStore {
  readonly specificationVersion: 'v1';
  readonly name: string;
  /** Stores a new run; an id already stored is `STORE_CONFLICT` (`{ runId }`, {@link runExistsError}) and changes nothing. */
  createRun(run: Omit<RunRecord, 'createdAt' | 'updatedAt'>): Promise<RunRecord>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  /**
   * Writes the fields `patch` names (an empty patch is the heartbeat: it bumps `updatedAt`) and
   * answers the run. A run that ended (`completed`, `failed`, `cancelled`) is not changed: it
   * comes back as it stands, so a process whose run another one ended first (swept as
   * abandoned while this one was paused) sees that in the answer.
   */
  updateRun(runId: string, patch: RunPatch): Promise<RunRecord>;
  /**
   * Appends an event with the run's next seq (from 0). To a run that ended, only its first
   * terminal event (`run.completed`, `run.failed`, `run.cancelled`) is appended; anything
   * else throws `STORE_CONFLICT` with `{ runId, status }`, so the terminal event stays last.
   */
  appendEvent(runId: string, type: string, payload: Record<string, unknown>): Promise<RunEvent>;
  /** Events with seq greater than `afterSeq` (−1 for all), in order; an `afterSeq` that is not a whole number is `OPTION_INVALID`. */
  listEvents(runId: string, afterSeq: number): Promise<RunEvent[]>;
  /**
   * Appends messages to a conversation (by memory id); known message ids are skipped. With
   * `generation`, writes nothing and throws `SCOPE_FORGOTTEN` unless the conversation's
   * generation (see {@link conversationGeneration}) is still that value.
   */
  appendMessages(
    memoryId: string,
    messages: readonly ConversationMessage[],
    options?: { generation?: number },
  ): Promise<void>;
  /**
   * True when `recentMessages` and `recentHistory` count a message as at most `options.clipAt`
   * tokens. A turn then reads once past a large message; without it, it reads 16 times its
   * budget to see past one, and history beyond that is left out.
   */
  readonly supportsClipAt?: boolean;
  /**
   * The most recent messages of a conversation whose tokens fit `maxTokens`, oldest first,
   * each counted as at most `options.clipAt` tokens when that is given (see `supportsClipAt`).
   */
  recentMessages(memoryId: string, maxTokens: number, options?: RecentMessagesOptions): Promise<ConversationMessage[]>;
  /**
   * `recentMessages` with the conversation's generation, read with the messages (in their
   * snapshot, the last one when the read took several, or right after an empty page): a
   * forget that finished before the call shows in it. Optional: without it, a turn reads the
   * generation on its own.
   */
  recentHistory?(memoryId: string, maxTokens: number, options?: RecentMessagesOptions): Promise<RecentHistory>;
  /**
   * Runs still `queued` or `running` whose `updatedAt` is at least `olderThanSeconds` old by
   * the store's clock: their process stopped heartbeating them. (`updateRun(runId, {})`
   * is the heartbeat: it only bumps `updatedAt`.)
   */
  listStaleRuns(olderThanSeconds: number): Promise<RunRecord[]>;
  /**
   * Fails the run with `error` if it is still queued or running and was not written for
   * `olderThanSeconds` (by the store's clock), in one step: of several processes sweeping the
   * same abandoned run, one gets it back; the others, and a run written meanwhile, get
   * `undefined`.
   */
  abandonStaleRun(
    runId: string,
    olderThanSeconds: number,
    error: { readonly code: string; readonly message: string },
  ): Promise<RunRecord | undefined>;
  /**
   * Deletes, oldest first, at most `limit` runs that ended (`completed`, `failed` or
   * `cancelled`) and were neither created nor written in the last `olderThanSeconds` by the
   * store's clock, with their events, and answers how many it deleted. Conversation messages
   * are kept: they are the conversation's history, not the run's. Of several processes
   * deleting at once, each deletes other runs. Optional: without it, run retention
   * (`runRetentionDays`) cannot be turned on for the store.
   */
  deleteEndedRuns?(olderThanSeconds: number, limit: number): Promise<number>;
  /**
   * A page of the tenant's runs, newest first (by `createdAt`, then run id descending), with
   * the filters given, at most `limit`. Never another tenant's.
   */
  listRuns(query: RunListQuery): Promise<RunRecord[]>;
  /**
   * The conversation's generation: 0 until it is first forgotten, then a new random value at
   * every {@link forgetConversation}. A run reads it when it starts and passes it to every
   * append, so a forget while the run is active is never undone by the run.
   */
  conversationGeneration(memoryId: string): Promise<number>;
  /**
   * Deletes a conversation's messages, runs (prompts and outputs) and run events (memory forget)
   * and gives it a new generation. Other conversations' runs are kept.
   */
  forgetConversation(memoryId: string): Promise<void>;
  dispose(): Promise<void>;
}
