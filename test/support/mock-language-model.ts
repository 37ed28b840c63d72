import type {
  FinishReason,
  LanguageModel,
  LanguageModelCallOptions,
  LanguageModelResult,
  LanguageModelToolCall,
} from '../../src/llm/language-model.js';

/** A scripted reply: text, or tool calls, or a function of the call. */
export type MockReply =
  | string
  | { text?: string; toolCalls?: LanguageModelToolCall[]; delayMs?: number; finishReason?: FinishReason }
  | Error
  | ((options: LanguageModelCallOptions) => MockReply | Promise<MockReply>);

/** An in-process model that answers from a script and records every call. */
export interface MockLanguageModel extends LanguageModel {
  readonly calls: LanguageModelCallOptions[];
  enqueue(...replies: MockReply[]): void;
}

/** Creates a mock model; when the script runs out, `fallback` answers. */
export function createMockLanguageModel(fallback: MockReply = 'ok'): MockLanguageModel {
  const queue: MockReply[] = [];
  const calls: LanguageModelCallOptions[] = [];
  const resolve = async (reply: MockReply, options: LanguageModelCallOptions): Promise<LanguageModelResult> => {
    if (typeof reply === 'function') return resolve(await reply(options), options);
    if (reply instanceof Error) throw reply;
    const spec = typeof reply === 'string' ? { text: reply } : reply;
    if (spec.delayMs) await new Promise((done) => setTimeout(done, spec.delayMs));
    const toolCalls = spec.toolCalls ?? [];
    return {
      text: spec.text ?? '',
      toolCalls,
      finishReason: spec.finishReason ?? (toolCalls.length > 0 ? 'tool-calls' : 'stop'),
      usage: { inputTokens: 10, outputTokens: 5 },
    };
  };
  return {
    specificationVersion: 'v1',
    provider: 'mock',
    modelId: 'mock-model',
    calls,
    enqueue(...replies) {
      queue.push(...replies);
    },
    async doGenerate(options) {
      calls.push(options);
      return resolve(queue.shift() ?? fallback, options);
    },
  };
}
