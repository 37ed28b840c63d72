/**
 * The language-model port: messages in; text, tool calls, finish reason and usage out.
 * Adapters (the OpenAI-compatible client, test mocks) implement it.
 * @module
 */

import type { ToolCall } from '../core/conversation-message.js';

/** A tool call the model asked for. `arguments` is the raw JSON text. */
export type LanguageModelToolCall = ToolCall;

/** One chat message sent to the model. */
export interface LanguageModelMessage {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly content: string;
  readonly name?: string;
  /** For `tool` messages: the call answered. */
  readonly toolCallId?: string;
  /** For `assistant` messages that called tools. */
  readonly toolCalls?: readonly LanguageModelToolCall[];
}

/** A tool offered to the model, described by JSON Schema. */
export interface LanguageModelTool {
  readonly name: string;
  readonly description: string;
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** Why the model stopped. `length` means the answer was cut off by the token limit. */
export type FinishReason = 'stop' | 'length' | 'tool-calls' | 'content-filter' | 'refusal' | 'error' | 'other';

/** Token usage reported by the model (0 when it reports none). */
export interface LanguageModelUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/** Options of one call. */
export interface LanguageModelCallOptions {
  readonly messages: readonly LanguageModelMessage[];
  readonly tools?: readonly LanguageModelTool[];
  /** Overrides the adapter's model id for this call. */
  readonly modelId?: string;
  readonly maxOutputTokens?: number;
  readonly temperature?: number;
  readonly abortSignal?: AbortSignal;
}

/** The model's answer. */
export interface LanguageModelResult {
  readonly text: string;
  readonly toolCalls: readonly LanguageModelToolCall[];
  readonly finishReason: FinishReason;
  readonly usage: LanguageModelUsage;
  /** The refusal text, when the model refused. */
  readonly refusal?: string;
}

/** One event of a streamed answer. `finish` comes last and carries the assembled result. */
export type LanguageModelStreamPart =
  | { readonly type: 'text-delta'; readonly delta: string }
  | {
      readonly type: 'tool-call-delta';
      readonly index: number;
      readonly id?: string;
      readonly name?: string;
      readonly argumentsDelta: string;
    }
  | { readonly type: 'finish'; readonly result: LanguageModelResult };

/** A chat model. Call `doGenerate` through the services; it is not meant for direct use. */
export interface LanguageModel {
  readonly specificationVersion: 'v1';
  /** Provider name, for example `openai` or `openrouter`. */
  readonly provider: string;
  readonly modelId: string;
  doGenerate(options: LanguageModelCallOptions): Promise<LanguageModelResult>;
}
