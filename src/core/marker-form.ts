/**
 * Observer answers in two more shapes models write, rewritten into the `IMPORTANCE:` marker
 * form the observation parser reads: scored bullets and Markdown tables.
 * @module
 */

// A bullet whose text starts with a decimal score and a colon or pipe (`- 0.9: text`,
// `* .8 | text`), or with a bracketed decimal (`- [0.9] text`, `- (0.9) text`). Decimals only:
// `- [3] text` is how the snippet cites an observation; and not before a dash, which follows
// version numbers (`- 1.0 - ships in May`).
const DECIMAL = String.raw`(?:0?\.\d+|1\.0+)`;
const BULLET = String.raw`^\s*(?:[-*•+◦▪–]|\d{1,3}[.)])\s+[*_]*`;
const SCORED_BULLET = new RegExp(
  `${BULLET}(?:(${DECIMAL})[*_]*\\s*[:|]|[[(]\\s*(${DECIMAL})\\s*[\\])][*_]*\\s*[:|]?)\\s+(\\S.*)$`,
);
const ANY_BULLET = new RegExp(BULLET);
const IMPORTANCE_HEADER = /^[*_]*(?:importance|score|importance score)[*_]*$/i;
const CONTENT_HEADER = /^[*_]*(?:observations?|facts?|content|memory|memories)[*_]*$/i;
const SOURCE_HEADER = /^[*_]*(?:sources?|citations?|seqs?)[*_]*$/i;
const SEPARATOR_ROW = /^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$/;

/**
 * `text` written in the marker form when the whole answer is scored bullets (every bullet
 * scored) or Markdown tables of exactly an importance, an observation and, optionally, a
 * source column: each bullet or row as `IMPORTANCE: x` over its text (and `SOURCE: …`).
 * Otherwise `text` as it is: a list or table inside an observation (a weight log, a release
 * plan) is its content.
 */
export function toMarkerForm(text: string): string {
  const lines = text.split('\n');
  const bullets = lines.filter((line) => ANY_BULLET.test(line));
  const allScored = bullets.length > 0 && bullets.every((line) => SCORED_BULLET.test(line));
  const out: string[] = [];
  let changed = false;
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] as string;
    const table = tableAt(lines, index);
    if (table) {
      out.push(...table.lines);
      index = table.end - 1;
      changed = true;
      continue;
    }
    const scored = allScored ? SCORED_BULLET.exec(line) : null;
    if (scored) {
      out.push(`IMPORTANCE: ${scored[1] ?? scored[2]}`, scored[3] as string);
      changed = true;
    } else out.push(line);
  }
  return changed ? out.join('\n') : text;
}

/** The table whose header is at `start`, in marker form, and the index after its last row. */
function tableAt(lines: readonly string[], start: number): { lines: string[]; end: number } | undefined {
  const header = cellsOf(lines[start] ?? '');
  if (!header || !SEPARATOR_ROW.test(lines[start + 1] ?? '')) return undefined;
  const importance = header.findIndex((cell) => IMPORTANCE_HEADER.test(cell));
  const content = header.findIndex((cell) => CONTENT_HEADER.test(cell));
  const source = header.findIndex((cell) => SOURCE_HEADER.test(cell));
  // Exactly these columns: a table with others (a date, an owner) is content, kept whole.
  if (importance < 0 || content < 0 || header.length !== (source < 0 ? 2 : 3)) return undefined;
  const out: string[] = [];
  let end = start + 2;
  for (; end < lines.length; end++) {
    const cells = cellsOf(lines[end] as string);
    if (!cells) break;
    const text = cells[content] ?? '';
    if (text === '') continue;
    out.push(`IMPORTANCE: ${cells[importance] ?? ''}`, text);
    const cited = source >= 0 ? (cells[source] ?? '') : '';
    if (cited !== '') out.push(`SOURCE: ${cited}`);
  }
  return { lines: out, end };
}

/** The cells of a `| a | b |` row, trimmed; undefined for a line that is not one. */
function cellsOf(line: string): string[] | undefined {
  const trimmed = line.trim();
  if (!trimmed.startsWith('|')) return undefined;
  return trimmed
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map((cell) => cell.trim());
}
