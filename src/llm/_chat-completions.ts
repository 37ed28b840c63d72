/**
 * Chat completions wire format: our messages and tools in, the answer (whole or streamed) out.
 * Private to `src/llm/`.
 */
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { z } from 'zod/v4';
import { ModelCallError } from '../core/errors.js';
import { wholeTokenCount } from '../core/token-estimator.js';
import { truncateBody } from './_model-call-errors.js';
import type {
  FinishReason,
  LanguageModelMessage,
  LanguageModelResult,
  LanguageModelStreamPart,
  LanguageModelTool,
  LanguageModelToolCall,
  LanguageModelUsage,
} from './language-model.js';

/** Maps our messages to chat completions messages. */
export function toChatMessages(messages: readonly LanguageModelMessage[]): ChatCompletionMessageParam[] {
  return messages.map((message, index): ChatCompletionMessageParam => {
    const name = message.name === undefined ? {} : { name: message.name };
    switch (message.role) {
      case 'system':
        return { role: 'system', content: message.content, ...name };
      case 'user':
        return { role: 'user', content: message.content, ...name };
      case 'assistant': {
        const calls = message.toolCalls ?? [];
        if (calls.length === 0) return { role: 'assistant', content: message.content, ...name };
        return {
          role: 'assistant',
          content: message.content === '' ? null : message.content,
          ...name,
          tool_calls: calls.map((call) => ({
            id: call.id,
            type: 'function',
            function: { name: call.name, arguments: call.arguments },
          })),
        };
      }
      case 'tool':
        if (!message.toolCallId) {
          throw new ModelCallError({
            message: `Message ${index} has role "tool" but no toolCallId; set it to the id of the call it answers.`,
            retryable: false,
          });
        }
        return { role: 'tool', content: message.content, tool_call_id: message.toolCallId };
    }
  });
}

/** Maps our tools to chat completions function tools. */
export function toChatTools(tools: readonly LanguageModelTool[]): ChatCompletionTool[] {
  return tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: { ...tool.parameters } },
  }));
}

// Provider responses: only the fields we read, all nullish (house style).
const toolCallSchema = z.object({
  index: z.number().nullish(),
  id: z.string().nullish(),
  type: z.string().nullish(),
  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
});
const usageSchema = z
  .object({ prompt_tokens: z.number().nullish(), completion_tokens: z.number().nullish() })
  .nullish();
// Some providers answer content as parts, `[{ type: 'text', text }]`: the text parts, joined, are
// the text; reasoning and thinking parts are not part of the answer.
const TEXT_PART_TYPES: ReadonlySet<unknown> = new Set(['text', 'output_text']);
const contentSchema = z
  .union([z.string(), z.array(z.unknown())])
  .nullish()
  .transform((content) => (Array.isArray(content) ? content.map(textOfPart).join('') : content))
  .optional();
function textOfPart(part: unknown): string {
  if (typeof part !== 'object' || part === null) return '';
  const { type, text } = part as { type?: unknown; text?: unknown };
  return TEXT_PART_TYPES.has(type) && typeof text === 'string' ? text : '';
}
const messageSchema = z.object({
  content: contentSchema,
  refusal: z.string().nullish(),
  tool_calls: z.array(toolCallSchema).nullish(),
});
const completionSchema = z.object({
  choices: z.array(z.object({ message: messageSchema.nullish(), finish_reason: z.string().nullish() })),
  usage: usageSchema,
});
const chunkSchema = z.object({
  choices: z.array(z.object({ delta: messageSchema.nullish(), finish_reason: z.string().nullish() })).nullish(),
  usage: usageSchema,
});

/** Maps an OpenAI `finish_reason`; a refusal wins over any reason. */
export function mapFinishReason(reason: string | null | undefined, refusal: string | undefined): FinishReason {
  if (refusal) return 'refusal';
  switch (reason) {
    case 'stop':
      return 'stop';
    case 'length':
      return 'length';
    case 'tool_calls':
    case 'function_call':
      return 'tool-calls';
    case 'content_filter':
      return 'content-filter';
    default:
      return 'other';
  }
}

function mapUsage(usage: z.infer<typeof usageSchema>): LanguageModelUsage {
  return {
    inputTokens: wholeTokenCount(usage?.prompt_tokens),
    outputTokens: wholeTokenCount(usage?.completion_tokens),
  };
}

function badAnswer(url: string, what: string, body: unknown): ModelCallError {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return new ModelCallError({
    message:
      `${url} answered with ${what}; expected a chat completion. Check that the base URL points at an ` +
      `OpenAI-compatible server.`,
    url,
    responseBody: truncateBody(text ?? ''),
    retryable: false,
  });
}

/** Parses a whole chat completion; zero choices or a body of the wrong shape is an error. */
export function parseCompletion(body: unknown, url: string): LanguageModelResult {
  const parsed = completionSchema.safeParse(body);
  if (!parsed.success) throw badAnswer(url, 'a body that is not a chat completion', body);
  const choice = parsed.data.choices[0];
  if (choice === undefined) throw badAnswer(url, 'zero choices', body);
  const message = choice.message ?? {};
  const refusal = message.refusal ?? undefined;
  const toolCalls = (message.tool_calls ?? []).flatMap((call, index): LanguageModelToolCall[] => {
    if (call.type && call.type !== 'function') return [];
    return [
      // A blank id is no id: the call's result must name its call, as a streamed answer's does.
      { id: call.id || `call_${index}`, name: call.function?.name ?? '', arguments: call.function?.arguments ?? '' },
    ];
  });
  return {
    text: message.content ?? '',
    toolCalls,
    finishReason: mapFinishReason(choice.finish_reason, refusal),
    usage: mapUsage(parsed.data.usage),
    ...(refusal ? { refusal } : {}),
  };
}

/** Assembles streamed chunks; {@link StreamAssembler.finish} refuses a stream that never finished. */
export class StreamAssembler {
  readonly #url: string;
  #text = '';
  #refusal = '';
  #finishReason: string | undefined;
  #usage: z.infer<typeof usageSchema>;
  readonly #calls = new Map<number, { id: string; name: string; arguments: string }>();

  constructor(url: string) {
    this.#url = url;
  }

  /** Folds one chunk in and returns the parts it adds. */
  add(chunk: unknown): LanguageModelStreamPart[] {
    const parsed = chunkSchema.safeParse(chunk);
    if (!parsed.success) throw badAnswer(this.#url, 'a stream chunk that is not a chat completion chunk', chunk);
    if (parsed.data.usage) this.#usage = parsed.data.usage;
    const choice = parsed.data.choices?.[0];
    if (!choice) return [];
    const parts: LanguageModelStreamPart[] = [];
    const delta = choice.delta ?? {};
    if (delta.content) {
      this.#text += delta.content;
      parts.push({ type: 'text-delta', delta: delta.content });
    }
    if (delta.refusal) this.#refusal += delta.refusal;
    for (const call of delta.tool_calls ?? []) {
      const index = call.index ?? 0;
      const current = this.#calls.get(index) ?? { id: '', name: '', arguments: '' };
      // The id and name come once, in the first delta of a call; later ones carry arguments.
      if (call.id && !current.id) current.id = call.id;
      if (call.function?.name && !current.name) current.name = call.function.name;
      const argumentsDelta = call.function?.arguments ?? '';
      current.arguments += argumentsDelta;
      this.#calls.set(index, current);
      parts.push({
        type: 'tool-call-delta',
        index,
        ...(call.id ? { id: call.id } : {}),
        ...(call.function?.name ? { name: call.function.name } : {}),
        argumentsDelta,
      });
    }
    if (choice.finish_reason) this.#finishReason = choice.finish_reason;
    return parts;
  }

  /** The assembled result; throws when no chunk carried a finish reason (the stream was cut). */
  finish(): LanguageModelResult {
    if (this.#finishReason === undefined) {
      throw new ModelCallError({
        message: `The stream from ${this.#url} ended before the model finished; the partial answer was discarded.`,
        url: this.#url,
        retryable: true,
      });
    }
    const refusal = this.#refusal || undefined;
    return {
      text: this.#text,
      toolCalls: [...this.#calls.entries()]
        .sort(([left], [right]) => left - right)
        .map(([index, call]) => ({ id: call.id || `call_${index}`, name: call.name, arguments: call.arguments })),
      finishReason: mapFinishReason(this.#finishReason, refusal),
      usage: mapUsage(this.#usage),
      ...(refusal ? { refusal } : {}),
    };
  }
}
