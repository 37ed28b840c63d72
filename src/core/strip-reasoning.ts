/**
 * Removing a reasoning model's thinking from its answer.
 * @module
 */

const TAGS = 'think|thinking|reasoning';
const BLOCK = new RegExp(String.raw`<(${TAGS})>[\s\S]*?</\1\s*>`, 'gi');
const OPENING = new RegExp(String.raw`<(?:${TAGS})>`, 'i');
const CLOSING = new RegExp(String.raw`</(?:${TAGS})\s*>`, 'i');

/**
 * The answer without the thinking that reasoning models served without a reasoning parser
 * write into it (DeepSeek-R1, Qwen3 and others through Ollama, LM Studio or vLLM):
 * `<think>…</think>` blocks (also `<thinking>`, `<reasoning>`), a closing tag whose opening
 * one the chat template already sent (everything up to it), and an opening tag never closed
 * (everything after it: the answer was all thinking). Thinking is not what the model
 * concluded, so it must never be stored as memory.
 */
export function stripReasoning(text: string): string {
  if (!text.includes('</') && !OPENING.test(text)) return text;
  let answer = text.replace(BLOCK, '');
  const closing = CLOSING.exec(answer);
  if (closing) answer = answer.slice(closing.index + closing[0].length);
  const opening = OPENING.exec(answer);
  if (opening) answer = answer.slice(0, opening.index);
  return answer.trim() === '' ? '' : answer;
}
