/**
 * The memory an answer model was given, as evidence recall reads it.
 * @module
 */
import { SNIPPET_FRAME_LINES } from '../core/observation-snippet.js';
import type { LanguageModelMessage } from '../llm/language-model.js';
import { SESSION_DATE_LINE_PREFIX } from './_conversation-memory.js';

const FRAME = new Set([...SNIPPET_FRAME_LINES, '<working-memory>', '</working-memory>']);
const SESSION_DATE_LINE = new RegExp(`^${escape(SESSION_DATE_LINE_PREFIX)}.*\\)$`, 'gm');
// `[12]` in `- [12] …`, `(superseded by [12])`, `observation [12] supersedes [3]`.
const SEQ_LABEL = /\[\d+\]/g;

/**
 * The text of `messages` without what the harness wrote around memory: the snippets' tags,
 * first line and headers, the observations' seq labels and the eval's session-date lines. A
 * gold answer found only there (`15` in a date, `data` in the first line) is not evidence.
 */
export function evidenceText(messages: readonly LanguageModelMessage[]): string {
  return messages
    .map((message) => message.content)
    .join('\n')
    .replace(SESSION_DATE_LINE, '')
    .split('\n')
    .filter((line) => !FRAME.has(line.trim()))
    .join('\n')
    .replace(SEQ_LABEL, ' ');
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
