import { describe, expect, it } from 'vitest';
import { RUNE_TOKEN_ESTIMATOR } from './token-estimator.js';
import { prepareTranscript } from './transcript.js';

// Built from pieces so the fixture does not look like a live credential to secret scanners.
const KEY = `sk-AB${'CDEFGHIJKLMNOPQRSTUVWXYZ012345'}`;

function prepared(message: Parameters<typeof prepareTranscript>[0][number]): string {
  const [first] = prepareTranscript([message], RUNE_TOKEN_ESTIMATOR, { redact: true });
  return first?.content ?? '';
}

describe('prepareTranscript: secrets behind JSON escapes', () => {
  it('redacts a key written with \\u escapes or \\/ in tool-call arguments', () => {
    const escaped = JSON.stringify({ action: 'set', value: `key ${KEY}` }).replace('C', '\\u0043');
    expect(escaped).toContain('\\u0043');
    const text = prepared({
      id: 'a1',
      role: 'assistant',
      content: '',
      toolCalls: [{ id: 'c1', name: 'save_note', arguments: escaped }],
    });
    expect(text).toContain('[REDACTED:openai_key]');
    expect(text).not.toMatch(/DEFGHIJKLMNOP/);
  });

  it('redacts a key split by an escaped invisible character, and a value labelled secret by its key', () => {
    const split = `{"note":"${KEY.slice(0, 8)}\\u200b${KEY.slice(8)}","api_key":"hunter2-but-longer"}`;
    const text = prepared({
      id: 'a1',
      role: 'assistant',
      content: 'calling',
      toolCalls: [{ id: 'c1', name: 'tool', arguments: split }],
    });
    expect(text).not.toMatch(/GHIJKLMNOPQRSTUV|hunter2/);
  });

  it('redacts a key behind escapes in a tool result that is JSON', () => {
    const result = `{"token":"${KEY.replace('C', '\\u0043')}","path":"a\\/b"}`;
    const text = prepared({ id: 't1', role: 'tool', toolCallId: 'c1', content: result });
    expect(text).toContain('[REDACTED:openai_key]');
    expect(text).not.toMatch(/DEFGHIJKLMNOP/);
  });

  it('leaves arguments and results that are not JSON as they were, still redacted as text', () => {
    const text = prepared({
      id: 'a1',
      role: 'assistant',
      content: '',
      toolCalls: [{ id: 'c1', name: 'tool', arguments: `{"cut": "${KEY}` }],
    });
    expect(text).toBe('[tool call tool] {"cut": "[REDACTED:openai_key]');
  });

  it('changes nothing when redaction is off', () => {
    const args = '{"a":"\\u0043"}';
    const [first] = prepareTranscript(
      [{ id: 'a1', role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'tool', arguments: args }] }],
      RUNE_TOKEN_ESTIMATOR,
      { redact: false },
    );
    expect(first?.content).toBe(`[tool call tool] ${args}`);
  });
});

describe('prepareTranscript: JSON read again only where it must be', () => {
  it('keeps JSON without escapes or secrets as it was, numbers and spacing included', () => {
    const result = '{"id": 1234567890123456789, "price": 10.10, "big": 1e400}';
    expect(prepared({ id: 't1', role: 'tool', toolCallId: 'c1', content: result })).toBe(result);
  });

  it('keeps a tool result too deep to walk as text, and still redacts it as text', () => {
    const deep = `${'['.repeat(5_000)}"${KEY}"${']'.repeat(5_000)}`;
    const text = prepared({ id: 't1', role: 'tool', toolCallId: 'c1', content: deep });
    expect(text).toContain('[REDACTED:openai_key]');
    expect(text.startsWith('[[[')).toBe(true);
  });
});

describe('prepareTranscript: the memory tools are never observed', () => {
  it('leaves out their calls and results, and keeps every other tool', () => {
    const messages = prepareTranscript(
      [
        {
          id: 'a',
          role: 'assistant',
          content: '',
          toolCalls: [
            { id: 'c1', name: 'working_memory', arguments: '{"action":"get","key":"k"}' },
            { id: 'c2', name: 'read_file', arguments: '{"path":"x"}' },
          ],
        },
        { id: 'b', role: 'tool', name: 'working_memory', toolCallId: 'c1', content: '{"value":"stored"}' },
        { id: 'c', role: 'tool', name: 'read_file', toolCallId: 'c2', content: 'file text' },
        {
          id: 'd',
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'c3', name: 'observational_memory', arguments: '{"action":"status"}' }],
        },
        { id: 'e', role: 'tool', name: 'observational_memory', toolCallId: 'c3', content: '{"enabled":true}' },
      ],
      RUNE_TOKEN_ESTIMATOR,
      { redact: true },
    );
    expect(messages.map((message) => [message.messageKey, message.content])).toEqual([
      ['id:a', '[tool call read_file] {"path":"x"}'],
      ['id:c', 'file text'],
    ]);
  });

  it('tells a memory tool result that carries only its call id (OpenAI-style history)', () => {
    const messages = prepareTranscript(
      [
        {
          id: 'a',
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'c1', name: 'working_memory', arguments: '{"action":"list"}' }],
        },
        { id: 'b', role: 'tool', toolCallId: 'c1', content: '{"entries":{"deploy_target":"prod"}}' },
        { id: 'c', role: 'user', content: 'thanks' },
      ],
      RUNE_TOKEN_ESTIMATOR,
      { redact: true },
    );
    expect(messages.map((message) => message.content)).toEqual(['thanks']);
  });
});

describe('prepareTranscript: memory read back through the MCP tools is never observed', () => {
  const snippet = '<observational-memory>\n- [1] User lives in Paris.\n</observational-memory>';

  it("leaves out the MCP server's memory tools, by their name or an MCP client's prefixed name", () => {
    for (const name of ['memory_context', 'memory_search', 'mcp__harness-memory__memory_search', 'memory_remember']) {
      const messages = prepareTranscript(
        [
          { id: 'a', role: 'assistant', content: '', toolCalls: [{ id: 'c1', name, arguments: '{}' }] },
          { id: 'b', role: 'tool', toolCallId: 'c1', content: '{"observations":[{"content":"User lives in Paris."}]}' },
          { id: 'c', role: 'tool', name, content: '{"observations":[{"content":"User lives in Paris."}]}' },
          { id: 'd', role: 'user', content: 'thanks' },
        ],
        RUNE_TOKEN_ESTIMATOR,
        { redact: true },
      );
      expect(
        messages.map((message) => message.content),
        name,
      ).toEqual(['thanks']);
    }
  });

  it('takes our snippets out of a message that quotes them, wherever they stand', () => {
    const quoted = JSON.stringify({ working_memory: '', observational_memory: snippet });
    expect(prepared({ id: 'a', role: 'tool', content: quoted })).not.toContain('Paris');
    expect(prepared({ id: 'a', role: 'user', content: `Here is what you had:\n${snippet}\nIs it right?` })).toBe(
      'Here is what you had:\n\nIs it right?',
    );
  });
});

describe('prepareTranscript: snippets taken out in one pass', () => {
  const snippet = '<observational-memory>\n- [1] User lives in Paris.\n</observational-memory>';
  /** What the regular expression this replaced took out: the reference for small inputs. */
  const byRegex = (text: string) => text.replace(/<(working-memory|observational-memory)>[\s\S]*?<\/\1>/g, '');
  const contentOf = (content: string) =>
    prepareTranscript([{ id: 'a', role: 'user', content }], RUNE_TOKEN_ESTIMATOR, { redact: false })[0]?.content ?? '';

  it('takes out what the regular expression took out, on random mixes of tags and text', () => {
    const parts = [
      '<working-memory>',
      '</working-memory>',
      '<observational-memory>',
      '</observational-memory>',
      'a',
      ' ',
      '<',
      '>',
    ];
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let round = 0; round < 2_000; round++) {
      const text = `x${Array.from({ length: Math.floor(random() * 12) }, () => parts[Math.floor(random() * parts.length)]).join('')}`;
      const expected = byRegex(text);
      expect(contentOf(text), JSON.stringify(text)).toBe(expected.trim() === '' ? '' : expected);
    }
  });

  it('goes through 4 MB of opening tags that never close at once (the expression took minutes)', () => {
    const text = `x${'<working-memory>'.repeat(250_000)}`;
    expect(contentOf(text)).toBe(text);
    expect(contentOf(`${text}${snippet}`)).toBe(text);
  });

  it('counts the tokens of what is kept, not of the snippet taken out', () => {
    const [plain] = prepareTranscript([{ id: 'a', role: 'user', content: 'Is it right?' }], RUNE_TOKEN_ESTIMATOR, {
      redact: false,
    });
    const [quoting] = prepareTranscript(
      [{ id: 'a', role: 'user', content: `Is it right?${snippet.repeat(20)}` }],
      RUNE_TOKEN_ESTIMATOR,
      { redact: false },
    );
    expect(quoting?.tokenCount).toBe(plain?.tokenCount);
  });

  it('observes a tool whose name only ends like a memory tool, and one of another prefix form', () => {
    for (const name of ['xmemory_search', 'Qworking_memory', 'smemory_forget']) {
      const messages = prepareTranscript(
        [{ id: 'b', role: 'tool', name, content: 'Bob was removed from the CRM' }],
        RUNE_TOKEN_ESTIMATOR,
        { redact: true },
      );
      expect(
        messages.map((message) => message.content),
        name,
      ).toEqual(['Bob was removed from the CRM']);
    }
  });
});

describe('prepareTranscript: one id, one message', () => {
  it('refuses a second, different message under an id already used in the call, naming both', () => {
    const prepare = (): unknown =>
      prepareTranscript(
        [
          { id: 'turn-1', role: 'user', content: 'I am allergic to peanuts.' },
          { id: 'turn-1', role: 'assistant', content: 'Noted: I will avoid tree nuts too.' },
        ],
        RUNE_TOKEN_ESTIMATOR,
        { redact: true },
      );
    expect(prepare).toThrow(/message 1 has the id of message 0 \(turn-1\) with another role or content/);
    expect(prepare).toThrow(expect.objectContaining({ code: 'OBSERVE_INPUT_INVALID', data: { index: 1 } }));
    expect(() =>
      prepareTranscript(
        [
          { index: 4, role: 'user', content: 'a' },
          { index: 4, role: 'user', content: 'b' },
        ],
        RUNE_TOKEN_ESTIMATOR,
        { redact: true },
      ),
    ).toThrow(/has the index of message 0 \(4\)/);
  });

  it('takes one message sent twice with its role in another case as the same message', () => {
    const messages = prepareTranscript(
      [
        { id: 'turn-1', role: 'User', content: 'hello' },
        { id: 'turn-1', role: 'user', content: 'hello' },
      ],
      RUNE_TOKEN_ESTIMATOR,
      { redact: true },
    );
    expect(messages.map((item) => item.messageKey)).toEqual(['id:turn-1']);
  });

  it('takes the same message sent twice once, and an id known stored is still left out', () => {
    const message = { id: 'turn-1', role: 'user', content: 'hello', toolCalls: [] };
    expect(
      prepareTranscript([message, { ...message }], RUNE_TOKEN_ESTIMATOR, { redact: true }).map(
        (item) => item.messageKey,
      ),
    ).toEqual(['id:turn-1']);
    expect(
      prepareTranscript([message, { ...message, id: 'turn-2' }], RUNE_TOKEN_ESTIMATOR, {
        redact: true,
        skip: new Set(['id:turn-1']),
      }).map((item) => item.messageKey),
    ).toEqual(['id:turn-2']);
  });
});
