/**
 * The memory an answer model was given, as evidence recall reads it.
 * @module
 */
import { SNIPPET_FRAME_LINES } from '../core/observation-snippet.js';
import type { LanguageModelMessage } from '../llm/language-model.js';
import { SESSION_DATE_LINE_PREFIX } from './_conversation-memory.js';
import { CONVERSATION_HISTORY_TAG, ROLE_LABEL, SESSION_HEADER_LINE } from './eval-answer-prompt.js';

const FRAME = new Set([...SNIPPET_FRAME_LINES, '<working-memory>', '</working-memory>']);
const SESSION_DATE_LINE = new RegExp(`^${escape(SESSION_DATE_LINE_PREFIX)}.*\\)$`, 'gm');
// `[12]` in `- [12] …`, `(superseded by [12])`, `observation [12] supersedes [3]`.
const SEQ_LABEL = /\[\d+\]/g;

/**
 * The text of `messages` without what the harness wrote around memory: the snippets' tags,
 * first line and headers, the observations' seq labels, the eval's session-date lines, and the
 * full-context fence, session headers and role labels. A gold answer found only there (`15` in a
 * date, `data` in the first line, `3` in `Session 3`) is not evidence.
 */
export function evidenceText(messages: readonly LanguageModelMessage[]): string {
  return messages
    .map((message) => withoutHistoryFrame(message.content))
    .join('\n')
    .replace(SESSION_DATE_LINE, '')
    .split('\n')
    .filter((line) => !FRAME.has(line.trim()))
    .join('\n')
    .replace(SEQ_LABEL, ' ');
}

const HISTORY_OPEN = `<${CONVERSATION_HISTORY_TAG}>\n`;
const HISTORY_CLOSE = `\n</${CONVERSATION_HISTORY_TAG}>`;

// Only inside the full-context fence: elsewhere a line may well start with `user: `.
function withoutHistoryFrame(content: string): string {
  if (!content.startsWith(HISTORY_OPEN) || !content.endsWith(HISTORY_CLOSE)) return content;
  return content
    .slice(HISTORY_OPEN.length, content.length - HISTORY_CLOSE.length)
    .split('\n')
    .filter((line) => !SESSION_HEADER_LINE.test(line))
    .map((line) => line.replace(ROLE_LABEL, ''))
    .join('\n');
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
