/**
 * Observer answers in two more shapes models write, rewritten into the `IMPORTANCE:` marker
 * form the observation parser reads: scored bullets and Markdown tables.
 * @module
 */

// A bullet whose text starts with a decimal score and a separator (`- 0.9: text`,
// `* .8 | text`, `1. 0.7 - text`), or with a bracketed decimal (`- [0.9] text`, `- (0.9) text`).
// Decimals only: `- [3] text` is how the snippet cites an observation, not a score.
const DECIMAL = String.raw`(?:0?\.\d+|1\.0+)`;
const BULLET = String.raw`^\s*(?:[-*•+◦▪–]|\d{1,3}[.)])\s+[*_]*`;
const SCORED_BULLET = new RegExp(
  `${BULLET}(?:(${DECIMAL})[*_]*\\s*[:|–—-]|[[(]\\s*(${DECIMAL})\\s*[\\])][*_]*\\s*[:|–—-]?)\\s+(\\S.*)$`,
);
const IMPORTANCE_HEADER = /^[*_]*(?:importance|score|weight|priority)(?:\s+score)?[*_]*$/i;
const CONTENT_HEADER = /^[*_]*(?:observation|fact|content|memory|text|note)s?[*_]*$/i;
const SOURCE_HEADER = /^[*_]*(?:sources?|cites?|citations?|messages?|seqs?)[*_]*$/i;
const SEPARATOR_ROW = /^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$/;

/**
 * `text` with each scored bullet written as `IMPORTANCE: x` over its text, and each row of a
 * Markdown table with an importance and an observation column written as `IMPORTANCE: x`,
 * its text and, from a source column, `SOURCE: …`. Anything else is left as it is.
 */
export function toMarkerForm(text: string): string {
  const lines = text.split('\n');
  const out: string[] = [];
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] as string;
    const table = tableAt(lines, index);
    if (table) {
      out.push(...table.lines);
      index = table.end - 1;
      continue;
    }
    const scored = SCORED_BULLET.exec(line);
    if (scored) out.push(`IMPORTANCE: ${scored[1] ?? scored[2]}`, scored[3] as string);
    else out.push(line);
  }
  return out.join('\n');
}

/** The table whose header is at `start`, in marker form, and the index after its last row. */
function tableAt(lines: readonly string[], start: number): { lines: string[]; end: number } | undefined {
  const header = cellsOf(lines[start] ?? '');
  if (!header || !SEPARATOR_ROW.test(lines[start + 1] ?? '')) return undefined;
  const importance = header.findIndex((cell) => IMPORTANCE_HEADER.test(cell));
  const content = header.findIndex((cell) => CONTENT_HEADER.test(cell));
  if (importance < 0 || content < 0) return undefined;
  const source = header.findIndex((cell) => SOURCE_HEADER.test(cell));
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
