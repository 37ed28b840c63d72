import { describe, expect, it } from 'vitest';
import { pairToolCalls } from './tool-call-pairs.js';
import type { ToolCallMessage } from './tool-call-pairs.js';

const user = (content: string): ToolCallMessage => ({ role: 'user', content });
const calls = (content: string, ...ids: string[]): ToolCallMessage => ({
  role: 'assistant',
  content,
  toolCalls: ids.map((id) => ({ id })),
});
const result = (id: string): ToolCallMessage => ({ role: 'tool', content: `result ${id}`, toolCallId: id });
const shape = (messages: readonly ToolCallMessage[]) =>
  messages.map((message) => [
    message.role,
    message.toolCallId ?? message.toolCalls?.map((call) => call.id).join(',') ?? message.content,
  ]);

describe('tool-call pairs (issue 12)', () => {
  it('keeps a history whose every call has its result as it is', () => {
    const history = [
      user('go'),
      calls('', 'c1', 'c2'),
      result('c2'),
      result('c1'),
      { role: 'assistant', content: 'done' },
    ];
    const paired = pairToolCalls(history);
    expect(paired).toEqual(history);
    expect(paired[1]).toBe(history[1]);
  });

  it('gives a history without tool traffic back whole, in a new array of the same messages', () => {
    const history = [user('go'), { role: 'assistant', content: 'ok', toolCalls: [] }, user('next')];
    const paired = pairToolCalls(history);
    expect(paired).not.toBe(history);
    expect(paired).toHaveLength(3);
    paired.forEach((message, index) => expect(message).toBe(history[index]));
  });

  it('drops the calls a cancelled step left without a result, keeping those answered', () => {
    expect(shape(pairToolCalls([user('go'), calls('', 'c1', 'c2'), result('c1'), user('next')]))).toEqual([
      ['user', 'go'],
      ['assistant', 'c1'],
      ['tool', 'c1'],
      ['user', 'next'],
    ]);
  });

  it('keeps the text of an assistant message none of whose calls was answered, and drops an empty one', () => {
    expect(shape(pairToolCalls([user('go'), calls('Let me look.', 'c1'), user('next')]))).toEqual([
      ['user', 'go'],
      ['assistant', 'Let me look.'],
      ['user', 'next'],
    ]);
    expect(pairToolCalls([user('go'), calls('  ', 'c1'), user('next')]).map((message) => message.role)).toEqual([
      'user',
      'user',
    ]);
    expect(pairToolCalls([calls('Let me look.', 'c1')])[0]).not.toHaveProperty('toolCalls');
  });

  it(
    'drops a result without its call: at the start of a history cut by a budget, after another message, or ' +
      'repeated',
    () => {
      expect(
        shape(
          pairToolCalls([
            result('c0'),
            user('go'),
            result('c9'),
            calls('', 'c1'),
            result('c1'),
            result('c1'),
            result('c7'),
          ]),
        ),
      ).toEqual([
        ['user', 'go'],
        ['assistant', 'c1'],
        ['tool', 'c1'],
      ]);
    },
  );
});
