/** Lines an answer needs before its repetition is judged. */
const MIN_LINES_TO_JUDGE = 12;

/**
 * True when fewer than a third of the text's non-blank lines are distinct: the mark of a
 * model caught in a loop, whose answer must not replace the last reflection.
 */
export function isRepetitive(text: string): boolean {
  const lines = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  if (lines.length < MIN_LINES_TO_JUDGE) return false;
  return new Set(lines).size * 3 < lines.length;
}
