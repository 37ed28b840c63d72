/**
 * Reading memory-model answers written as JSON although the prompt asked for lines: some
 * models (and servers with a JSON mode switched on) answer that way whatever they are told.
 * @module
 */
import type { Contradiction, StructuredReflection, Supersession } from './reflection.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/**
 * The answer inside a code fence around all of it (```` ```json … ``` ````), else the answer,
 * trimmed. Found by slicing, in linear time: the pattern it replaces took cubic time on a fence
 * followed by a long run of white space (2,000 spaces, 2 s), and an answer is the model's.
 */
export function withoutFence(text: string): string {
  const body = text.trim();
  if (!body.startsWith('```') || body.length < 6 || !body.endsWith('```')) return body;
  const opening = /^```[a-z]*/i.exec(body)?.[0].length ?? 3;
  return body.slice(opening, -3).trim();
}

/** The JSON value an answer is, without a code fence around it; undefined when it is not JSON. */
function jsonOf(text: string): Json | undefined {
  const body = withoutFence(text);
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

/** An observation of a JSON answer, its score as written: the caller reads it as it reads lines. */
export interface JsonObservation {
  readonly content: string;
  /** A number or a string (`0.9`, `"8"`, `"90%"`, `"high"`); null when there is none. */
  readonly score: number | string | null;
  readonly sourceSeqs: readonly number[];
}

const TEXT_KEYS = ['observation', 'content', 'text', 'fact'];

/**
 * The observations of an answer that is a JSON list of objects (or an object holding one
 * under `observations`), each with its text under `observation`, `content`, `text` or
 * `fact`, its score under `importance` or `score` and its sources under `source`/`sources`.
 * An item whose text is blank or null (or a null item) is skipped, so a list of such items
 * reads as no observation. Undefined when the answer is not such JSON, or when an item has
 * none of those text keys or a text that is not a string: then it is read as lines.
 */
export function readJsonObservations(text: string): JsonObservation[] | undefined {
  const value = jsonOf(text);
  const list = Array.isArray(value) ? value : isObject(value) ? firstOf(value, ['observations']) : undefined;
  if (!Array.isArray(list)) return undefined;
  const items: JsonObservation[] = [];
  for (const item of list) {
    if (item === null) continue;
    if (!isObject(item)) return undefined;
    const texts = TEXT_KEYS.map((key) => firstOf(item, [key])).filter((found) => found !== undefined);
    // NOTE: an item of another shape (`{"note": "…"}`) may hold a fact: read as lines, the
    // answer is kept whole rather than taken for "nothing".
    if (texts.length === 0 || texts.some((found) => found !== null && typeof found !== 'string')) return undefined;
    const content = texts.map(textOf).find((found) => found !== undefined);
    if (content === undefined) continue;
    const score = firstOf(item, ['importance', 'score']);
    items.push({
      content,
      score: typeof score === 'number' || typeof score === 'string' ? score : null,
      sourceSeqs: seqsOf(firstOf(item, ['source', 'sources', 'source_seqs', 'seqs'])),
    });
  }
  return items;
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
