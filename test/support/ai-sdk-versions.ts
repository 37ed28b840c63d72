/**
 * The two AI SDK majors the middleware is tested with, side by side: `ai` 6 with
 * `@ai-sdk/openai-compatible` 2, and `ai` 7 (as `ai-v7`) with `@ai-sdk/openai-compatible` 3.
 */
import { createOpenAICompatible as createCompatible6 } from '@ai-sdk/openai-compatible';
import * as ai6 from 'ai';
import { MockLanguageModelV3 as Mock6, convertArrayToReadableStream as toStream6 } from 'ai/test';
import * as ai7 from 'ai-v7';
import { MockLanguageModelV3 as Mock7, convertArrayToReadableStream as toStream7 } from 'ai-v7/test';
import { createOpenAICompatible as createCompatible7 } from 'ai-sdk-openai-compatible-v3';
import type { ObservationalMemory } from '../../src/memory/observational-memory.js';

export type Ai = typeof ai6;

/** One AI SDK major: its `ai` module, mock model, stream helper and OpenAI-compatible provider. */
export interface AiSdkVersion {
  readonly label: string;
  readonly ai: Ai;
  readonly Mock: typeof Mock6;
  readonly toStream: typeof toStream6;
  readonly compatible: typeof createCompatible6;
  readonly twoSteps: () => unknown;
}

export const AI_SDK_VERSIONS: AiSdkVersion[] = [
  {
    label: 'ai 6 with @ai-sdk/openai-compatible 2',
    ai: ai6,
    Mock: Mock6,
    toStream: toStream6,
    compatible: createCompatible6,
    twoSteps: () => ai6.stepCountIs(2),
  },
  {
    label: 'ai 7 with @ai-sdk/openai-compatible 3',
    ai: ai7 as unknown as Ai,
    Mock: Mock7 as unknown as typeof Mock6,
    toStream: toStream7 as unknown as typeof toStream6,
    compatible: createCompatible7 as unknown as typeof createCompatible6,
    twoSteps: () => (ai7 as unknown as { isStepCount(n: number): unknown }).isStepCount(2),
  },
];

/** Token usage as a V3 model reports it. */
export const MOCK_USAGE = {
  inputTokens: { total: 3, noCache: 3, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 2, text: 2, reasoning: 0 },
};

/** `memory` with every message it is handed pushed to `handed` as `role:content` plus its tool calls. */
export function recordingMemory(memory: ObservationalMemory, handed: string[]): ObservationalMemory {
  return {
    ...memory,
    mode: memory.mode,
    observe: async (request) => {
      for (const message of request.messages)
        handed.push(`${message.role}:${message.content ?? ''}${JSON.stringify(message.toolCalls ?? [])}`);
      return memory.observe(request);
    },
  };
}
