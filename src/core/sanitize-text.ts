/**
 * Cleaning of model-produced memory text before it is stored or put back into a prompt.
 * @module
 */

// Tag characters, bidi controls, zero-width characters, word joiners, the BOM, and C0 controls
// other than \t (U+0009) and \n (U+000A). All of them can hide or reorder instructions.
const INVISIBLE =
  // oxlint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u{E0000}-\u{E007F}\u{202A}-\u{202E}\u{2066}-\u{2069}\u{200B}-\u{200F}\u{2060}-\u{2064}\u{FEFF}\u{0}-\u{8}\u{B}\u{C}\u{E}-\u{1F}]/gu;

// A `<` that could start a tag, a closing tag, a comment or a processing instruction:
// `<tag`, `</tag`, `< /tag`, `<?xml`, `<!--`, or `< tag>` (spaced, but closed like a tag).
// `a < b`, `x<5` and `<=` do not match.
const TAG_OPEN = /<(?=\p{L}|\s*[/?]\s*\p{L}|\s*!|\s+\p{L}[\p{L}\p{N}_.:-]*\s*\/?>)/gu;

/**
 * Removes invisible and control characters (tag characters, bidi controls, zero-width marks,
 * BOM, C0 controls except `\n` and `\t`) and turns `\r\n` and lone `\r` into `\n`.
 */
export function stripInvisible(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(INVISIBLE, '');
}

/**
 * Escapes every `<` that could open or close a tag as `&lt;`, so memory text cannot end or fake
 * our `<working-memory>` / `<observational-memory>` wrappers. Existing entities are left alone.
 */
export function neutralizeMarkup(text: string): string {
  return text.replace(TAG_OPEN, '&lt;');
}

/**
 * Cleans memory text for a bullet list: strips invisible characters, neutralises markup and
 * prefixes every line after the first with `indent` (which should be non-empty).
 */
export function renderDataLines(text: string, indent: string): string {
  const clean = neutralizeMarkup(stripInvisible(text));
  return clean.includes('\n') ? clean.split('\n').join(`\n${indent}`) : clean;
}
