/**
 * Whether an observation says what the messages it cites say, read word by word.
 * @module
 */

// Words that say nothing of what an observation is about: the subject observers write and
// the glue of English sentences.
const STOP_WORDS = new Set(
  'user users the and that this with for from they them their there has have had was were are is its his her she him you your our not but all any can will would should could been into onto over than then also just about which what when where who whom how'.split(
    ' ',
  ),
);

// Compared by their first letters: a crude stem, so `prefers` is `prefer` and `allergic` is `allergy`.
const STEM = 5;

function stemsOf(text: string): string[] {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return words.filter((word) => word.length >= 3 && !STOP_WORDS.has(word)).map((word) => word.slice(0, STEM));
}

/**
 * True when at least a third of the observation's words (by stem, common words left out)
 * occur in `sources`, the messages it cites. An observation of one word or none (a script
 * written without spaces reads as one word) is not judged: it is taken as supported.
 */
export function restsOn(observation: string, sources: readonly string[]): boolean {
  const stems = stemsOf(observation);
  if (stems.length < 2) return true;
  const known = new Set(sources.flatMap(stemsOf));
  const found = stems.filter((stem) => known.has(stem)).length;
  return found >= Math.max(1, Math.ceil(stems.length / 3));
}
