/**
 * Parsing of the reflector's output into a {@link StructuredReflection}.
 * @module
 */

import { readJsonReflection } from './json-answer.js';
import { withoutSignOff } from './parse-observations.js';
import type { Contradiction, StructuredReflection, Supersession } from './reflection.js';
import { stripInvisible } from './sanitize-text.js';
import { stripReasoning } from './strip-reasoning.js';

type Section = 'summary' | 'supersessions' | 'contradictions';

// Groups: 1 `#`s, 2 opening emphasis or bracket, 3 section name, 4 closing emphasis or
// bracket, 5 colon (or a dash set apart), 6 emphasis after the colon (`**SUMMARY:**`), 7 rest of
// the line. A list bullet, number or quote may come first (`1. SUMMARY:`, `> SUMMARY:`).
const HEADER =
  /^(?:(?:[-*•+]|\d{1,3}[.)]|>)\s+)*(#*)\s*([*_[]*)\s*(summary|supersessions|contradictions)(?![\p{L}\p{N}])([*_\]]*)\s*(:|[-—–](?=\s|$)|)\s*([*_]*)\s*(.*)$/iu;
const BULLET = String.raw`^(?:[-*•◦▪–—]|\d+[.)])?\s*`;
// A seq, then words in brackets a model may add after it (`[seq:2] (tabs)`).
const SEQ = String.raw`\[\s*seq\s*:\s*(\d+)\s*\](?:\s*\([^()]*\))?`;
// More seqs on the same side: `[seq:5] replaces [seq:2], [seq:3] and [seq:4]`.
const MORE_SEQS = String.raw`((?:\s*(?:,|&|\band\b)\s*\[\s*seq\s*:\s*\d+\s*\](?:\s*\([^()]*\))?)*)`;
const TAIL = String.raw`\s*(?:[:—–-]\s*)?(.*)$`;
// `replaced by` / `superseded by` name the newer seq second.
const SUPERSESSION_LINE = new RegExp(
  `${BULLET}${SEQ}\\s*(?:(is\\s+)?(replaced\\s+by|superseded\\s+by|overridden\\s+by)|replaces|supersedes|overrides|replaced|superseded|overrode)\\s*${SEQ}${MORE_SEQS}${TAIL}`,
  'i',
);
const CONTRADICTION_LINE = new RegExp(
  `${BULLET}${SEQ}\\s*(?:vs\\.?|versus|conflicts\\s+with|contradicts)\\s*${SEQ}${TAIL}`,
  'i',
);
// Seqs written without the brackets: `seq 5`, `seq:5`, `#5`.
const LOOSE_SEQ = /\[\s*seq\s*[:#]?\s*(\d+)\s*\]|\bseq\s*[:#]?\s*(\d+)\b|(?<![\w[])#(\d+)\b/gi;
const FENCE_LINE = /^\s*(?:```|~~~)/;

const EMPTY: StructuredReflection = Object.freeze({
  summary: '',
  supersessions: Object.freeze([]),
  contradictions: Object.freeze([]),
  schemaVersion: 0,
});

/**
 * Parses SUMMARY / SUPERSESSIONS / CONTRADICTIONS sections (markdown headings, bold, brackets,
 * list numbers and quotes tolerated) into schema 1; text above the first header is the summary
 * when the SUMMARY section is missing or empty. A line named like a section with other text
 * after it (`Contradictions: none so far.`) and summary text under it is a summary line. Text
 * without any section header is legacy schema 0 with the whole text as summary.
 */
export function parseReflection(raw: string): StructuredReflection {
  const text = unquoted(stripInvisible(stripReasoning(raw)).trim());
  if (text === '') return EMPTY;
  const json = readJsonReflection(text);
  if (json) return json;

  const sections: Record<Section, string[]> = { summary: [], supersessions: [], contradictions: [] };
  const before: string[] = [];
  const lines = text.split('\n');
  const opens = sectionStarts(lines);
  let current: Section | null = null;
  for (const [index, line] of lines.entries()) {
    // Code fences around the answer or a section frame it; they are not its text.
    if (FENCE_LINE.test(line)) continue;
    const header = parseHeader(line);
    // `- Contradictions: none so far` inside the summary is a line of it, not a new section; so
    // is `Contradictions: none so far.` with summary text under it.
    if (header && !(header.listed && current === 'summary') && opens[index]) {
      current = header.section;
      if (header.rest !== '') sections[current].push(header.rest);
    } else if (current) {
      sections[current].push(line);
    } else {
      before.push(line);
    }
  }
  if (current === null) return { ...EMPTY, summary: text };

  // A summary written above the first header, with no SUMMARY section of its own, is the summary.
  // A closing remark to the reader ("Let me know if…") after a summary-only answer is not part of it.
  const summary = withoutSignOff(sections.summary).join('\n').trim();
  return {
    summary: summary === '' ? withoutSignOff(before).join('\n').trim() : summary,
    supersessions: parsePairs(sections.supersessions, SUPERSESSION_LINE, toSupersession),
    contradictions: parsePairs(sections.contradictions, CONTRADICTION_LINE, toContradiction),
    schemaVersion: 1,
  };
}

/** A reply quoted whole (every line starting with `>`) without its quote marks. */
function unquoted(text: string): string {
  const lines = text.split('\n');
  if (!lines.every((line) => line.trim() === '' || line.trimStart().startsWith('>'))) return text;
  return lines
    .map((line) => line.replace(/^\s*>\s?/, ''))
    .join('\n')
    .trim();
}

interface Header {
  section: Section;
  rest: string;
  /** A list item named like a section, not in capitals, with text after it: maybe a summary line. */
  listed: boolean;
  /**
   * The line is a header whatever follows it: nothing is after it, or one of its section's
   * pair lines, or it is `SUMMARY:` (any text after it is summary).
   */
  fits: boolean;
}

/**
 * A header needs a colon, nothing else on the line, or decoration (`## Summary of work`,
 * `**Summary** text`), so a sentence such as "Summary of the work" stays ordinary text.
 */
function parseHeader(line: string): Header | null {
  const match = HEADER.exec(line.trim());
  if (!match) return null;
  const [, hashes = '', open = '', name = '', close = '', colon = '', after = '', tail = ''] = match;
  const section = name.toLowerCase() as Section;
  // Emphasis after the colon closes the header's own, unless the header had none: `SUMMARY: **x**`.
  const rest = open === '' ? `${after}${tail}` : tail;
  const listed = LIST_ITEM.test(line) && rest.trim() !== '' && name !== name.toUpperCase();
  if (colon !== '' || rest === '' || (open !== '' && close !== ''))
    return { section, rest: rest.trim(), listed, fits: fits(section, rest.trim()) };
  // The rest of a markdown heading is its title ("## Summary of decisions"), not content.
  return hashes === '' ? null : { section, rest: '', listed: false, fits: true };
}

const PLACEHOLDER = /^[\s*_"'`([]*(?:none|n\/?a|nil|-+|—)[\s.!*_"'`)\]]*$/iu;

function fits(section: Section, rest: string): boolean {
  if (section === 'summary' || rest === '') return true;
  return (section === 'supersessions' ? SUPERSESSION_LINE : CONTRADICTION_LINE).test(pairLine(rest));
}

/** Whether a line is what `section` holds: blank, a placeholder (`none`, `n/a`) or one of its pair lines. */
function holds(section: Section, text: string): boolean {
  return PLACEHOLDER.test(text) || fits(section, text);
}

/**
 * For each line, whether it starts a section. A header line does when nothing or one of its
 * section's pair lines follows it on its line; a line named like a section with other text
 * after it (`Contradictions: none.`, `Contradictions: none found.`) only when no summary text
 * follows it before the next section, that is when every line up to there (a closing remark
 * to the reader at the end aside) is blank, a placeholder or a line of that section.
 * `Contradictions: none so far.` with summary lines under it is one of the summary's lines.
 * Read from the end, in one pass.
 */
function sectionStarts(lines: readonly string[]): boolean[] {
  const starts = lines.map(() => false);
  const remarksFrom = withoutSignOff(lines).length;
  // Whether a line between this one and the next section start is not a line of that section.
  const other = { summary: false, supersessions: false, contradictions: false };
  for (let index = lines.length - 1; index >= 0; index--) {
    const line = lines[index] as string;
    if (FENCE_LINE.test(line)) continue;
    const header = parseHeader(line);
    if (header && (header.fits || !other[header.section])) {
      starts[index] = true;
      other.supersessions = other.contradictions = false;
      continue;
    }
    if (index >= remarksFrom) continue;
    other.supersessions ||= !holds('supersessions', line.trim());
    other.contradictions ||= !holds('contradictions', line.trim());
  }
  return starts;
}

const LIST_ITEM = /^\s*(?:[-*•+]|\d{1,3}[.)])\s+/u;

function toSupersession(newerSeq: number, olderSeq: number, reason: string): Supersession {
  return { newerSeq, olderSeq, reason };
}

function toContradiction(seqA: number, seqB: number, detail: string): Contradiction {
  return { seqA, seqB, detail };
}

/**
 * Reads `[seq:N] <keyword> [seq:M] <text>` lines, dropping exact duplicates. Forms models
 * write are read too: emphasis and code marks around the parts, `seq 5` or `#5` for a seq,
 * words in brackets after one, several seqs on the second side (one pair each) and, for
 * supersessions, `is replaced by` (newer seq second). Self-references are kept: the store
 * drops them when it applies the reflection, and counts them as rejected.
 */
function parsePairs<T>(
  lines: readonly string[],
  pattern: RegExp,
  build: (first: number, second: number, text: string) => T,
): T[] {
  const pairs: T[] = [];
  const seen = new Set<string>();
  for (const line of lines) {
    const match = pattern.exec(pairLine(line));
    if (!match) continue;
    // Groups: first seq, then (supersessions) the passive `is` and `… by`, the second seq, more seqs, the text.
    const passive = match.length === 7 && match[3] !== undefined;
    const cited = 2 + seqsIn(match.length === 7 ? match[5] : '').length;
    const text = reasonOf(line, cited);
    const first = toSeq(match[1]);
    const seconds = [match.length === 7 ? match[4] : match[2], ...seqsIn(match.length === 7 ? match[5] : '')].map(
      toSeq,
    );
    for (const second of seconds) {
      if (first === null || second === null) continue;
      const [a, b] = passive ? [second, first] : [first, second];
      const key = JSON.stringify([a, b, text]);
      if (seen.has(key)) continue;
      seen.add(key);
      pairs.push(build(a, b, text));
    }
  }
  return pairs;
}

/**
 * The reason or detail of a pair line as written (its marks and seq-like words kept): what
 * follows the line's `cited`-th seq, without the closing marks, words in brackets and the
 * separator set around it.
 */
function reasonOf(line: string, cited: number): string {
  const seqs = [...line.matchAll(LOOSE_SEQ)];
  const last = seqs[cited - 1];
  if (last?.index === undefined) return '';
  return line
    .slice(last.index + last[0].length)
    .replace(/^(?:\s*(?:\*\*|__|`|\([^()]*\)))*\s*(?:[:—–-]\s*)?/, '')
    .trim();
}

/** A pair line with emphasis and code marks dropped and every seq written `[seq:N]`. */
function pairLine(line: string): string {
  return line
    .trim()
    .replace(/\*\*|__|`/g, '')
    .replace(LOOSE_SEQ, (_all, a?: string, b?: string, c?: string) => `[seq:${a ?? b ?? c}]`);
}

function seqsIn(text: string | undefined): string[] {
  return [...(text ?? '').matchAll(/seq\s*:\s*(\d+)/gi)].map((match) => match[1] as string);
}

function toSeq(digits: string | undefined): number | null {
  const value = Number(digits);
  return Number.isSafeInteger(value) && value > 0 ? value : null;
}
