/**
 * Keeps a replayed history valid for strict chat servers, which refuse (400) an assistant
 * tool call without its result and a tool result without its call. A cancelled or failed
 * step, a crash, or a history cut at a budget can leave either behind.
 * @module
 */

/** The part of a chat message that tool-call pairing looks at. */
export interface ToolCallMessage {
  readonly role: string;
  readonly content: string;
  /** For tool results: the call answered. */
  readonly toolCallId?: string;
  /** For assistant messages that called tools. */
  readonly toolCalls?: ReadonlyArray<{ readonly id: string }>;
}

/**
 * The messages with every tool call answered and every tool result matched, in order: an
 * assistant message keeps the calls whose results follow it (before the next message of
 * another role) and loses the others; a tool result that answers no call of the assistant
 * message just before it is dropped, as is a repeated result; an assistant message left
 * with neither calls nor text is dropped. Messages that need no change are returned as they
 * are (the same objects).
 */
export function pairToolCalls<T extends ToolCallMessage>(messages: readonly T[]): T[] {
  // Most histories carry no tool traffic: then every message stays, copied once at its size.
  if (!messages.some(hasToolTraffic)) return messages.slice();
  const paired: T[] = [];
  let index = 0;
  while (index < messages.length) {
    const message = messages[index] as T;
    index++;
    if (message.role === 'tool') continue;
    const calls = message.role === 'assistant' ? message.toolCalls : undefined;
    if (calls === undefined || calls.length === 0) {
      paired.push(message);
      continue;
    }
    // The results that follow, in their order: the first for each call; others are dropped.
    const results = new Map<string, T>();
    for (; index < messages.length && (messages[index] as T).role === 'tool'; index++) {
      const result = messages[index] as T;
      if (
        result.toolCallId !== undefined &&
        !results.has(result.toolCallId) &&
        calls.some((call) => call.id === result.toolCallId)
      )
        results.set(result.toolCallId, result);
    }
    const answered = calls.filter((call) => results.has(call.id));
    if (answered.length === calls.length) paired.push(message);
    else if (answered.length > 0) paired.push({ ...message, toolCalls: answered });
    else if (message.content.trim() !== '') paired.push(withoutToolCalls(message));
    paired.push(...results.values());
  }
  return paired;
}

function hasToolTraffic(message: ToolCallMessage): boolean {
  return message.role === 'tool' || (message.toolCalls !== undefined && message.toolCalls.length > 0);
}

function withoutToolCalls<T extends ToolCallMessage>(message: T): T {
  const { toolCalls: _dropped, ...rest } = message;
  return rest as T;
}
