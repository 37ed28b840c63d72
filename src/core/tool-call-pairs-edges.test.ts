/** Edges of tool-call pairing that a mutation sweep found unpinned: repeats and orphans alone. */
import { describe, expect, it } from 'vitest';
import { pairToolCalls } from './tool-call-pairs.js';
import type { ToolCallMessage } from './tool-call-pairs.js';

describe('tool-call pairs: edges', () => {
  it('keeps the first result given for a call and drops a later one', () => {
    const call: ToolCallMessage = { role: 'assistant', content: '', toolCalls: [{ id: 'c1' }] };
    const first: ToolCallMessage = { role: 'tool', content: 'first result', toolCallId: 'c1' };
    const again: ToolCallMessage = { role: 'tool', content: 'a retried result', toolCallId: 'c1' };
    const paired = pairToolCalls([call, first, again]);
    expect(paired).toHaveLength(2);
    expect(paired[1]).toBe(first);
  });

  it('drops a tool result in a history that has no tool call at all', () => {
    const history: ToolCallMessage[] = [
      { role: 'user', content: 'go' },
      { role: 'tool', content: 'a result left from a cut history', toolCallId: 'c9' },
      { role: 'assistant', content: 'done' },
    ];
    expect(pairToolCalls(history)).toEqual([history[0], history[2]]);
  });
});
