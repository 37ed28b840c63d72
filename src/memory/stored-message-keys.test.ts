import { describe, expect, it } from 'vitest';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import type { MemoryStore } from '../storage/store.js';
import { createObservationalMemory } from './observational-memory.js';
import { StoredMessageKeys } from './stored-message-keys.js';

const scope = { tenantId: 't', conversationId: 'c', agentId: 'a' };

/** An in-memory store that records the message keys each append was handed. */
function recordingStore(): { store: MemoryStore; appended: string[][] } {
  const inner = createInMemoryStore();
  const appended: string[][] = [];
  const store: MemoryStore = {
    ...inner,
    appendMessages: (input) => {
      appended.push(input.messages.map((message) => message.messageKey));
      return inner.appendMessages(input);
    },
  };
  delete (store as { appendMessagesAndClaim?: unknown }).appendMessagesAndClaim;
  return { store, appended };
}

describe('observational memory: messages known stored (issue 16)', () => {
  it('hands the store only messages it has not stored under the same generation', async () => {
    const { store, appended } = recordingStore();
    const memory = createObservationalMemory({
      store,
      defaultEnabled: true,
      defaults: { observeMinTokens: 1_000_000 },
    });
    const generation = await memory.generation(scope);
    const history = [
      { id: 'a', role: 'user', content: 'first' },
      { id: 'b', role: 'assistant', content: 'second' },
    ];
    await memory.observe({ scope, generation, messages: history });
    await memory.observe({ scope, generation, messages: [...history, { id: 'c', role: 'user', content: 'third' }] });
    expect(appended).toEqual([['id:a', 'id:b'], ['id:c']]);
    // Without a generation nothing is assumed: the store decides.
    await memory.observe({ scope, messages: history });
    expect(appended.at(-1)).toEqual(['id:a', 'id:b']);
  });

  it('knows nothing after a forget, which gives the scope a new generation', async () => {
    const { store, appended } = recordingStore();
    const memory = createObservationalMemory({
      store,
      defaultEnabled: true,
      defaults: { observeMinTokens: 1_000_000 },
    });
    await memory.observe({
      scope,
      generation: await memory.generation(scope),
      messages: [{ id: 'a', role: 'user', content: 'first' }],
    });
    await memory.forget(scope);
    const after = await memory.generation(scope);
    await memory.observe({ scope, generation: after, messages: [{ id: 'a', role: 'user', content: 'first again' }] });
    expect(appended).toEqual([['id:a'], ['id:a']]);
  });

  it('keeps keys per generation and within its bound', () => {
    const keys = new StoredMessageKeys();
    keys.add('m', 1, ['a', 'b']);
    expect(keys.known('m', 1)?.has('a')).toBe(true);
    expect(keys.known('m', 2)).toBeUndefined();
    keys.add('m', 2, ['c']);
    expect([...(keys.known('m', 2) ?? [])]).toEqual(['c']);
    keys.add(
      'm',
      2,
      Array.from({ length: 5000 }, (_, index) => `k${index}`),
    );
    const held = keys.known('m', 2);
    expect(held?.size).toBe(4096);
    expect(held?.has('k4999')).toBe(true);
    expect(held?.has('c')).toBe(false);
  });

  it('leaves out the known messages of a replayed history, in order, by key and then by identity', () => {
    const keys = new StoredMessageKeys();
    const message = (id: string) => ({ messageId: id });
    const keyOf = (item: { messageId: string }) => item.messageId;
    const history = [message('a'), message('b'), message('c')];
    expect(keys.unknown('m', 1, history, keyOf)).toBe(history);
    keys.add('m', 1, ['a', 'c']);
    const turn = [...history, message('d')];
    expect(keys.unknown('m', 1, turn, keyOf).map(keyOf)).toEqual(['b', 'd']);
    // Known once, the same objects stay known even after their keys fall out of the bound.
    keys.add(
      'm',
      1,
      Array.from({ length: 5000 }, (_, index) => `k${index}`),
    );
    expect(keys.known('m', 1)?.has('a')).toBe(false);
    expect(keys.unknown('m', 1, turn, keyOf).map(keyOf)).toEqual(['b', 'd']);
    // An equal message that is another object is looked up by key (no longer held: unknown).
    expect(keys.unknown('m', 1, [message('a')], keyOf).map(keyOf)).toEqual(['a']);
    // Another generation knows nothing, not even the objects.
    keys.add('m', 2, ['x']);
    expect(keys.unknown('m', 2, turn, keyOf).map(keyOf)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('holds at most 65,536 keys in all, forgetting the least recently used scopes first', () => {
    const keys = new StoredMessageKeys();
    const many = (scope: number) => Array.from({ length: 4096 }, (_, index) => `scope-${scope}-message-${index}`);
    for (let scope = 0; scope < 40; scope++) {
      keys.add(`m${scope}`, 1, many(scope));
      // The first scope is used again and again: it stays.
      keys.add('m0', 1, ['again']);
    }
    expect(keys.size).toBeLessThanOrEqual(65_536);
    expect(keys.known('m0', 1)?.has('again')).toBe(true);
    expect(keys.known('m39', 1)?.size).toBe(4096);
    expect(keys.known('m1', 1)).toBeUndefined();
    keys.delete('m39');
    expect(keys.known('m39', 1)).toBeUndefined();
    expect(keys.size).toBeLessThanOrEqual(65_536 - 4096);
  });
});
