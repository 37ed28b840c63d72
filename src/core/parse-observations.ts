/**
 * Parsing of the observer's output into observations.
 * @module
 */

import type { ParsedObservation } from './observation.js';
import { stripInvisible } from './sanitize-text.js';

/** Most observations kept from one observer answer. */
export const DEFAULT_MAX_OBSERVATIONS = 50;
/** Longest observation content kept, in code points, before ` …[truncated]` is appended. */
export const DEFAULT_MAX_OBSERVATION_CHARS = 2000;
/** Appended to content cut at the length limit. */
export const TRUNCATION_SUFFIX = ' …[truncated]';

/** Bounds on what {@link parseObservations} keeps. */
export interface ParseObservationsOptions {
  /** @default 50 */
  readonly maxObservations?: number;
  /** @default 2000 */
  readonly maxObservationChars?: number;
}

const PREFIX_LINE = /^\s*IMPORTANCE\s*:(.*)$/i;
const NUMBER_PREFIX = /^[+-]?(\d+(\.\d*)?|\.\d+)/;
const MAX_REPEATED_LINES = 3;

interface Block {
  importance: number | null;
  lines: string[];
}

/**
 * Splits observer output into observations. With `IMPORTANCE: x` lines (any case) each one starts
 * an observation that runs to the next, blank lines included; otherwise the whole text is one.
 */
export function parseObservations(raw: string, options: ParseObservationsOptions = {}): ParsedObservation[] {
  const maxObservations = bound(options.maxObservations, DEFAULT_MAX_OBSERVATIONS);
  const maxChars = Math.max(1, bound(options.maxObservationChars, DEFAULT_MAX_OBSERVATION_CHARS));
  const text = stripInvisible(raw).trim();
  if (text === '') return [];

  const blocks: Block[] = [{ importance: null, lines: [] }];
  for (const line of text.split('\n')) {
    const prefix = PREFIX_LINE.exec(line);
    if (prefix) blocks.push(parsePrefix(prefix[1] ?? ''));
    else blocks.at(-1)?.lines.push(line);
  }

  const observations: ParsedObservation[] = [];
  for (const block of blocks) {
    if (observations.length >= maxObservations) break;
    const content = collapseRepeats(block.lines).join('\n').trim();
    if (content === '') continue;
    observations.push({ content: truncate(content, maxChars), importance: block.importance });
  }
  return observations;
}

/** Reads the value after `IMPORTANCE:`: a score and, if any, the first line of content. */
function parsePrefix(value: string): Block {
  const trimmed = value.trim();
  const number = NUMBER_PREFIX.exec(trimmed);
  if (number) {
    let importance = Number(number[0]);
    // Symbols glued to the number (`%`, `/10`, `,`) belong to the score, not to the content.
    const glued = /^[^\s\p{L}]*/u.exec(trimmed.slice(number[0].length))?.[0] ?? '';
    const denominator = Number(/^\/(\d+(?:\.\d*)?)/.exec(glued)?.[1]);
    if (glued.startsWith('%')) importance /= 100;
    else if (denominator > 0) importance /= denominator;
    const rest = trimmed.slice(number[0].length + glued.length).replace(/^\s*(?:[-–—:|](?:\s+|$))?/, '');
    const score = Number.isFinite(importance) ? Math.min(1, Math.max(0, importance)) : null;
    return { importance: score, lines: rest === '' ? [] : [rest] };
  }
  // A single word ("high", "NaN", "Infinity") is a failed score; a sentence is misplaced content.
  return { importance: null, lines: /\s/.test(trimmed) ? [trimmed] : [] };
}

/** Keeps at most three consecutive copies of the same (trimmed) line. */
function collapseRepeats(lines: readonly string[]): string[] {
  const kept: string[] = [];
  let previous: string | null = null;
  let run = 0;
  for (const line of lines) {
    const key = line.trim();
    run = key === previous ? run + 1 : 1;
    previous = key;
    if (run <= MAX_REPEATED_LINES) kept.push(line);
  }
  return kept;
}

/** Cuts content to `maxChars` code points, at the last whitespace in the final 10% if there is one. */
function truncate(content: string, maxChars: number): string {
  const codePoints = Array.from(content);
  if (codePoints.length <= maxChars) return content;
  let cut = maxChars;
  if (!/\s/.test(codePoints[maxChars] ?? '')) {
    const floor = Math.floor(maxChars * 0.9);
    for (let index = maxChars - 1; index > floor; index--) {
      if (/\s/.test(codePoints[index] ?? '')) {
        cut = index;
        break;
      }
    }
  }
  return codePoints.slice(0, cut).join('').trimEnd() + TRUNCATION_SUFFIX;
}

function bound(value: number | undefined, fallback: number): number {
  return value === undefined || !Number.isFinite(value) ? fallback : Math.max(0, Math.floor(value));
}
