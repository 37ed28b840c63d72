/**
 * Cutting text to a length in UTF-16 code units without splitting a surrogate pair: half of
 * an emoji is not valid Unicode, and Postgres `jsonb`, JSON consumers and some model servers
 * refuse it.
 * @module
 */

/** `text`'s first `max` code units, one fewer when the cut would end on half of a surrogate pair. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

/** `text` with every lone surrogate (half of a pair, as a cut or a bad decoder leaves) replaced by U+FFFD. */
export function wellFormed(text: string): string {
  return text.isWellFormed() ? text : text.toWellFormed();
}
