/**
 * The transcript types every layer shares: a stored conversation message and the tool
 * calls an assistant message carries. Plain data, so the storage ports, the model port and
 * the agent loop can all speak it without depending on each other.
 * @module
 */

/** A tool call the model asked for. `arguments` is the raw JSON text. */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** A message of a conversation's history, as replayed into later runs. */
export interface ConversationMessage {
  /** Stable identity; also the identity observational memory uses. */
  readonly messageId: string;
  readonly runId: string;
  readonly role: 'user' | 'assistant' | 'tool';
  readonly content: string;
  readonly name?: string;
  readonly toolCallId?: string;
  readonly toolCalls?: readonly ToolCall[];
  readonly tokenCount: number;
}
