/**
 * The prompt shape shared by the answer model and the judge, and the fencing of quoted text.
 * @module
 */
import { neutralizeMarkup, stripInvisible } from '../core/sanitize-text.js';

/** A system and a user message for one model call of the eval. */
export interface EvalPrompt {
  readonly system: string;
  readonly user: string;
}

/**
 * Quoted text inside `<tag>…</tag>`: invisible characters removed and tag-like `<` escaped, so
 * the text can neither close the fence nor open a fake one.
 */
export function fenced(tag: string, text: string): string {
  return `<${tag}>\n${neutralizeMarkup(stripInvisible(text)).trim()}\n</${tag}>`;
}
