/**
 * Reading memory-model answers written as JSON although the prompt asked for lines: some
 * models (and servers with a JSON mode switched on) answer that way whatever they are told.
 * @module
 */
import type { ParsedObservation } from './observation.js';
import type { Contradiction, StructuredReflection, Supersession } from './reflection.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const FENCED = /^```[a-z]*\s*\n?([\s\S]*?)\n?\s*```$/i;

/** The JSON value an answer is, without a code fence around it; undefined when it is not JSON. */
function jsonOf(text: string): Json | undefined {
  const body = (FENCED.exec(text.trim())?.[1] ?? text).trim();
  if (!/^[[{]/.test(body)) return undefined;
  try {
    return JSON.parse(body) as Json;
  } catch {
    return undefined;
  }
}

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function firstOf(item: JsonObject, keys: readonly string[]): Json | undefined {
  for (const key of keys) {
    const found = Object.keys(item).find((name) => name.toLowerCase() === key);
    if (found !== undefined) return item[found];
  }
  return undefined;
}

function textOf(value: Json | undefined): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

function seqsOf(value: Json | undefined): number[] {
  const list = Array.isArray(value) ? value : value === undefined || value === null ? [] : [value];
  const seqs: number[] = [];
  for (const item of list) {
    for (const digits of String(item).match(/\d+/g) ?? []) {
      const seq = Number(digits);
      if (Number.isSafeInteger(seq) && seq > 0) seqs.push(seq);
    }
  }
  return seqs;
}

/**
 * The observations of an answer that is a JSON list of objects (or an object holding one
 * under `observations`), each with its text under `observation`, `content`, `text` or
 * `fact`, its score under `importance` or `score` (a number in [0, 1]; whole numbers out of
 * ten read as tenths, as in lines, and other scores above 1 as percentages) and its sources under `source`/`sources`. Undefined when the answer is
 * not such JSON, or when any item has no text: then it is read as lines.
 */
export function readJsonObservations(text: string): ParsedObservation[] | undefined {
  const value = jsonOf(text);
  const list = Array.isArray(value) ? value : isObject(value) ? firstOf(value, ['observations']) : undefined;
  if (!Array.isArray(list)) return undefined;
  const items: Array<{ content: string; score: number | null; sourceSeqs: number[] }> = [];
  for (const item of list) {
    if (!isObject(item)) return undefined;
    const content = textOf(firstOf(item, ['observation', 'content', 'text', 'fact']));
    if (content === undefined) return undefined;
    const written = firstOf(item, ['importance', 'score']);
    const score = typeof written === 'string' ? Number.parseFloat(written) : written;
    items.push({
      content,
      score: typeof score === 'number' && Number.isFinite(score) ? score : null,
      sourceSeqs: seqsOf(firstOf(item, ['source', 'sources', 'source_seqs', 'seqs'])),
    });
  }
  // As in lines: whole numbers out of ten read as tenths; other scores above 1 as percentages.
  const scores = items.flatMap((item) => (item.score === null ? [] : [item.score]));
  const tenths =
    scores.every((score) => Number.isInteger(score) && score >= 0 && score <= 10) && scores.some((score) => score > 1);
  return items.map(({ content, score, sourceSeqs }) => {
    const scaled = score === null ? null : tenths ? score / 10 : score > 1 && score <= 100 ? score / 100 : score;
    return {
      content,
      importance: scaled === null ? null : Math.min(1, Math.max(0, scaled)),
      ...(sourceSeqs.length > 0 ? { sourceSeqs } : {}),
    };
  });
}

/**
 * A reflection written as a JSON object with `summary` and, optionally, `supersessions`
 * (`{newer, older, reason}`, or `newer_seq`/`older_seq`) and `contradictions`
 * (`{seq_a, seq_b, detail}`, or `a`/`b`). Undefined when the answer is not such JSON.
 */
export function readJsonReflection(text: string): StructuredReflection | undefined {
  const value = jsonOf(text);
  if (!isObject(value)) return undefined;
  const summary = textOf(firstOf(value, ['summary']));
  if (summary === undefined) return undefined;
  const pairs = <T>(
    key: string,
    first: string[],
    second: string[],
    label: string[],
    build: (a: number, b: number, text: string) => T,
  ): T[] => {
    const list = firstOf(value, [key]);
    if (!Array.isArray(list)) return [];
    const found: T[] = [];
    for (const item of list) {
      if (!isObject(item)) continue;
      const [a] = seqsOf(firstOf(item, first));
      const [b] = seqsOf(firstOf(item, second));
      if (a !== undefined && b !== undefined) found.push(build(a, b, textOf(firstOf(item, label)) ?? ''));
    }
    return found;
  };
  return {
    summary,
    supersessions: pairs(
      'supersessions',
      ['newer_seq', 'newer', 'new', 'newerseq'],
      ['older_seq', 'older', 'old', 'olderseq', 'replaces'],
      ['reason', 'detail'],
      (newerSeq, olderSeq, reason): Supersession => ({ newerSeq, olderSeq, reason }),
    ),
    contradictions: pairs(
      'contradictions',
      ['seq_a', 'a', 'first', 'seqa'],
      ['seq_b', 'b', 'second', 'seqb'],
      ['detail', 'reason'],
      (seqA, seqB, detail): Contradiction => ({ seqA, seqB, detail }),
    ),
    schemaVersion: 1,
  };
}
