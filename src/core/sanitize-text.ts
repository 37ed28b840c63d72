/**
 * Cleaning of model-produced memory text before it is stored or put back into a prompt.
 * @module
 */
import { wellFormed } from './cut-text.js';

// Tag characters (and the rest of their plane's unassigned block), bidi controls (with the
// Arabic letter mark), zero-width characters, word joiners, the BOM, the soft hyphen, the
// combining grapheme joiner, the Mongolian vowel separator, the Khmer inherent vowels, Hangul
// fillers, interlinear annotation marks, shorthand format controls, the deprecated format
// characters, C0 controls other than \t (U+0009) and \n (U+000A), DEL and the C1 controls (NEL
// apart: it is a line break). All of them can hide or reorder instructions, or split a word a
// filter looks for. The joiners and variation selectors are apart (JOINABLE): scripts and
// emoji need them.
const INVISIBLE_CLASS =
  '\\u{E0000}-\\u{E0FFF}\\u{202A}-\\u{202E}\\u{2066}-\\u{2069}\\u{061C}\\u{200B}\\u{200E}\\u{200F}' +
  '\\u{2060}-\\u{2064}\\u{206A}-\\u{206F}\\u{FEFF}\\u{00AD}\\u{034F}\\u{180E}\\u{17B4}\\u{17B5}\\u{115F}\\u{1160}' +
  '\\u{3164}\\u{FFA0}\\u{FFF9}-\\u{FFFB}\\u{1BCA0}-\\u{1BCA3}\\u{1D173}-\\u{1D17A}\\u{0}-\\u{8}\\u{B}\\u{C}\\u{E}-\\u{1F}' +
  '\\u{7F}-\\u{84}\\u{86}-\\u{9F}';
// The variation selectors and the Mongolian free variation selectors; with the zero-width
// non-joiner and joiner, what scripts and emoji need.
const SELECTOR_CLASS = '\\u{FE00}-\\u{FE0F}\\u{180B}-\\u{180D}\\u{180F}';
const JOINABLE_CLASS = `\\u{200C}\\u{200D}${SELECTOR_CLASS}`;
// What a tag's `<` is looked past to, and what a key may not hold: all of the above.
const HIDDEN_CLASS = `${INVISIBLE_CLASS}${JOINABLE_CLASS}`;
const INVISIBLE = new RegExp(`[${INVISIBLE_CLASS}]`, 'gu');
const HAS_HIDDEN = new RegExp(`[${HIDDEN_CLASS}]`, 'u');

// The zero-width non-joiner (Persian, Hindi) and joiner (emoji sequences such as 👩‍💻, Indic
// conjuncts) are kept between two characters outside ASCII, where those scripts use them, and a
// variation selector (❤️, Mongolian letter forms) right after one, the character it varies;
// elsewhere, next to ASCII, they only split a word (`ig\u200Dnore`, `sk-\uFE0F…`) or a tag.
// A run mixing them (`❤\uFE0F\u200D🔥`) is judged whole, by the characters either side of it:
// judged one kind at a time, `A\u200D\uFE0F` kept the selector after the dropped joiner, which
// a second pass then dropped.
const JOINABLE_RUN = new RegExp(`[${JOINABLE_CLASS}]+`, 'gu');
const HAS_JOINER = new RegExp(`[${JOINABLE_CLASS}]`, 'u');
const NON_ASCII = /[\u0080-\uFFFF]/;

/**
 * `text` with each run of joiners and variation selectors dropped unless it follows a character
 * outside ASCII, and then without the joiners at its end unless one follows it too: what that
 * keeps, a second pass keeps (one pass: linear).
 */
function stripAsciiJoiners(text: string): string {
  return text.replace(JOINABLE_RUN, (run: string, offset: number, whole: string) => {
    const before = whole[offset - 1];
    if (before === undefined || !NON_ASCII.test(before)) return '';
    const after = whole[offset + run.length];
    if (after !== undefined && NON_ASCII.test(after)) return run;
    let end = run.length;
    while (end > 0 && isJoiner(run.charCodeAt(end - 1))) end--;
    return run.slice(0, end);
  });
}

/** Whether a UTF-16 code unit is the zero-width non-joiner or joiner. */
function isJoiner(code: number): boolean {
  return code === 0x200c || code === 0x200d;
}

// CRLF, lone CR, and the Unicode line breaks a model reads as one: NEL, the line separator
// and the paragraph separator. Each becomes \n, so it is indented like any other new line.
const LINE_BREAK = /\r\n?|[\u0085\u2028\u2029]/g;
const HAS_LINE_BREAK = /[\r\u0085\u2028\u2029]/;

// A `<` that could start a tag, a closing tag, a comment, a processing instruction or a chat
// template's special token: any `<` but one followed by a space, a digit, `=`, `<` or `-` (so
// `a < b`, `x<5`, `<=`, `1 << 3` and `<-` stay), or the end; and spaced ones closed like a
// tag (`< /tag`, `< tag>`). So `</tag`, `<//tag`, `</\u0301tag` (a combining mark) and
// `<|im_start|>` are escaped. Invisible characters after the `<` are looked past, for text
// that was not stripped first.
const TAG_OPEN = new RegExp(
  `<(?=[${HIDDEN_CLASS}]*(?:[^\\s\\d=<-]|\\s*[/?!|]|\\s+\\p{L}[\\p{L}\\p{N}_.:-]*\\s*\\/?>))`,
  'gu',
);

// Look-alikes of `<` (fullwidth, small, modifier, single guillemet, CJK and mathematical
// angle brackets, the ornament brackets, not-less-than, Canadian syllabics) that a model may
// read as one: escaped when they open a closing tag (`＜/name`, with any solidus look-alike) or
// one of our wrappers and the roles a chat template knows, or a template token (`＜|`); so
// `‹mot›` in French, `〈書名〉` and `a ≮ b` stay as they are.
const LOOK_ALIKE_CLASS =
  '[\\uFF1C\\uFE64\\u02C2\\u2039\\u3008\\u27E8\\u2329\\u276C\\u276E\\u2770\\u29FC\\u226E\\u1438]';
const LOOK_ALIKE_OPEN = new RegExp(LOOK_ALIKE_CLASS, 'gu');
const HAS_LOOK_ALIKE = new RegExp(LOOK_ALIKE_CLASS, 'u');
// What a look-alike is looked past to: invisible characters and spaces (a sticky scan from
// just after it, which stops at the next look-alike: every character is scanned at most once).
const LOOK_PAST = new RegExp(`[${HIDDEN_CLASS}\\s]*`, 'uy');
// What follows a look-alike that opens a tag, in the compatibility decomposition (NFKD) of the
// text after it: fullwidth (`ｓｙｓｔｅｍ`, `／`, `｜`), mathematical (`𝐬𝐲𝐬𝐭𝐞𝐦`) and circled
// letters are read as the ASCII ones a model takes them for, and a role followed by a
// combining mark is still the role.
const LOOK_ALIKE_TARGET =
  /^(?:[/|\u2215\u2044]|(?:working-memory|observational-memory|memory-export|transcript|system|assistant|user|human|tool|developer|instructions?)(?![\p{L}\p{N}_]))/iu;
// Characters of the text after a look-alike that are decomposed: the longest target (20
// letters) in letters of two UTF-16 units each, and the character after it.
const LOOK_ALIKE_WINDOW = 48;

/** `text` with each look-alike of `<` that opens a tag (see {@link LOOK_ALIKE_TARGET}) as `&lt;`. */
function neutralizeLookAlikes(text: string): string {
  return text.replace(LOOK_ALIKE_OPEN, (open: string, offset: number, whole: string) => {
    LOOK_PAST.lastIndex = offset + open.length;
    LOOK_PAST.exec(whole);
    const start = LOOK_PAST.lastIndex;
    const after = whole.slice(start, start + LOOK_ALIKE_WINDOW);
    return LOOK_ALIKE_TARGET.test(NON_ASCII.test(after) ? after.normalize('NFKD') : after) ? '&lt;' : open;
  });
}

/**
 * Removes invisible and control characters (tag characters, bidi controls, zero-width marks,
 * the BOM, soft hyphens, C0 controls except `\n` and `\t`, DEL, C1 controls; the zero-width
 * joiner and non-joiner next to ASCII), turns `\r\n`, lone `\r`, NEL (U+0085), U+2028 and
 * U+2029 into `\n`, and replaces a lone surrogate with U+FFFD.
 */
export function stripInvisible(text: string): string {
  const stripped = text.replace(LINE_BREAK, '\n').replace(INVISIBLE, '');
  return wellFormed(HAS_JOINER.test(stripped) ? stripAsciiJoiners(stripped) : stripped);
}

/**
 * {@link stripInvisible} for JSON text, which keeps it valid JSON on one line: the Unicode
 * line breaks (which JSON leaves raw inside strings) become the `\n` escape.
 */
export function stripInvisibleInJson(json: string): string {
  const stripped = json.replace(LINE_BREAK, '\\n').replace(INVISIBLE, '');
  return HAS_JOINER.test(stripped) ? stripAsciiJoiners(stripped) : stripped;
}

/**
 * Whether `text` holds what {@link stripInvisible} removes or turns into `\n`, a joiner
 * anywhere, or a lone surrogate: what an id or key, shown as it is, may not hold.
 */
export function needsStripping(text: string): boolean {
  return HAS_HIDDEN.test(text) || HAS_LINE_BREAK.test(text) || !text.isWellFormed();
}

// The bracketed special tokens of Mistral's chat templates (`[INST]`, `[/INST]`,
// `[SYSTEM_PROMPT]`, `[TOOL_CALLS]`, …), which a local server may read as tokens in any text.
const BRACKET_TOKEN_OPEN =
  /\[(?=\/?(?:INST|SYSTEM_PROMPT|TOOL_CALLS|AVAILABLE_TOOLS|TOOL_RESULTS|TOOL_CONTENT|THINK|IMG|IMG_BREAK|IMG_END)\])/g;

/**
 * Escapes every `<` that could open or close a tag as `&lt;` (look-alikes of `<` before a
 * closing tag, one of our wrappers or a role too, written in ASCII or in fullwidth,
 * mathematical or circled letters), so memory text cannot end or fake our
 * `<working-memory>` / `<observational-memory>` wrappers, and the `[` of Mistral's bracketed
 * template tokens as `&#91;`. Existing entities are left alone.
 */
export function neutralizeMarkup(text: string): string {
  const escaped = text.replace(TAG_OPEN, '&lt;');
  // Most text holds no look-alike: one scan, and no copy.
  const lookAlikesEscaped = HAS_LOOK_ALIKE.test(escaped) ? neutralizeLookAlikes(escaped) : escaped;
  return lookAlikesEscaped.replace(BRACKET_TOKEN_OPEN, '&#91;');
}

/**
 * Cleans memory text for a bullet list: strips invisible characters, neutralises markup and
 * prefixes every line after the first with `indent` (which should be non-empty).
 */
export function renderDataLines(text: string, indent: string): string {
  const clean = neutralizeMarkup(stripInvisible(text));
  return clean.includes('\n') ? clean.split('\n').join(`\n${indent}`) : clean;
}
