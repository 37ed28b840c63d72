/**
 * The newest part of each conversation's history, kept by a run store between turns and
 * brought up to date by reading only the messages appended since (with the conversation's
 * generation, in the same snapshot). Private to `src/storage/`.
 * @module
 */
import { clipAtOf, readRecentHistory, toConversationMessage } from './_run-rows.js';
import { takeRecent } from './in-memory-run-store.js';
import type { ConversationMessageRow, HistoryPageSizes } from './_run-rows.js';
import type { ConversationMessage, RecentMessagesOptions } from './run-store.js';

/**
 * What a store reads for {@link HistoryCache}. Each call reads the generation in the rows'
 * snapshot, or, when there are no rows, in that snapshot or a later one (forgets set new
 * random generations, so a generation unchanged since means no forget came in between).
 */
export interface HistorySource {
  /**
   * The conversation's generation, and up to `limit` of its messages with a position above
   * `after`, newest first.
   */
  newer(
    memoryId: string,
    after: number,
    limit: number,
  ): Promise<{ generation: number; rows: ConversationMessageRow[] }>;
  /** The generation, and up to `limit` messages with a position below `before`, newest first. */
  older(
    memoryId: string,
    before: number,
    limit: number,
  ): Promise<{ generation: number; rows: ConversationMessageRow[] }>;
}

interface Entry {
  generation: number;
  /** Oldest first. */
  messages: ConversationMessage[];
  positions: number[];
  /** The newest position read (0 when the conversation had none). */
  lastPosition: number;
  /** Whether `messages` starts at the conversation's first message. */
  complete: boolean;
  /** Characters of the messages' text when last kept (what it counts toward {@link HELD_CHARACTERS}). */
  characters: number;
}

/** New messages read in one go before a full read is cheaper. */
const DELTA_LIMIT = 64;
/**
 * Messages kept beyond what the last read returned and the one past its budget, so a slightly
 * larger budget is still served: at most this many, and at most a quarter of the budget in
 * tokens (a run's prompt may be 200,000 characters; sixteen of them held for nothing were MBs).
 */
const KEEP_EXTRA = 16;
/** Conversations held. */
const CONVERSATIONS = 256;
/**
 * Characters of message text held for all conversations, at most, and for one. A read counting
 * large messages as their clip (`clipAt`) returns a few of any size: tool results of 200,000
 * characters held for 256 conversations were gigabytes.
 */
const HELD_CHARACTERS = 32 * 1024 * 1024;
const HELD_CHARACTERS_ONE = HELD_CHARACTERS / 8;

/** What {@link HistoryCache.recent} answers. */
export interface RecentHistoryRead {
  /** Oldest first; the caller trims them to the budget. */
  readonly messages: ConversationMessage[];
  /** The conversation's generation in the last snapshot the read looked at. */
  readonly generation: number;
}

/**
 * Serves `recentMessages` from the conversation's cached tail when its generation is
 * unchanged: one read of the messages appended since (usually none or a few) instead of a
 * page of the whole budget. Positions only grow within a generation (appends take the next
 * one under the conversation's lock; only a forget deletes, and it changes the generation),
 * so the tail plus what came after is exactly what a fresh read would return.
 */
export class HistoryCache {
  readonly #entries = new Map<string, Entry>();
  #characters = 0;
  readonly #source: HistorySource;
  readonly #sizes: HistoryPageSizes;

  constructor(source: HistorySource, sizes: HistoryPageSizes) {
    this.#source = source;
    this.#sizes = sizes;
  }

  /**
   * What `RunStore.recentHistory` answers, for the SQLite and Postgres run stores: the newest
   * messages within `maxTokens` (`options` checked), never starting with an orphaned tool result.
   */
  async recentHistory(
    memoryId: string,
    maxTokens: number,
    options: RecentMessagesOptions | undefined,
  ): Promise<RecentHistoryRead> {
    const clipAt = clipAtOf(options);
    const read = await this.recent(memoryId, maxTokens, clipAt);
    return { messages: takeRecent(read.messages, maxTokens, clipAt), generation: read.generation };
  }

  /**
   * The newest messages within `maxTokens` (each counted as at most `clipAt` tokens), oldest
   * first, with the generation read beside them.
   */
  async recent(
    memoryId: string,
    maxTokens: number,
    clipAt: number = Number.POSITIVE_INFINITY,
  ): Promise<RecentHistoryRead> {
    const entry = this.#entries.get(memoryId);
    if (entry) {
      const { generation, rows } = await this.#source.newer(memoryId, entry.lastPosition, DELTA_LIMIT);
      if (generation === entry.generation && rows.length < DELTA_LIMIT) {
        for (let index = rows.length - 1; index >= 0; index--) {
          const row = rows[index] as ConversationMessageRow;
          // Two reads at once fetch the same new rows: the first to finish keeps them.
          if (row.position <= entry.lastPosition) continue;
          entry.messages.push(toConversationMessage(row));
          entry.positions.push(row.position);
          entry.lastPosition = row.position;
        }
        const start = startWithin(entry.messages, maxTokens, entry.complete, clipAt);
        if (start !== undefined) return { messages: this.#keep(memoryId, entry, start, maxTokens), generation };
      }
    }
    return this.#readAfresh(memoryId, maxTokens, clipAt);
  }

  async #readAfresh(memoryId: string, maxTokens: number, clipAt: number): Promise<RecentHistoryRead> {
    let generation: number | undefined;
    let latest = 0;
    let consistent = true;
    const read = await readRecentHistory(
      memoryId,
      maxTokens,
      this.#sizes,
      async (before, limit) => {
        const page = await this.#source.older(memoryId, before, limit);
        latest = page.generation;
        if (generation === undefined) generation = page.generation;
        // A forget between two pages: the result may mix generations, so it is not kept.
        else if (page.generation !== generation) consistent = false;
        return page.rows;
      },
      clipAt,
    );
    const messages = read.rows.map(toConversationMessage);
    const start = startWithin(messages, maxTokens, true, clipAt) ?? 0;
    // After a forget between two pages the last page's generation is the new one: a caller
    // that holds the old one learns of the forget.
    if (!consistent || generation === undefined) {
      this.#drop(memoryId);
      return { messages: messages.slice(start), generation: latest };
    }
    const positions = read.rows.map((row) => row.position);
    const entry: Entry = {
      generation,
      messages,
      positions,
      lastPosition: positions.at(-1) ?? 0,
      complete: read.exhausted,
      characters: 0,
    };
    return { messages: this.#keep(memoryId, entry, start, maxTokens), generation };
  }

  /** Keeps the entry (trimmed to what was returned and a little more) and returns `messages[start..]`. */
  #keep(memoryId: string, entry: Entry, start: number, maxTokens: number): ConversationMessage[] {
    // The message past the budget is kept whatever its size: it tells the next read where the budget ends.
    let from = Math.max(0, start - 1);
    const allowance = Math.max(64, Math.floor(maxTokens / 4));
    for (let extra = 0, tokens = 0; from > 0 && extra < KEEP_EXTRA; extra++) {
      tokens += (entry.messages[from - 1] as ConversationMessage).tokenCount;
      if (tokens > allowance) break;
      from--;
    }
    if (from > 0) {
      entry.messages = entry.messages.slice(from);
      entry.positions = entry.positions.slice(from);
      entry.complete = false;
      start -= from;
    }
    this.#drop(memoryId);
    const messages = entry.messages.slice(start);
    entry.characters = charactersOf(entry.messages);
    if (entry.characters > HELD_CHARACTERS_ONE) return messages;
    this.#entries.set(memoryId, entry);
    this.#characters += entry.characters;
    while (this.#entries.size > CONVERSATIONS || this.#characters > HELD_CHARACTERS)
      this.#drop(this.#entries.keys().next().value as string);
    return messages;
  }

  #drop(memoryId: string): void {
    const entry = this.#entries.get(memoryId);
    if (!entry) return;
    this.#characters -= entry.characters;
    this.#entries.delete(memoryId);
  }

  /** Characters of message text held (for tests). */
  get characters(): number {
    return this.#characters;
  }
}

/** Characters of the messages' text and tool-call arguments. */
function charactersOf(messages: readonly ConversationMessage[]): number {
  let characters = 0;
  for (const message of messages) {
    characters += message.content.length;
    for (const call of message.toolCalls ?? []) characters += call.arguments.length;
  }
  return characters;
}

/**
 * Where the newest messages within `maxTokens` (each counted as at most `clipAt` tokens) start
 * in `messages` (oldest first): found when a message over the budget is reached, or when
 * `complete` (nothing older exists); otherwise undefined (older messages must be read).
 */
function startWithin(
  messages: readonly ConversationMessage[],
  maxTokens: number,
  complete: boolean,
  clipAt: number,
): number | undefined {
  let used = 0;
  for (let index = messages.length - 1; index >= 0; index--) {
    used += Math.min((messages[index] as ConversationMessage).tokenCount, clipAt);
    if (used > maxTokens) return index + 1;
  }
  return complete ? 0 : undefined;
}
