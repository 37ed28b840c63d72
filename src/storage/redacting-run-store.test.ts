import { describe, expect, it } from 'vitest';
import { createInMemoryRunStore } from './in-memory-run-store.js';
import { createRedactingRunStore } from './redacting-run-store.js';
import { newRun } from './run-store.suite.js';
import type { RunStore } from './run-store.js';

const KEY = `sk-proj-${'Cn21_'.repeat(6)}`;

/** Stores a tool call of `name` and its result `content` in conversation `memoryId`; resolves with the stored result. */
async function storedToolResult(store: RunStore, memoryId: string, name: string, content: string) {
  await store.appendMessages(memoryId, [
    {
      messageId: 'a',
      runId: 'r1',
      role: 'assistant',
      content: '',
      toolCalls: [{ id: 'c1', name, arguments: '{}' }],
      tokenCount: 1,
    },
    { messageId: 't', runId: 'r1', role: 'tool', content, name, toolCallId: 'c1', tokenCount: 10 },
  ]);
  const [, stored] = await store.recentMessages(memoryId, 1000);
  return stored;
}

describe('redacting run store', () => {
  it("keeps the runner's ids on events as they are, redacting the rest of the payload", async () => {
    const store = createRedactingRunStore(createInMemoryRunStore());
    const run = await store.createRun(newRun('r-ids'));
    const event = await store.appendEvent(run.runId, 'assistant.message', {
      content: `mail alice@example.com, key ${KEY}`,
      conversation_id: 'alice@example.com',
      agent_id: 'order-4111111111111111',
      tenant_id: 'acme',
    });
    expect(event.payload).toMatchObject({
      conversation_id: 'alice@example.com',
      agent_id: 'order-4111111111111111',
      tenant_id: 'acme',
    });
    expect(event.payload['content']).not.toContain('alice@example.com');
    expect(event.payload['content']).not.toContain(KEY);
  });

  it('redacts the keys of a tool result, keeping two that redact alike apart', async () => {
    const store = createRedactingRunStore(createInMemoryRunStore());
    const content = JSON.stringify({
      members: { 'ann@mail.example.org': 'admin', [KEY]: 'owner', 'bob@x.example': 'viewer' },
    });
    const stored = await storedToolResult(store, 'm', 'team', content);
    expect(stored?.content).not.toContain('ann@mail.example.org');
    expect(stored?.content).not.toContain(KEY);
    expect(Object.values((JSON.parse(stored?.content ?? '{}') as { members: object }).members)).toEqual([
      'admin',
      'owner',
      'viewer',
    ]);
  });

  it('redacts a secret split by an invisible character, and keeps text without one as given', async () => {
    const store = createRedactingRunStore(createInMemoryRunStore());
    const hidden = `key ${KEY.slice(0, 3)}\u200B${KEY.slice(3)} done`;
    await store.createRun({ ...newRun('r1'), status: 'running' });
    await store.updateRun('r1', { output: hidden });
    expect((await store.getRun('r1'))?.output).toBe('key [REDACTED:openai_key] done');
    const emoji = 'coder 👩\u200D💻 and a zero\u200Bwidth space';
    await store.updateRun('r1', { output: emoji });
    expect((await store.getRun('r1'))?.output).toBe(emoji);
  });

  it('keeps a pretty-printed tool result JSON when it finds a key hidden in it', async () => {
    const store = createRedactingRunStore(createInMemoryRunStore());
    const hidden = `${KEY.slice(0, 3)}\u200B${KEY.slice(3)}`;
    const content = JSON.stringify({ note: `key ${hidden}`, other: 'kept' }, null, 2).replaceAll('\n', '\r\n');
    const stored = await storedToolResult(store, 'm2', 't', content);
    expect(JSON.parse(stored?.content ?? '')).toEqual({ note: 'key [REDACTED:openai_key]', other: 'kept' });
  });
});

describe('redacting run store: event payloads', () => {
  const hidden = `sk-\u200Bproj-${'Zq7'.repeat(10)}`;
  const shown = (value: unknown) => JSON.stringify(value).replaceAll('\u200B', '');

  it('redacts a key split by an invisible character in every string of a payload', async () => {
    const store = createRedactingRunStore(createInMemoryRunStore());
    const run = await store.createRun(newRun('r-hidden'));
    await store.appendEvent(run.runId, 'run.started', { prompt: `key ${hidden}`, tenant_id: 'acme' });
    await store.appendEvent(run.runId, 'assistant.message', {
      content: `here: ${hidden}`,
      tool_calls: [{ id: 'c1', name: 'x', note: hidden }],
      final: true,
    });
    const events = await store.listEvents(run.runId, -1);
    expect(events).toHaveLength(2);
    for (const event of events) expect(shown(event.payload)).not.toContain('Zq7Zq7Zq7');
    expect(events[0]?.payload).toEqual({ prompt: 'key [REDACTED:openai_key]', tenant_id: 'acme' });
  });

  it('keeps the ids and strings without a hidden secret as given', async () => {
    const store = createRedactingRunStore(createInMemoryRunStore());
    const run = await store.createRun(newRun('r-ids-hidden'));
    const emoji = 'coder 👩\u200D💻';
    const event = await store.appendEvent(run.runId, 'assistant.message', {
      content: `${emoji} ${hidden}`,
      other: emoji,
      conversation_id: `conv\u200B-${hidden}`,
    });
    expect(event.payload).toEqual({
      content: 'coder 👩\u200D💻 [REDACTED:openai_key]',
      other: emoji,
      conversation_id: `conv\u200B-${hidden}`,
    });
  });
});
