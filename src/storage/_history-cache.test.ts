import { describe, expect, it } from 'vitest';
import { HistoryCache } from './_history-cache.js';
import type { HistorySource } from './_history-cache.js';
import { HistoryPageSizes } from './_run-rows.js';
import type { ConversationMessageRow } from './_run-rows.js';

/** A conversation in an array, read as a store would: newest first, `limit` rows a page. */
function conversation(): {
  source: HistorySource;
  rows: ConversationMessageRow[];
  state: { generation: number; beforePage?: () => void; pages: string[] };
} {
  const rows: ConversationMessageRow[] = [];
  const state: { generation: number; beforePage?: () => void; pages: string[] } = { generation: 0, pages: [] };
  const page = (kind: string, keep: (row: ConversationMessageRow) => boolean, limit: number) => {
    state.pages.push(kind);
    state.beforePage?.();
    return { generation: state.generation, rows: rows.filter(keep).reverse().slice(0, limit) };
  };
  return {
    rows,
    state,
    source: {
      newer: async (_memoryId, after, limit) => page('newer', (row) => row.position > after, limit),
      older: async (_memoryId, before, limit) => page('older', (row) => row.position < before, limit),
    },
  };
}

function row(position: number, tokens = 10): ConversationMessageRow {
  return {
    position,
    message_id: `m${position}`,
    run_id: 'r',
    role: 'user',
    content: `message ${position}`,
    name: null,
    tool_call_id: null,
    tool_calls_json: null,
    token_count: tokens,
  };
}

describe('HistoryCache', () => {
  it('answers the generation of the read, from the cache or afresh', async () => {
    const { source, rows, state } = conversation();
    const cache = new HistoryCache(source, new HistoryPageSizes());
    rows.push(row(1), row(2));
    expect(await cache.recent('c', 100)).toMatchObject({ generation: 0 });
    rows.push(row(3));
    state.pages = [];
    const cached = await cache.recent('c', 100);
    expect(cached.messages.map((message) => message.messageId)).toEqual(['m1', 'm2', 'm3']);
    expect(cached.generation).toBe(0);
    expect(state.pages).toEqual(['newer']);
    // Forgotten: the delta read shows another generation, so the history is read afresh.
    rows.length = 0;
    state.generation = 7;
    rows.push(row(1));
    expect(await cache.recent('c', 100)).toMatchObject({ generation: 7, messages: [{ messageId: 'm1' }] });
  });

  it('answers the last page generation when a forget came between two pages, and keeps nothing', async () => {
    const { source, rows, state } = conversation();
    const cache = new HistoryCache(source, new HistoryPageSizes());
    // More rows than a first page, each under the budget: the read takes a second page.
    for (let position = 1; position <= 300; position++) rows.push(row(position, 1));
    state.beforePage = () => {
      if (state.pages.length === 2) state.generation = 9;
    };
    const read = await cache.recent('c', 10_000);
    expect(state.pages.length).toBeGreaterThan(2);
    expect(new Set(state.pages)).toEqual(new Set(['older']));
    expect(read.generation).toBe(9);
    // Not kept: the next read starts afresh ("older" pages), not with a delta read.
    state.beforePage = undefined;
    state.pages = [];
    const again = await cache.recent('c', 10_000);
    expect(again.generation).toBe(9);
    expect(state.pages[0]).toBe('older');
    // Kept now: a delta read.
    state.pages = [];
    await cache.recent('c', 10_000);
    expect(state.pages).toEqual(['newer']);
  });
});

describe('HistoryCache: what it keeps past the budget', () => {
  it('keeps a few small messages past the budget, serving a slightly larger budget without a read', async () => {
    const { source, rows, state } = conversation();
    const cache = new HistoryCache(source, new HistoryPageSizes());
    for (let position = 1; position <= 100; position++) rows.push(row(position, 10));
    await cache.recent('c', 400);
    state.pages = [];
    expect((await cache.recent('c', 450)).messages).toHaveLength(45);
    expect(state.pages).toEqual(['newer']);
  });

  it('keeps only the message past the budget when older ones are large (a 200,000-character prompt each)', async () => {
    const { source, rows, state } = conversation();
    const cache = new HistoryCache(source, new HistoryPageSizes());
    for (let position = 1; position <= 20; position++) rows.push(row(position, 50_000));
    rows.push(row(21, 10), row(22, 10));
    expect((await cache.recent('c', 100)).messages.map((message) => message.messageId)).toEqual(['m21', 'm22']);
    // The same budget is served from the cache; a larger one reads the older messages again.
    state.pages = [];
    expect((await cache.recent('c', 100)).messages).toHaveLength(2);
    expect(state.pages).toEqual(['newer']);
    state.pages = [];
    expect((await cache.recent('c', 60_000)).messages).toHaveLength(3);
    expect(state.pages).toContain('older');
  });

  it('holds at most 32 Mi characters of message text across conversations, and still answers each read whole', async () => {
    const sources = new Map<string, ReturnType<typeof conversation>>();
    const cache = new HistoryCache(
      {
        newer: (memoryId, after, limit) =>
          (sources.get(memoryId) as ReturnType<typeof conversation>).source.newer(memoryId, after, limit),
        older: (memoryId, before, limit) =>
          (sources.get(memoryId) as ReturnType<typeof conversation>).source.older(memoryId, before, limit),
      },
      new HistoryPageSizes(),
    );
    // Each conversation: five tool results of 200,000 characters (50,000 tokens) under a clip of
    // 2,000 tokens, so a budget of 10,000 takes all five: a million characters a conversation.
    for (let index = 0; index < 60; index++) {
      const held = conversation();
      for (let position = 1; position <= 5; position++)
        held.rows.push({ ...row(position, 50_000), content: 'x'.repeat(200_000) });
      sources.set(`c${index}`, held);
      const read = await cache.recent(`c${index}`, 10_000, 2_000);
      expect(read.messages.map((message) => message.messageId)).toEqual(['m1', 'm2', 'm3', 'm4', 'm5']);
      expect(cache.characters).toBeLessThanOrEqual(32 * 1024 * 1024);
    }
    expect(cache.characters).toBeGreaterThan(16 * 1024 * 1024);
    // The newest conversations are still served from the cache: one delta read.
    const newest = sources.get('c59') as ReturnType<typeof conversation>;
    newest.state.pages = [];
    expect((await cache.recent('c59', 10_000, 2_000)).messages).toHaveLength(5);
    expect(newest.state.pages).toEqual(['newer']);
    // One conversation over an eighth of it is answered, not held.
    const huge = conversation();
    for (let position = 1; position <= 5; position++)
      huge.rows.push({ ...row(position, 2_000_000), content: 'y'.repeat(1_000_000) });
    sources.set('huge', huge);
    const before = cache.characters;
    expect((await cache.recent('huge', 10_000, 2_000)).messages).toHaveLength(5);
    expect(cache.characters).toBe(before);
  });
});
