/**
 * Parsing of the observer's output into observations.
 * @module
 */

import type { ParsedObservation } from './observation.js';
import { stripInvisible } from './sanitize-text.js';
import { readJsonObservations, withoutFence } from './json-answer.js';
import type { JsonObservation } from './json-answer.js';
import { repeatKeyOf } from './repeated-observations.js';
import { stripReasoning } from './strip-reasoning.js';
import { toMarkerForm } from './marker-form.js';

/** Most observations kept from one observer answer. */
export const DEFAULT_MAX_OBSERVATIONS = 50;
/** Longest observation content kept, in code points, before ` …[truncated]` is appended. */
export const DEFAULT_MAX_OBSERVATION_CHARS = 2000;
/** Appended to content cut at the length limit. */
export const TRUNCATION_SUFFIX = ' …[truncated]';
/** Most seqs read from one `SOURCE:` line (a range counts each seq in it). */
export const MAX_SOURCE_SEQS = 64;

/** Bounds on what {@link parseObservations} keeps. */
export interface ParseObservationsOptions {
  /** @default 50 */
  readonly maxObservations?: number;
  /** @default 2000 */
  readonly maxObservationChars?: number;
}

// Decoration models put around a label: list bullets and numbers, headings, quotes,
// emphasis and brackets (`1. **IMPORTANCE:** 0.9`, `- [Importance: 0.9]`, `### Importance: 0.9`).
const LEAD = String.raw`^\s*(?:(?:[-*•+◦▪–]|\d{1,3}[.)]|#{1,6}|>)\s+)*[*_\[(]*\s*`;
const EMPHASIS = String.raw`[*_]*`;
// `IMPORTANCE` (or `Importance score`, `level`, `rating`) then `:`, `=`, a dash set apart or a
// bracketed value that ends the line or comes before a colon or dash (`Importance - 0.9`,
// `IMPORTANCE (0.9): text`; emphasis may sit on either side), then the value. Without one of
// these, only a bare number may follow (`Importance 0.9`), not a sentence. Matched against the
// line with full-width forms folded (`IMPORTANCE：０．９`).
const MARKER_LINE = new RegExp(
  `${LEAD}importance(?:\\s+(?:score|level|rating))?${EMPHASIS}\\s*(?:[:=]|[-–—](?=\\s|\\d)|(?=[([][^()[\\]]*[)\\]][*_]*\\s*(?:[:=\\-–—]|$))|(?=\\s+[+-]?(?:\\d+(?:\\.\\d*)?|\\.\\d+)\\s*%?[*_\\])]*\\s*$))${EMPHASIS}\\s*(.*)$`,
  'i',
);
// Matched against `tailTrimmed` lines: the emphasis and brackets closing the value are cut there.
const SOURCE_LINE = new RegExp(`${LEAD}sources?${EMPHASIS}\\s*[:=：]${EMPHASIS}\\s*(.*)$`, 'i');
// `REPLACES: 12`: the memory line (by its seq) that the observation corrects or changes.
const REPLACES_LINE = new RegExp(
  `${LEAD}(?:replaces|supersedes|corrects)${EMPHASIS}\\s*[:=：]${EMPHASIS}\\s*(.*)$`,
  'i',
);
// `User prefers tabs. (importance: 0.9)`: a whole observation on one line, scored at its end.
const TRAILING_SCORE =
  /^(.*?\S)\s*[([]\s*importance\s*[:=]?\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)\s*(?:%|\/\s*\d+(?:\.\d*)?)?)\s*[)\]]\s*[.;]?\s*$/i;
// `0.9`, `.9`, `0,9` (a decimal comma), `9e-1`.
const NUMBER_PREFIX = /^[+-]?(?:\d+(?:[.,]\d+|\.)?|[.,]\d+)(?:e[+-]?\d+)?/i;
const LEVEL_WORDS: Readonly<Record<string, number>> = {
  critical: 0.95,
  high: 0.8,
  medium: 0.5,
  med: 0.5,
  mid: 0.5,
  moderate: 0.5,
  low: 0.2,
};
// How far a modifier moves a level from the middle: `very high` 0.9, `fairly low` 0.3.
const MODIFIERS: Readonly<Record<string, number>> = {
  very: 4 / 3,
  extremely: 4 / 3,
  really: 4 / 3,
  highly: 4 / 3,
  super: 4 / 3,
  quite: 2 / 3,
  fairly: 2 / 3,
  somewhat: 2 / 3,
  moderately: 2 / 3,
  relatively: 2 / 3,
  rather: 2 / 3,
  slightly: 2 / 3,
};
const LEVEL = `(${Object.keys(LEVEL_WORDS).join('|')})`;
const MODIFIER = `(?:(${Object.keys(MODIFIERS).join('|')})\\s+)?`;
// A level in words: `high`, `Very high`, `medium-high`, `medium to high`, `high priority`.
const LEVEL_PHRASE = new RegExp(
  `^${MODIFIER}${LEVEL}(?:(?:\\s*[-–/]\\s*(?:to\\s*[-–]\\s*)?|\\s+(?:to\\s+)?)${MODIFIER}${LEVEL})?(?:[\\s-]+(?:priority|importance|significance))?(?![\\p{L}\\p{N}])`,
  'iu',
);
// What may come before a score: emphasis, brackets, `~`, `about`.
const SCORE_LEAD = /^[\s*_([]*(?:(?:about|approx(?:\.|imately)?|around|roughly)\s+|[~≈]\s*)?/i;
// A label models put before the observation text itself.
const CONTENT_LABEL = /^[*_]*(?:observation|content|fact)[*_]*\s*:[*_]*\s*/i;
const BULLET_LINE = /^\s*(?:[-*•+◦▪–]|\d{1,3}[.)])\s+\S/;
// Lines that frame an answer rather than say anything: headings, separators, code fences, a
// wrapper tag alone on its line (`<observations>` echoed back from the prompt, `<answer>`).
// An `Observation 2:` or `**Observation 2**` label over each block frames it too.
const FRAME_LINE =
  /^\s*(?:#{1,6}\s.*|[-*_=]{3,}|```.*|~~~.*|<\/?(?:observations?|transcript|existing-memory|answer|output|response|result)>|[*_]*observation\s*#?\d{1,3}[*_]*\s*:?[*_]*)\s*$/i;
// Preamble sentences: "Here are the observations:", "Sure! Below are …", "Based on the
// transcript, I found one durable fact.", and a short label such as "Observations:". A line that
// opens the same way but goes on to state something ("Sure, the user builds with pnpm.", "The
// following directories are generated: …") is content: see isPreambleLine.
const DECORATION = /^[*_#>\s]*/;
// Said to the prompt, not about the transcript: stripped from a fact only before `,`, `!` or `.`.
const INTERJECTION = /^(?:sure|okay|ok|certainly|alright|absolutely)\s*[,!.]+\s*/i;
// What opens a preamble, with the interjections; only the announcing leads ("Here is …",
// "Based on the transcript", "I found") are stripped from a fact at the `,` or `:` after them.
const ANNOUNCING_LEAD =
  /^(?:here\s+(?:are|is)|here['’]s|below\s+(?:are|is)|the\s+following|based\s+on\s+the\s+(?:new\s+)?(?:transcript|segment|conversation)|after\s+reviewing|i(?:\s+have|['’]ve)?\s+(?:found|identified|extracted|noted|recorded))\b/i;
const INTERJECTION_LEAD = /^(?:sure|okay|ok|certainly|alright|absolutely)\b/i;
const SENTENCE_START =
  /^(?:the|a|an|this|these|those|that|there|user|users|they|their|it|its|we|our|he|she|his|her)(?![\p{L}\p{N}])/u;
// A short label: "Observations:", "Memory update:".
const LABEL_LINE = /^[^.!?]{0,60}:[*_\s]*$/;
// "about the user": what a preamble announces, although "user" alone is a fact's word.
const ABOUT_THE_USER = /\b(?:about|regarding|concerning|on|for)\s+the\s+user(?:['’]s)?(?![\p{L}\p{N}])/giu;
// The words a preamble is made of: its lead, what it announces ("the key observations", "one
// durable fact", "my memory update") and where they come from. A line that opens like a
// preamble but holds any other word (or a number over 99) states something, and is kept.
const FRAMING_WORDS: ReadonlySet<string> = new Set(
  [
    "sure okay ok certainly alright absolutely here here's are is was were be been below following based after",
    "reviewing reviewed review i i've we we've have has found identified extracted noted recorded captured",
    'learned gathered observed summarized summarised listed collected',
    'the a an my our this these those that what which some any all each every one two three four five few several',
    'observation observations fact facts memory memories update updates item items point points note notes',
    'detail details information info insight insights takeaway takeaways entry entries summary list result results',
    'new key important notable relevant durable lasting main worth remembering remember',
    'from in on of to for with and about regarding it its their',
    'transcript segment conversation exchange chat messages message session dialogue text',
    'scored score scores importance sources source seqs by requested required format formatted provided given',
    "asked like would i'd should storing record analysis output response answer",
  ]
    .join(' ')
    .split(' '),
);
const NOTHING_ANSWER =
  /^[\s*_"'`([]*(?:none|no\s+(?:new\s+)?observations?|nothing(?:\s+(?:new|worth\s+remembering|to\s+(?:observe|record|remember)))?|n\/a)[\s.!*_"'`)\]]*$/i;
// The start of an answer that says there is nothing, then gives a reason: `NONE - small talk`,
// `None. The user only said hello.`, `Nothing new to record.` (`None of the tests pass` is a fact).
// Also `There are no new durable facts …`, `Nothing in this segment is worth remembering.`
const NOTHING_LEAD =
  /^[\s*_"'`([]*(?:(?:none|n\/a)[\s*_"'`)\]]*(?:[.!:;,(\-—–]|$)|(?:there\s+(?:are|is|were|was)\s+)?no\s+(?:(?:(?:new|durable|relevant|notable|important|lasting)\s+)+(?:observations?|facts?|information)\b|(?:observations?|facts?|information)(?=\s*(?:$|[.!:;,(\-—–]|(?:to\s+(?:record|remember|observe|note|add)|worth|in\s+th(?:is|e)\s+(?:segment|transcript|conversation|exchange)|from\s+th(?:is|e)\s+(?:segment|transcript|conversation|exchange))\b)))|(?:i\s+)?(?:did\s+not|didn't|could\s+not|couldn't)\s+find\s+(?:anything|any\s+(?:new\s+)?(?:facts?|observations?))\b|nothing\s+(?:(?:in|from)\s+(?:this|the)\s+(?:new\s+)?(?:transcript\s+)?(?:segment|transcript|conversation|exchange)\s+(?:is\s+)?)?(?:new|worth|durable|relevant|of\s+note|to\s+(?:observe|record|remember|note|add))\b)/i;
// An empty JSON object: the model answered "nothing" in JSON (an empty list is one that
// readJsonObservations reads as no observation).
const EMPTY_JSON = /^(?:```(?:json)?\s*)?\{\s*\}(?:\s*```)?$/i;
const MAX_REPEATED_LINES = 3;

interface Block {
  /** False for the text before the first marker. */
  marked: boolean;
  /** A one-line observation scored at its end: the next content line starts another observation. */
  closed?: boolean;
  importance: number | null;
  /** The score as written when it was a plain number (no `%`, no `/10`), before clamping. */
  written?: number;
  lines: string[];
  sources: number[];
  /** Seqs of memory lines it says it replaces (`REPLACES:`). */
  replaces?: number[];
}

// The words a reason for "nothing" is made of: that nothing new or durable was found, what the
// segment held instead (greetings, thanks, small talk, what memory has already), who said it,
// and the words joining them. Text after a "nothing" lead states something as soon as it holds
// any other word or a number (`moved`, `Berlin`, `deadline`, `90`), however many reason words
// surround it. The words of a contrast (`but`, `except`, `however`, `though`, `besides`, `apart
// from`, `other than`) are deliberately absent: "No new facts, but …" states something. A pure
// reason with a word not listed here is kept as one unscored observation, the safer error.
const REASON_WORDS: ReadonlySet<string> = new Set(
  [
    // Nothing, and nothing of what kind.
    'nothing none no not any anything everything all else new further more additional other durable relevant',
    'notable noteworthy important significant substantive meaningful memorable useful lasting persistent worth',
    'worthwhile note noting record recording remember remembering observe observing observation observations',
    'store storing keep keeping add adding capture fact facts information info detail details content',
    // What the segment held instead.
    'small talk chit chat chitchat chatter banter pleasantries pleasantry courtesy courtesies social casual',
    'greet greets greeted greeting greetings hello hellos hi hey bye goodbye goodbyes farewell farewells',
    'thank thanks thanked thanking acknowledge acknowledges acknowledged acknowledging acknowledgement',
    'acknowledgements acknowledgment acknowledgments filler off topic trivial routine brief generic ok okay',
    'yes sure great cool nice welcome how doing well fine question questions clarifying clarification request',
    'friendly polite simple quick short got understood noted good perfect alright cheers confirm confirmed',
    'already known existing previously earlier memory recorded captured covered repeat repeats repeated',
    'repeating restate restates restated duplicate duplicates',
    // Who, doing what, where.
    'user users assistant model i we you he she they them their it this that these those there here',
    'is are was were be been being has have had do does did can could find found see saw seen',
    "didn't don't doesn't isn't wasn't aren't weren't couldn't can't i've i'm",
    'contain contains contained containing consist consists consisted consisting include includes included',
    'including say says said saying exchange exchanges exchanged discuss discussed discussing discussion',
    'mention mentioned ask asks asked asking reply replies replied respond responds responded response',
    'offered end ended ending wrap wrapped skip skipped omit omitted ignore ignored left out',
    'segment transcript conversation message messages turn turns session interaction dialogue part',
    'review reviewed reviewing looked checked',
    // Said to the reader: "Let me know if you need anything else.", "I hope this helps."
    'let me know if need hope helps help feel free please would like want',
    // Joining words.
    'the a an and or then so also as of in on at to from for with without about by between within',
    'only just merely simply purely mostly mainly entirely solely basically some few one again still yet',
  ]
    .join(' ')
    .split(' '),
);
// A word (letters, digits, an apostrophe inside it), found in one pass.
const WORD = /[\p{L}\p{N}]+(?:['’][\p{L}\p{N}]+)*/gu;

/**
 * True for an answer that says there is nothing to remember (`NONE`, `No observations.`,
 * `Nothing to observe`), with or without a reason after it (`NONE - small talk only`,
 * `Nothing of note; the user said thanks.`, `NONE` then a note to the reader) when it scores
 * nothing: the observer looked and found nothing, which is not a failure. Not when the text
 * after "nothing", on any line, is more than a reason: a contrast (`No new observations, but
 * the user said the deadline is Friday.`, `Nothing new, except …`, `N/A - note: …`) or any
 * other statement (`No new facts; the user said thanks and moved to Berlin.`, `NONE - small
 * talk, then the user said their deadline is Friday`). That text is an observation. Also true
 * for a JSON answer with no observation in it (`[]`, `{"observations": []}`, `{"facts": []}`,
 * items whose text is empty).
 */
export function isNothingToObserve(raw: string): boolean {
  const text = stripInvisible(stripReasoning(raw)).trim();
  if (NOTHING_ANSWER.test(text) || EMPTY_JSON.test(text) || jsonObservationsOf(text)?.length === 0) return true;
  // The first line says it (`NONE`, then a blank line and the reason); a code fence may come first.
  const lines = text.split('\n');
  const index = lines.findIndex((line) => line.trim() !== '' && !/^\s*(?:```|~~~)/.test(line));
  // After any preamble words: `Based on the transcript, there are no new facts.`, `Here is what I found: NONE`.
  const first = afterLeadWords(lines[index] ?? '');
  const lead = NOTHING_LEAD.exec(first);
  if (!lead && !NOTHING_ANSWER.test(first)) return false;
  const after = [lead ? first.slice(lead.index + lead[0].length) : '', ...lines.slice(index + 1)].join('\n');
  if (!onlyReasons(after)) return false;
  // "Nothing new:" followed by a scored fact is not nothing.
  return !withMarkers(text)
    .split('\n')
    .some((line) => isScoreLine(line));
}

/** Whether every word of `text` is a {@link REASON_WORDS} word (`'s` aside): it states nothing. */
function onlyReasons(text: string): boolean {
  for (const [word] of text.matchAll(WORD)) {
    const key = word.toLowerCase().replace(/’/g, "'").replace(/'s$/, '');
    if (!REASON_WORDS.has(key)) return false;
  }
  return true;
}

/**
 * The answer in the marker form: scored bullets and tables rewritten (see {@link toMarkerForm})
 * unless it has scores of the marker forms already, whose content they then are.
 */
function withMarkers(text: string): string {
  return text.split('\n').some((line) => isScoreLine(line)) ? text : toMarkerForm(text);
}

function isScoreLine(line: string): boolean {
  if (readMarker(line) !== undefined) return true;
  const trailing = TRAILING_SCORE.exec(line);
  return trailing !== null && readScore(trailing[2] ?? '') !== undefined;
}

/**
 * Splits observer output into observations. A line `IMPORTANCE: x` starts an observation
 * that runs to the next one, blank lines included; the forms models write are read too
 * (`**IMPORTANCE:** 0.9`, `1. Importance: 0.9`, `- [importance = 90%]`, `Importance: high`,
 * `Importance - 0.9`, `IMPORTANCE (0.9): text`, `IMPORTANCE: HIGH (0.9)`,
 * `IMPORTANCE: Very high`, `IMPORTANCE：０．９`, a line ending `(importance: 0.9)`); no part
 * of a marker line is stored as text, and one whose score cannot be read (`IMPORTANCE: ???`)
 * is scored `null`. A line that starts with the word but holds no score ("Importance: tests
 * matter") is content. An optional `SOURCE: 12, 14` line cites the transcript seqs of its
 * observation. Text before the first observation is kept as one unscored observation unless
 * it only frames the answer ("Here are the observations:", a heading); without any score at
 * all, the whole text is one observation. A line that opens like a preamble but states a fact
 * ("Based on the transcript, the user never pushes to main.") is content, without its opening
 * words. A JSON list of `{importance, source, observation}` objects is read too, each score as
 * the value of an `IMPORTANCE` line, and a JSON list of strings (bare, or under `observations`
 * or `facts`) as unscored observations.
 */
export function parseObservations(raw: string, options: ParseObservationsOptions = {}): ParsedObservation[] {
  const maxObservations = bound(options.maxObservations, DEFAULT_MAX_OBSERVATIONS);
  const maxChars = Math.max(1, bound(options.maxObservationChars, DEFAULT_MAX_OBSERVATION_CHARS));
  const text = stripInvisible(stripReasoning(raw)).trim();
  if (text === '' || isNothingToObserve(text)) return [];
  const json = jsonObservationsOf(text);
  const parsed = json
    ? scoredAsLines(json, maxChars)
    : // Repeats are merged after reading: room for them, so that 50 copies of one fact leave room for the rest.
      parseLines(withMarkers(text), maxObservations * 4, maxChars);
  return withoutRepeats(parsed).slice(0, maxObservations);
}

/**
 * One observation per fact: a later one of the same text (case, spacing and end punctuation
 * aside) is merged into the first, which keeps the higher score and both sets of sources.
 */
function withoutRepeats(observations: readonly ParsedObservation[]): ParsedObservation[] {
  const kept: ParsedObservation[] = [];
  const byKey = new Map<string, number>();
  for (const observation of observations) {
    const key = repeatKeyOf(observation.content);
    const index = byKey.get(key);
    if (index === undefined) {
      byKey.set(key, kept.length);
      kept.push(observation);
      continue;
    }
    const first = kept[index] as ParsedObservation;
    const importance =
      first.importance === null ? observation.importance : Math.max(first.importance, observation.importance ?? 0);
    const sourceSeqs = [...new Set([...(first.sourceSeqs ?? []), ...(observation.sourceSeqs ?? [])])].sort(
      (a, b) => a - b,
    );
    const replacesSeqs = [...new Set([...(first.replacesSeqs ?? []), ...(observation.replacesSeqs ?? [])])].sort(
      (a, b) => a - b,
    );
    kept[index] = {
      content: first.content,
      importance,
      ...(sourceSeqs.length > 0 ? { sourceSeqs } : {}),
      ...(replacesSeqs.length > 0 ? { replacesSeqs } : {}),
    };
  }
  return kept;
}

/**
 * The observations of an answer written as JSON: a list of `{importance, source, observation}`
 * objects (see readJsonObservations), or a list of strings, bare or under `observations` or
 * `facts` (mem0's `{"facts": [...]}`), each string an unscored observation. Undefined for any
 * other answer, which is read as lines.
 */
function jsonObservationsOf(text: string): JsonObservation[] | undefined {
  const body = jsonBody(text);
  return body === undefined ? undefined : (readJsonObservations(body) ?? readJsonTexts(body));
}

/** The answer without a code fence around it, when it may be JSON (it starts with `[` or `{`). */
function jsonBody(text: string): string | undefined {
  const body = withoutFence(text);
  return /^[[{]/.test(body) ? body : undefined;
}

const TEXT_LIST_KEYS = ['observations', 'facts'];

/** The strings of a JSON list of strings, or of one under {@link TEXT_LIST_KEYS}; blank ones and nulls skipped. */
function readJsonTexts(body: string): JsonObservation[] | undefined {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  let list = value;
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const entries = Object.entries(value);
    const key = TEXT_LIST_KEYS.find((name) => entries.some(([found]) => found.toLowerCase() === name));
    list = entries.find(([found]) => found.toLowerCase() === key)?.[1];
  }
  if (!Array.isArray(list) || !list.every((item) => item === null || typeof item === 'string')) return undefined;
  return list.flatMap((item: string | null) =>
    item === null || item.trim() === '' ? [] : [{ content: item.trim(), score: null, sourceSeqs: [] }],
  );
}

/** The observations of a JSON answer, each score read as a marker's value and on the same scale rule. */
function scoredAsLines(items: readonly JsonObservation[], maxChars: number): ParsedObservation[] {
  const scored = items.map((item) => ({ ...item, ...jsonScoreOf(item.score) }));
  onTenPointScale(scored);
  return scored.map(({ content, importance, sourceSeqs }) => ({
    content: truncateObservation(content, maxChars),
    importance,
    ...(sourceSeqs.length > 0 ? { sourceSeqs } : {}),
  }));
}

function jsonScoreOf(score: number | string | null): { importance: number | null; written?: number } {
  if (typeof score === 'number') return scoreOf({ importance: score, plain: true, end: 0 });
  // A string is read as `IMPORTANCE: <string>` would be; a sentence there is no score.
  const read = score === null ? undefined : readScore(score);
  if (read === undefined) return { importance: null };
  const { rest: _rest, ...scored } = read;
  return scored;
}

function parseLines(text: string, maxObservations: number, maxChars: number): ParsedObservation[] {
  const blocks: Block[] = [{ marked: false, importance: null, lines: [], sources: [] }];
  const lines = text.split('\n');
  // Sources written before their score (`SOURCE: 1` / `IMPORTANCE: 0.9` / text) belong to the
  // observation that follows them; the first line tells which way the answer writes them.
  const sourcesLead = readSources(lines.find((line) => line.trim() !== '') ?? '') !== undefined;
  let pending: number[] = [];
  let pendingReplaces: number[] = [];
  for (const line of lines) {
    const marker = readMarker(line);
    if (marker) {
      marker.sources.push(...pending);
      if (pendingReplaces.length > 0) marker.replaces = pendingReplaces;
      pending = [];
      pendingReplaces = [];
      blocks.push(marker);
      continue;
    }
    if (sourcesLead) {
      const leading = readSources(line);
      if (leading) {
        pending.push(...leading);
        continue;
      }
      const replacing = readReplaces(line);
      if (replacing) {
        pendingReplaces.push(...replacing);
        continue;
      }
    }
    const trailing = TRAILING_SCORE.exec(line);
    const score = trailing ? readScore(trailing[2] ?? '') : undefined;
    if (trailing && score !== undefined) {
      blocks.push({
        marked: true,
        closed: true,
        importance: score.importance,
        ...(score.written === undefined ? {} : { written: score.written }),
        lines: [stripBullet(trailing[1] ?? '')],
        sources: [],
      });
      continue;
    }
    const current = blocks.at(-1) as Block;
    const replacing = current.marked ? readReplaces(line) : undefined;
    if (replacing) {
      (current.replaces ??= []).push(...replacing);
      continue;
    }
    const sources = current.marked ? readSources(line) : undefined;
    if (sources) current.sources.push(...sources);
    else if (current.closed && line.trim() !== '')
      blocks.push({ marked: true, importance: null, lines: [line], sources: [] });
    else current.lines.push(line);
  }
  if (!blocks.some((block) => block.marked)) return unscored(blocks[0]?.lines ?? [], maxObservations, maxChars);
  onTenPointScale(blocks.filter((block) => block.marked));

  const observations: ParsedObservation[] = [];
  const backwards = scoresFollowText(blocks);
  const read = backwards ? scoredBackwards(blocks) : blocks;
  for (const [index, block] of read.entries()) {
    if (observations.length >= maxObservations) break;
    // A closing remark after the last observation is said to the reader, not remembered.
    if (index === read.length - 1) block.lines = withoutSignOff(block.lines);
    // Text above the first score that only frames the answer, or says "none" before the scored facts.
    if (!block.marked && isFraming(block.lines)) continue;
    const content = cleanContent(block.marked ? block.lines : withoutLeadWords(block.lines));
    if (!block.marked && NOTHING_ANSWER.test(content)) continue;
    if (content === '') continue;
    const sourceSeqs = [...new Set(block.sources)].sort((a, b) => a - b).slice(0, MAX_SOURCE_SEQS);
    const replacesSeqs = [...new Set(block.replaces ?? [])].sort((a, b) => a - b).slice(0, MAX_SOURCE_SEQS);
    observations.push({
      content: truncateObservation(content, maxChars),
      importance: block.importance,
      ...(sourceSeqs.length > 0 ? { sourceSeqs } : {}),
      // Written after its text, a score's block holds the next observation's lines: whose a
      // `REPLACES:` line is cannot be told, and a wrong one would retire the wrong fact.
      ...(replacesSeqs.length > 0 && !backwards ? { replacesSeqs } : {}),
    });
  }
  return observations;
}

/**
 * Scores written on a scale of ten (`IMPORTANCE: 8`, `IMPORTANCE: 3`): when every score of the
 * answer is a whole number from 0 to 10 and one is above 1, each is read as tenths. Clamped
 * instead, they would all be 1.0 and the ranking among them lost.
 */
function onTenPointScale(scores: ReadonlyArray<{ importance: number | null; readonly written?: number }>): void {
  const scored = scores.filter((score) => score.importance !== null);
  const tens = scored.every(
    (score) =>
      score.written !== undefined && Number.isInteger(score.written) && score.written >= 0 && score.written <= 10,
  );
  if (!tens || !scored.some((score) => (score.written as number) > 1)) return;
  for (const score of scored) score.importance = (score.written as number) / 10;
}

/**
 * Whether each score was written after its text (`Text` / `IMPORTANCE: 0.9`, and so on): text
 * before the first marker, each marker right after a line of text, and nothing after the last
 * one. Read the usual way, every score would go to the next observation.
 */
function scoresFollowText(blocks: readonly Block[]): boolean {
  const [first, ...marked] = blocks;
  const last = marked.at(-1);
  if (first === undefined || last === undefined || isFraming(first.lines) || cleanContent(first.lines) === '')
    return false;
  if (cleanContent(last.lines) !== '') return false;
  return blocks.every((block, index) => {
    if (index > 0 && (block.closed || !block.marked)) return false;
    if (index === blocks.length - 1) return true;
    return cleanContent(block.lines) !== '' && (block.lines.at(-1) ?? '').trim() !== '';
  });
}

/** Each marker's score and sources given to the text above it. */
function scoredBackwards(blocks: readonly Block[]): Block[] {
  return blocks.slice(1).map((block, index) => ({
    ...block,
    // The first text may open with a preamble ("Here are the observations:"), never stored.
    lines: index === 0 ? withoutLeadingFraming(blocks[0]?.lines ?? []) : (blocks[index]?.lines ?? []),
  }));
}

/** The lines from the first that is not framing, with its preamble words removed (see {@link afterLeadWords}). */
function withoutLeadingFraming(lines: readonly string[]): string[] {
  const start = lines.findIndex((line) => line.trim() !== '' && !FRAME_LINE.test(line) && !isPreambleLine(line));
  return start < 0 ? [] : [afterLeadWords(lines[start] as string), ...lines.slice(start + 1)];
}

/** The lines with the preamble words removed from the first that says something. */
function withoutLeadWords(lines: readonly string[]): string[] {
  const start = lines.findIndex((line) => line.trim() !== '' && !FRAME_LINE.test(line));
  return start < 0
    ? [...lines]
    : [...lines.slice(0, start), afterLeadWords(lines[start] as string), ...lines.slice(start + 1)];
}

/**
 * An answer without any score: one observation, or one per item when, past its framing
 * lines, it is a plain list (`- User prefers tabs` / `- Uses Go`).
 */
function unscored(lines: readonly string[], maxObservations: number, maxChars: number): ParsedObservation[] {
  const rest = withoutSignOff(withoutLeadingFraming(lines));
  const items = rest.filter((line) => line.trim() !== '');
  if (items.length > 1 && items.every((line) => BULLET_LINE.test(line))) {
    return items
      .slice(0, maxObservations)
      .map((line) => ({ content: truncateObservation(stripBullet(line), maxChars), importance: null }));
  }
  const content = cleanContent(rest);
  return content === '' || maxObservations === 0
    ? []
    : [{ content: truncateObservation(content, maxChars), importance: null }];
}

/**
 * The lines without closing remarks addressed to the reader (`Let me know if…`, `I hope this
 * helps`, `These observations capture…`, and `Note: I skipped the greetings.` while it says
 * nothing else): trailing paragraphs, after a blank line, of a text that has more than one.
 */
export function withoutSignOff(lines: readonly string[]): string[] {
  // A remark must follow some content: found once, so many trailing remarks cost linear time.
  const firstContent = lines.findIndex((line) => line.trim() !== '' && !FRAME_LINE.test(line));
  let end = lines.length;
  for (;;) {
    while (end > 0 && (lines[end - 1] as string).trim() === '') end--;
    let start = end;
    while (start > 0 && (lines[start - 1] as string).trim() !== '') start--;
    if (firstContent < 0 || firstContent >= start || !isSignOff(lines.slice(start, end))) break;
    end = start;
  }
  const kept = lines.slice(0, end);
  // A separator left at the end (`---` above the remark) frames nothing any more.
  while (kept.length > 0 && ((kept.at(-1) as string).trim() === '' || FRAME_LINE.test(kept.at(-1) as string)))
    kept.pop();
  return kept;
}

// Only what is said to the reader of the answer, never a fact: "Note: this applies to …" and
// "If you need data to survive, …" are content.
const SIGN_OFF =
  /^[\s*_>]*(?:let\s+me\s+know|i\s+hope|hope\s+(?:this|that)\s+helps|feel\s+free|please\s+let\s+me|if\s+you\s+(?:would\s+like|want\s+me|need\s+me|need\s+anything|have\s+any\s+questions)|these\s+are\s+(?:the|my)\s+observations?\b|(?:these|the\s+above)\s+observations?\s+(?:capture|cover|summari[sz]e|reflect|are\s+(?:all|the\s+durable)))/i;
// A note on what the answer left out (`Note: I skipped the greetings.`): said to the reader only
// while it says nothing else (`Note: greetings only. The user prefers tabs.` is content).
const LEFT_OUT_NOTE =
  /^[\s*_>]*(?:note:\s*(?:i\b|i've|greetings|small\s+talk)|i\s+(?:skipped|omitted|ignored|left\s+out)\b)/i;

/** Whether a paragraph is a closing remark to the reader (see {@link withoutSignOff}). */
function isSignOff(paragraph: readonly string[]): boolean {
  const head = paragraph.find((line) => !FRAME_LINE.test(line)) ?? '';
  return SIGN_OFF.test(head) || (LEFT_OUT_NOTE.test(head) && onlyReasons(paragraph.join('\n')));
}

/** True when text before the first observation only frames the answer. */
function isFraming(lines: readonly string[]): boolean {
  return lines.every((line) => line.trim() === '' || FRAME_LINE.test(line) || isPreambleLine(line));
}

/**
 * Whether a line only introduces the answer: it opens like a preamble ("Here are", "Sure",
 * "Based on the transcript", "I found") and every word of it frames ("Here are the key
 * observations from this segment:"), or it is a short label ending in a colon. "Sure, the user
 * builds with pnpm." and "The following directories are generated: dist/ and gen/." state
 * something.
 */
function isPreambleLine(line: string): boolean {
  const text = line.slice(DECORATION.exec(line)?.[0].length ?? 0);
  if (ANNOUNCING_LEAD.test(text) || INTERJECTION_LEAD.test(text)) return onlyFraming(text);
  return LABEL_LINE.test(text);
}

/** Whether every word of `text` is a {@link FRAMING_WORDS} word or a number under 100. */
function onlyFraming(text: string): boolean {
  for (const [word] of text.replace(ABOUT_THE_USER, ' ').matchAll(WORD)) {
    const key = word.toLowerCase().replace(/’/g, "'");
    if (!FRAMING_WORDS.has(key) && !/^\d{1,2}$/.test(key)) return false;
  }
  return true;
}

/**
 * A fact's line without the preamble words it opens with: an interjection (`Sure, `, `Okay. `)
 * and an announcement that only frames, up to its `,` or `:` (`Based on the transcript, `,
 * `Here is what I found: `). The line as it is when anything else comes first.
 */
function afterLeadWords(line: string): string {
  let rest = line.trimStart();
  let stripped = false;
  for (;;) {
    const interjection = INTERJECTION.exec(rest);
    if (interjection && interjection[0].length < rest.length) {
      rest = rest.slice(interjection[0].length);
      stripped = true;
      continue;
    }
    if (!ANNOUNCING_LEAD.test(rest)) break;
    const end = rest.search(/[,:]/);
    if (end < 0 || !onlyFraming(rest.slice(0, end)) || !/\S/.test(rest.slice(end + 1))) break;
    rest = rest.slice(end + 1).trimStart();
    stripped = true;
  }
  // `Based on the transcript, the user …` reads as a sentence of its own: `The user …`. Only a
  // common word is capitalised, never a name written in lower case (`pnpm`, `iOS`).
  return stripped ? rest.replace(SENTENCE_START, (word) => word.charAt(0).toUpperCase() + word.slice(1)) : line;
}

/** Reads an `IMPORTANCE` line: its score and, if any, content or sources after it; undefined for any other line. */
function readMarker(line: string): Block | undefined {
  // Matched with each run of white space as one: the pattern's optional spaces before its
  // alternatives backtrack over a long run once per character (quadratic: seconds for a line
  // of 100,000 spaces a model could be led to write).
  const folded = foldWidth(line);
  const squeezed = folded.replace(/\s{2,}/gu, ' ');
  const match = MARKER_LINE.exec(squeezed);
  if (!match) return undefined;
  // Folding keeps every index, so the value as written is the same stretch of the line.
  const value = line.slice(unsqueezedIndex(folded, squeezed.length - (match[1] ?? '').length)).trim();
  const score = readScore(value);
  if (score === undefined) return undefined;
  const block: Block = {
    marked: true,
    importance: score.importance,
    ...(score.written === undefined ? {} : { written: score.written }),
    lines: [],
    sources: [],
  };
  const rest = score.rest.replace(/^[*_)\]]*\s*(?:[-–—:|](?:\s+|$))?/, '').trim();
  if (rest === '') return block;
  const sources = readSources(rest);
  const replacing = sources ? undefined : readReplaces(rest);
  if (sources) block.sources.push(...sources);
  else if (replacing) block.replaces = replacing;
  else block.lines.push(rest);
  return block;
}

/** The index in `text` of index `at` of `text` with each run of white space made one space. */
function unsqueezedIndex(text: string, at: number): number {
  let squeezedIndex = 0;
  for (let index = 0; index < text.length; index++) {
    if (squeezedIndex === at) return index;
    const inRun = index > 0 && /\s/u.test(text.charAt(index)) && /\s/u.test(text.charAt(index - 1));
    if (!inRun) squeezedIndex++;
  }
  return text.length;
}

/**
 * The score at the start of a marker's value: a number (`0.9`, `.9`, `~0.8`, `90%`, `9/10`,
 * `9 out of 10`), a level in words (`high`, `Very high`, `medium-high`; a number in brackets
 * after it wins: `HIGH (0.9)` is 0.9), or a single token that is no score (`NaN`, `???`,
 * empty), scored `null`. A remark in brackets or a level in words after a number
 * (`0.85 (critical constraint)`, `0.9 - high`) belongs to the score, not to `rest`, the text
 * after it. Undefined when the value is a sentence: then the line is content that happens to
 * start with the word "Importance".
 */
function readScore(value: string): { importance: number | null; written?: number; rest: string } | undefined {
  // Full-width digits and signs read as ASCII; folding keeps every index, so `rest` is cut from `value`.
  const text = foldWidth(value);
  const start = SCORE_LEAD.exec(text)?.[0].length ?? 0;
  const number = readNumber(text, start);
  if (number) {
    const end = afterRemark(text, number.end);
    return { ...scoreOf(number), rest: value.slice(end) };
  }
  if (text.slice(start).trim() === '') return { importance: null, rest: '' };
  const phrase = LEVEL_PHRASE.exec(text.slice(start));
  if (phrase) {
    let end = start + phrase[0].length;
    const closing = /^[*_)\].]*/.exec(text.slice(end))?.[0] ?? '';
    end += closing.length;
    // `HIGH (0.9)`, `high - 0.9`: the number is the more precise score.
    const given = /^\s*[([]\s*/.exec(text.slice(end)) ?? /^\s*(?:[-–—:|,/=]\s*)?/.exec(text.slice(end));
    const stated = given ? readNumber(text, end + given[0].length) : undefined;
    if (stated && (/[([]/.test(given?.[0] ?? '') || text.slice(stated.end).replace(/[\s*_.)\]]+/g, '') === ''))
      return { ...scoreOf(stated), rest: value.slice(afterRemark(text, stated.end)) };
    const after = text.slice(end).trimStart();
    // `high`, `High.`, `high - text` score; `high for security fixes, low for docs` and
    // `low-cost hosting is preferred` are sentences.
    if (after !== '' && closing === '' && !/^(?:[-–—:|](?:\s|$)|[([])/.test(after)) return undefined;
    return { importance: levelOf(phrase), rest: value.slice(afterRemark(text, end)) };
  }
  // A single token ("NaN", "unknown", "???") is a failed score; a sentence is content.
  return /^\S+\s*$/.test(text.slice(start)) ? { importance: null, rest: '' } : undefined;
}

interface ReadNumber {
  importance: number;
  /** Whether it was written as a plain number (no `%`, no `/10`). */
  plain: boolean;
  /** Index in the text after the number and the signs glued to it. */
  end: number;
}

/** The number at `start` of `text`, with `%`, `/10` or `out of 10` after it applied. */
function readNumber(text: string, start: number): ReadNumber | undefined {
  const number = NUMBER_PREFIX.exec(text.slice(start));
  if (!number) return undefined;
  let importance = Number(number[0].replace(',', '.'));
  let end = start + number[0].length;
  // Symbols glued to the number (`%`, `/10`, `,`) belong to the score, not to the content.
  const glued = /^(?:\/\s*\d+(?:\.\d*)?|[^\s\p{L}\p{N}])*/u.exec(text.slice(end))?.[0] ?? '';
  const spelled = glued === '' ? /^\s+(?:out\s+)?of\s+(\d+(?:\.\d*)?)(?![\p{L}\p{N}])/iu.exec(text.slice(end)) : null;
  const denominator = Number(/^\/\s*(\d+(?:\.\d*)?)/.exec(glued)?.[1] ?? spelled?.[1]);
  if (glued.startsWith('%')) importance /= 100;
  else if (denominator > 0) importance /= denominator;
  end += glued.length + (spelled?.[0].length ?? 0);
  return { importance, plain: !glued.startsWith('%') && !(denominator > 0), end };
}

function scoreOf(number: ReadNumber): { importance: number | null; written?: number } {
  if (!Number.isFinite(number.importance)) return { importance: null };
  const importance = Math.min(1, Math.max(0, number.importance));
  return number.plain ? { importance, written: number.importance } : { importance };
}

/** The score of a level in words: the mean of its one or two levels, each moved by its modifier. */
function levelOf(phrase: RegExpExecArray): number {
  const levels = [
    [phrase[1], phrase[2]],
    [phrase[3], phrase[4]],
  ].flatMap(([modifier, name]) => {
    if (name === undefined) return [];
    const level = LEVEL_WORDS[name.toLowerCase()] as number;
    return [0.5 + (level - 0.5) * (modifier === undefined ? 1 : (MODIFIERS[modifier.toLowerCase()] as number))];
  });
  const mean = levels.reduce((sum, level) => sum + level, 0) / levels.length;
  return Math.round(Math.min(1, Math.max(0, mean)) * 100) / 100;
}

/**
 * The index after a remark on the score that follows it at `start`: words in brackets
 * (`(critical constraint)`, `(high)`) unless they cite sources, or a level alone at the end of
 * the line (`0.9 - high`). `start` when there is none.
 */
function afterRemark(text: string, start: number): number {
  const rest = text.slice(start);
  const bracketed = /^\s*[([]([^()[\]]*)[)\]]/.exec(rest);
  if (bracketed && !SOURCE_LINE.test(tailTrimmed(bracketed[1] ?? ''))) return start + bracketed[0].length;
  const separator = /^\s*(?:[-–—:|,/]\s*)?/.exec(rest)?.[0] ?? '';
  const level = LEVEL_PHRASE.exec(rest.slice(separator.length));
  if (level && /^[\s*_.)\]]*$/.test(rest.slice(separator.length + level[0].length))) return text.length;
  return start;
}

/** `text` with full-width forms (`０．９`, `：`) and the ideographic space in ASCII, one code unit each. */
function foldWidth(text: string): string {
  return text.replace(/[\uFF01-\uFF5E\u3000]/g, (char) =>
    char === '\u3000' ? ' ' : String.fromCharCode(char.charCodeAt(0) - 0xfee0),
  );
}

/** The seqs of a `SOURCE: 12, 14-16` line (none for `SOURCE: none`); undefined when the line is anything else. */
function readSources(line: string): number[] | undefined {
  const match = SOURCE_LINE.exec(tailTrimmed(line));
  return match ? seqListOf(match[1] ?? '', true) : undefined;
}

/**
 * `line` as the `SOURCE:` and `REPLACES:` patterns read it: each run of white space one space,
 * and without the emphasis, brackets and white space closing it. Cut here, in linear time: the
 * patterns' own lazy value before that tail took time quadratic in its length (a line of 65,000
 * `)` took 18 s), and the line is the model's.
 */
function tailTrimmed(line: string): string {
  let end = line.length;
  while (end > 0 && CLOSING_CHARACTERS.has(line.charCodeAt(end - 1))) end--;
  return line.slice(0, end).replace(/\s{2,}/gu, ' ');
}

const CLOSING_CHARACTERS: ReadonlySet<number> = new Set(
  [...'*_])', ' ', '\t', '\r', '\n', '\v', '\f', '\u00a0', '\u3000'].map((character) => character.charCodeAt(0)),
);

/** Reads a `REPLACES:` line: the seqs of the memory lines it names, or undefined for any other line. */
function readReplaces(line: string): number[] | undefined {
  const match = REPLACES_LINE.exec(tailTrimmed(line));
  // Named one by one: a range would let one line retire every fact the observer was shown.
  return match ? seqListOf(match[1] ?? '', false) : undefined;
}

/**
 * The seqs a `SOURCE:` or `REPLACES:` line lists (none for `none`), or undefined when its value
 * is no list of seqs; ranges count only with `ranges`.
 */
function seqListOf(value: string, ranges: boolean): number[] | undefined {
  // No list of at most 64 seqs is this long, and the clean-ups below are not all linear on a
  // long run of white space or punctuation: such a value is text.
  if (value.length > MAX_SEQ_LIST_CHARS) return undefined;
  const list = value.replace(/[[\]()]/g, ' ').trim();
  // A source line that cites nothing (`SOURCE: none`, `SOURCE: 0`, `SOURCE:`) is still a
  // source line: it is dropped, never kept as the observation's text.
  if (NO_SOURCE.test(list)) return [];
  if (!isSeqList(list)) {
    // `SOURCE: 1 (user)`, `SOURCE: [3] user`, `SOURCE: transcript seq 3`, `SOURCE: 3, 5.`: the
    // seqs with the words models add around them.
    const loose = value
      .replace(/\((?:[^()\d]*)\)/g, ' ')
      .replace(/[[\]()]/g, ' ')
      .replace(/\b(?:transcript|messages?|msgs?|lines?|turns?|user|assistant|tool|system)\b:?/gi, ' ')
      .replace(/[.;,:\s]+$/, '')
      .trim();
    if (loose === '' || !isSeqList(loose)) return undefined;
    return seqsIn(loose, ranges);
  }
  return seqsIn(list, ranges);
}

const MAX_SEQ_LIST_CHARS = 1000;

/**
 * Whether `text` is a list of seqs: `3`, `3, 5`, `seq 3 and seq: 5`, `#3-#7`, `messages 3; 4`.
 * Checked item by item, in linear time: one pattern for the whole list, with `seq` and its
 * white space optional inside a repeat, took time doubling with every `seq 1 ` of a line that
 * did not match (26 of them froze the server for 12 s), and the line is the model's.
 */
function isSeqList(text: string): boolean {
  const list = text
    .trim()
    .replace(/^(?:messages?|msgs?)\s+/i, '')
    .replace(/\bseq\s*:?\s*(?=#?\d)/gi, '')
    .replace(/\s*[-–]\s*/g, '-');
  if (list === '') return false;
  return list.split(/\s*(?:[,;]|\band\b)\s*|\s+/i).every((item) => SEQ_ITEM.test(item));
}

const SEQ_ITEM = /^#?\d+(?:-#?\d+)?$/;

/**
 * The seqs of a list `isSeqList` accepted; a range (`3-7`) counts each seq in it, or, without
 * `ranges`, none. A number past 2^53 is no seq: counting from it would never end.
 */
function seqsIn(list: string, ranges: boolean): number[] {
  const seqs: number[] = [];
  for (const part of list.matchAll(/(\d+)(?:\s*[-–]\s*(?:seq\s*:?\s*|#)?(\d+))?/gi)) {
    const first = Number(part[1]);
    const last = part[2] === undefined ? first : Number(part[2]);
    if (!Number.isSafeInteger(first) || !Number.isSafeInteger(last) || (!ranges && last !== first)) continue;
    for (let seq = first; seq <= Math.min(last, first + MAX_SOURCE_SEQS) && seqs.length < MAX_SOURCE_SEQS; seq++) {
      if (Number.isSafeInteger(seq) && seq > 0) seqs.push(seq);
    }
  }
  return seqs;
}

const NO_SOURCE = /^(?:|none|n\/?a|nil|null|unknown|-+|—|0+(?:\s*[,;]\s*0+)*)\.?$/iu;

/** Joins a block's lines: frame lines and repeats dropped, a content label and a lone bullet removed. */
function cleanContent(lines: readonly string[]): string {
  const kept = collapseRepeats(lines.filter((line) => !FRAME_LINE.test(line)));
  const content = kept.join('\n').trim().replace(CONTENT_LABEL, '');
  // `**User prefers tabs.**`: emphasis around the whole of a one-line observation.
  return content.includes('\n') ? content : stripBullet(content).replace(/^(\*\*|__)(?!.*\1.+)(.+)\1$/, '$2');
}

function stripBullet(line: string): string {
  return line.replace(/^\s*(?:[-*•+◦▪–]|\d{1,3}[.)])\s+/, '').trim();
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
export function truncateObservation(content: string, maxChars: number): string {
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
