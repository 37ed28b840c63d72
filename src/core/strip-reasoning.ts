/**
 * Removing a reasoning model's thinking from its answer.
 * @module
 */

const TAGS = 'think|thinking|reasoning';
const LEADING_BLOCK = new RegExp(String.raw`^\s*<(${TAGS})>[\s\S]*?</\1\s*>`, 'i');
const LEADING_OPENING = new RegExp(String.raw`^\s*<(?:${TAGS})>`, 'i');
const OPENING = new RegExp(String.raw`<(?:${TAGS})>`, 'i');
const CLOSING = new RegExp(String.raw`</(?:${TAGS})\s*>`, 'i');
// What an answer (not thinking) starts with: a score, a section, "nothing".
const ANSWER_MARK = /importance|summary|supersessions|contradictions|^\s*[*_#>\s]*none\b/im;

/**
 * The answer without the thinking that reasoning models served without a reasoning parser
 * (DeepSeek-R1, Qwen3 and others through Ollama, LM Studio or vLLM) write before it: leading
 * `<think>…</think>` blocks (also `<thinking>`, `<reasoning>`), the text before a closing tag
 * whose opening one the chat template already sent (when the tag stands on a line of its own
 * or ends a line with more lines after it, and nothing before it reads as an answer), and a
 * leading opening tag never closed (the answer was all thinking). A tag anywhere else, such
 * as one inside a sentence, is text, as in an observation about such tags. Thinking is not
 * what the model concluded, so it must never be stored as memory.
 */
export function stripReasoning(text: string): string {
  if (!text.includes('</') && !OPENING.test(text)) return text;
  let answer = text;
  for (let block = LEADING_BLOCK.exec(answer); block; block = LEADING_BLOCK.exec(answer))
    answer = answer.slice(block[0].length);
  if (LEADING_OPENING.test(answer)) return '';
  const closing = CLOSING.exec(answer);
  if (closing && endsThinking(answer, closing.index, closing.index + closing[0].length)) {
    const before = answer.slice(0, closing.index);
    if (!OPENING.test(before) && !ANSWER_MARK.test(before)) answer = answer.slice(closing.index + closing[0].length);
  }
  return answer.trim() === '' ? '' : answer;
}

/**
 * Whether the closing tag at `start`..`end` can end thinking the template opened: alone on
 * its line, or closing the last line of the thinking with the answer on the lines after it.
 * A tag inside a sentence ("XML with </reasoning> elements") is what the answer says.
 */
function endsThinking(answer: string, start: number, end: number): boolean {
  const lineStart = answer.lastIndexOf('\n', start - 1) + 1;
  const newline = answer.indexOf('\n', end);
  const after = answer.slice(end, newline < 0 ? answer.length : newline);
  if (after.trim() !== '') return false;
  return answer.slice(lineStart, start).trim() === '' || newline >= 0;
}
