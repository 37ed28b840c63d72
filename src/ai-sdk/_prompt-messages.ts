/**
 * AI SDK prompt and response parts as transcript messages, each with an id derived from what
 * it says, so a message a chat UI sends again is recognised rather than observed twice.
 * @module
 */
import { createHash, type Hash } from 'node:crypto';
import type {
  LanguageModelV3Content,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3ToolResultPart,
} from '@ai-sdk/provider';
import { cutText } from '../core/cut-text.js';
import { stripInvisible } from '../core/sanitize-text.js';
import type { TranscriptMessage } from '../core/transcript.js';

/** Marks the system messages the middleware put in front of a prompt, so it can replace them. */
export const MEMORY_BLOCK_OPTION = 'harnessMemory';

/**
 * A message before its id. Neither extra field is observed: `files` (a digest of its file
 * parts) tells messages apart, and `text` (its text parts alone, when its content also renders
 * file parts) is what its id is keyed on, as it was before file parts were rendered: a changed
 * id would hand the whole stored history over again.
 */
type Unidentified = Omit<TranscriptMessage, 'id'> & { readonly files?: string; readonly text?: string };
type Part = {
  readonly type: string;
  readonly text?: string;
  readonly mediaType?: unknown;
  readonly filename?: unknown;
};
type ToolCallLike = { readonly toolCallId: string; readonly toolName: string; readonly input: unknown };

/** Whether the middleware put this message there (it carries the block marker). */
export function isMemoryBlock(message: LanguageModelV3Message): boolean {
  const options = message.providerOptions?.[MEMORY_BLOCK_OPTION] as { block?: unknown } | undefined;
  return message.role === 'system' && options?.block === true;
}

/** The conversation messages of a prompt (system messages left out: they are instructions, not what was said). */
export function promptToTranscript(prompt: LanguageModelV3Prompt): Unidentified[] {
  const messages: Unidentified[] = [];
  for (const message of prompt) {
    if (message.role === 'user') {
      const files = filesOf(message.content);
      messages.push({ role: 'user', ...contentOf(message.content), ...(files === '' ? {} : { files }) });
    } else if (message.role === 'assistant') {
      const calls = message.content.filter((part) => part.type === 'tool-call');
      messages.push(assistantMessage(contentOf(message.content), calls));
      for (const part of message.content) if (part.type === 'tool-result') messages.push(toolResultMessage(part));
    } else if (message.role === 'tool') {
      for (const part of message.content) if (part.type === 'tool-result') messages.push(toolResultMessage(part));
    }
  }
  return messages;
}

/** What a model call answered, rendered as the AI SDK will send it back in the next prompt. */
export function responseToTranscript(content: readonly LanguageModelV3Content[]): Unidentified[] {
  const calls: ToolCallLike[] = [];
  const results: Unidentified[] = [];
  for (const part of content) {
    if (part.type === 'tool-call')
      calls.push({ toolCallId: part.toolCallId, toolName: part.toolName, input: parseInput(part.input) });
    else if (part.type === 'tool-result')
      results.push({ role: 'tool', toolCallId: part.toolCallId, name: part.toolName, content: stringify(part.result) });
  }
  const said = contentOf(content);
  if (said.content === '' && calls.length === 0) return results;
  return [assistantMessage(said, calls), ...results];
}

/**
 * Gives each message an id from its role, what it says and how many identical messages came
 * before it, so the same history sent again yields the same ids. A tool call is known by its
 * call id and tool name, and a tool result by its call id, not by their text: the next step's
 * prompt carries a call's input as the SDK validated it (keys in the schema's order, defaults
 * filled in) and a provider-run tool's result as the SDK renders it, not as the model wrote them.
 */
export function identify(messages: readonly Unidentified[]): TranscriptMessage[] {
  const seen = new Map<string, number>();
  return messages.map((message) => {
    const calls = (message.toolCalls ?? []).map((call) =>
      call.id ? [call.id, call.name] : [call.name, call.arguments],
    );
    const byCallId = message.role === 'tool' && (message.toolCallId ?? '') !== '';
    const key = JSON.stringify([
      message.role,
      byCallId ? '' : (message.text ?? message.content ?? ''),
      message.name ?? '',
      message.toolCallId ?? '',
      calls,
      message.files ?? '',
    ]);
    const occurrence = seen.get(key) ?? 0;
    seen.set(key, occurrence + 1);
    // The first 16 bytes as hex, a string of their own (a slice of the whole digest's would
    // keep the whole alive as long as the id is held).
    const digest = createHash('sha256').update(`${key}\u0000${occurrence}`).digest();
    const id = `ai-sdk:${digest.toString('hex', 0, 16)}`;
    const { files: _files, text: _text, ...observed } = message;
    return { ...observed, id };
  });
}

function assistantMessage(said: Said, calls: readonly ToolCallLike[]): Unidentified {
  if (calls.length === 0) return { role: 'assistant', ...said };
  return {
    role: 'assistant',
    ...said,
    toolCalls: calls.map((call) => ({ id: call.toolCallId, name: call.toolName, arguments: stringify(call.input) })),
  };
}

function toolResultMessage(part: LanguageModelV3ToolResultPart): Unidentified {
  return { role: 'tool', toolCallId: part.toolCallId, name: part.toolName, content: outputText(part.output) };
}

function outputText(output: LanguageModelV3ToolResultPart['output']): string {
  switch (output.type) {
    case 'text':
    case 'error-text':
      return output.value;
    case 'json':
    case 'error-json':
      return stringify(output.value);
    case 'execution-denied':
      return `execution denied${output.reason ? `: ${output.reason}` : ''}`;
    case 'content':
      return output.value.map((item) => (item.type === 'text' ? item.text : `[${item.type}]`)).join('\n');
    default:
      return stringify(output);
  }
}

/** A message's content, and its text parts alone when that differs (see {@link Unidentified}). */
type Said = { readonly content: string; readonly text?: string };

/**
 * The text parts, run together as they always were, with each file part as a line of its own
 * between them, in their order: the observer learns a file was sent, never what it holds.
 */
function contentOf(parts: readonly Part[]): Said {
  const lines: string[] = [];
  // The text parts since the last file part, undefined when there are none.
  let run: string | undefined;
  let text = '';
  let hasFiles = false;
  for (const part of parts) {
    if (part.type === 'text') {
      run = (run ?? '') + (part.text ?? '');
      text += part.text ?? '';
    } else if (part.type === 'file') {
      if (run !== undefined) lines.push(run);
      run = undefined;
      lines.push(filePlaceholder(part));
      hasFiles = true;
    }
  }
  if (run !== undefined) lines.push(run);
  return hasFiles ? { content: lines.join('\n'), text } : { content: text };
}

/** Longest file name or media type shown, in UTF-16 code units. */
const MAX_FILE_LABEL = 100;

/** `[file: photo.png (image/png)]`, or `[file: image/png]` without a file name. */
function filePlaceholder(part: Part): string {
  const mediaType = typeof part.mediaType === 'string' ? fileLabel(part.mediaType) : '';
  const filename = typeof part.filename === 'string' ? fileLabel(part.filename) : '';
  if (filename === '') return `[file: ${mediaType || 'unknown type'}]`;
  return mediaType === '' ? `[file: ${filename}]` : `[file: ${filename} (${mediaType})]`;
}

// A file name comes from outside, as the user's words do, and is cleaned as they are when
// stored (invisible characters stripped, secrets redacted); here it is also kept to one short
// line, so a placeholder stays one.
function fileLabel(text: string): string {
  const line = stripInvisible(text).replace(/\s+/g, ' ').trim();
  return line.length <= MAX_FILE_LABEL ? line : `${cutText(line, MAX_FILE_LABEL - 1)}…`;
}

/** A digest of the message's file parts (images, documents), or '' when it has none. */
function filesOf(parts: ReadonlyArray<{ readonly type: string }>): string {
  const hash = createHash('sha256');
  let count = 0;
  for (const part of parts) {
    if (part.type !== 'file') continue;
    const { data, mediaType } = part as unknown as { readonly data: unknown; readonly mediaType?: string };
    hash.update(`${mediaType ?? ''}\u0000`);
    digestInto(hash, data);
    count++;
  }
  return count === 0 ? '' : hash.digest('hex').slice(0, 32);
}

// File data is bytes, a URL or base64 text, bare (ai 6) or wrapped as `{ type, data | url }` (ai 7).
function digestInto(hash: Hash, value: unknown): void {
  if (value instanceof Uint8Array) hash.update(value);
  else if (value instanceof URL) hash.update(value.href);
  else if (value !== null && typeof value === 'object')
    for (const key of Object.keys(value).sort()) {
      hash.update(`${key}\u0000`);
      digestInto(hash, (value as Record<string, unknown>)[key]);
    }
  else hash.update(String(value));
  hash.update('\u0000');
}

// The AI SDK sends a blank tool input back as `{}`: read it so, or the call would look new.
function parseInput(input: string): unknown {
  if (input.trim() === '') return {};
  try {
    return JSON.parse(input);
  } catch {
    return input;
  }
}

function stringify(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
}
