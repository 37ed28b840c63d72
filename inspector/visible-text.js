// @ts-check
// Text a user typed (a run's prompt, its output) shown as what it is: its bidi controls,
// which are invisible and can reorder what follows them ("account \u202E0987654321" reads
// as 1234567890), are shown as markers, and the text is isolated from what surrounds it. Only
// the display changes: what is sent back to the API is always the text itself.
import { h } from './dom.js';

// The embeddings, overrides and isolates, their terminators, and the direction marks.
const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/gu;

/**
 * `text` with each bidi control character replaced by a visible marker such as `⟨U+202E⟩`.
 * @param {string} text
 */
export function visibleText(text) {
  return text.replace(
    BIDI_CONTROLS,
    (character) => `⟨U+${(character.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}⟩`,
  );
}

/**
 * `text` as {@link visibleText}, in a `<bdi>`: its direction cannot spill over the text
 * around it.
 * @param {string} text
 */
export function isolatedText(text) {
  return h('bdi', {}, visibleText(text));
}
