/**
 * Answer normalisation and the model-free `evidence_recall` check: does the gold answer,
 * normalised, appear in the memory that was injected?
 * @module
 */
import type { EvalQuestion } from './eval-dataset.js';

const UNITS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
const TEENS = [
  'ten',
  'eleven',
  'twelve',
  'thirteen',
  'fourteen',
  'fifteen',
  'sixteen',
  'seventeen',
  'eighteen',
  'nineteen',
];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
const ARTICLES: ReadonlySet<string> = new Set(['a', 'an', 'the']);
// The combining accents of Latin, Greek and Cyrillic letters; other scripts' marks (such as
// the Japanese voicing marks) change the letter, so they are kept.
const LATIN_ACCENTS = /[\u0300-\u036f]/g;
const APOSTROPHES = /['\u2018\u2019\u02bc`]/g;
// Everything but letters, marks, digits, whitespace and the dot, which is kept for decimals.
const PUNCTUATION = /[^\p{L}\p{M}\p{N}\s.]/gu;
const LONE_DOT = /\.(?!\d)|(?<!\d)\./g;
const THOUSANDS_COMMA = /(\d),(?=\d{3}(?!\d))/g;
// Separators of a multi-part answer ("Porto, Lisbon and Faro"); a comma inside 400,000 is not one.
const PART_SEPARATOR = /,(?!\d{3}(?!\d))|;|&|\band\b/i;

/**
 * An answer or a text in the form compared by {@link containsAnswer}: Unicode NFKC with
 * accents folded (`é` → `e`), lowercase, apostrophes dropped (`user's` → `users`), other
 * punctuation and symbols turned into spaces (a dot between digits and a comma inside
 * `400,000` are kept or dropped so numbers survive), the articles a/an/the removed, number
 * words from zero to ninety-nine written as digits (`twenty-five` → `25`), whitespace
 * collapsed.
 * @example
 * normalizeAnswer('The Twenty-Five cafés!'); // '25 cafes'
 */
export function normalizeAnswer(text: string): string {
  const folded = text.normalize('NFKD').replace(LATIN_ACCENTS, '').normalize('NFKC').toLowerCase();
  const spaced = folded
    .replace(APOSTROPHES, '')
    .replace(THOUSANDS_COMMA, '$1')
    .replace(PUNCTUATION, ' ')
    .replace(LONE_DOT, ' ');
  const words = spaced.split(/\s+/).filter((word) => word !== '' && !ARTICLES.has(word));
  return numberWordsToDigits(words).join(' ');
}

function numberWordsToDigits(words: readonly string[]): string[] {
  const result: string[] = [];
  for (let index = 0; index < words.length; index++) {
    const word = words[index] ?? '';
    const tens = TENS.indexOf(word);
    if (tens >= 2) {
      const unit = UNITS.indexOf(words[index + 1] ?? '');
      if (unit >= 1) index++;
      result.push(String(tens * 10 + Math.max(unit, 0)));
      continue;
    }
    const small = UNITS.indexOf(word);
    const teen = TEENS.indexOf(word);
    result.push(small >= 0 ? String(small) : teen >= 0 ? String(10 + teen) : word);
  }
  return result;
}

/**
 * True when `answer`, normalised, appears in `text`, normalised, as whole words (`cat` is not
 * found in `concatenate`). A multi-part answer (`Porto, Lisbon and Faro`: parts separated by
 * commas, semicolons, `&` or `and`) also counts when every part appears, in any order. An
 * answer that normalises to nothing is never contained.
 * @example
 * containsAnswer('- [3] User adopted two cats, Miso and Tofu', 'Tofu & Miso'); // true
 */
export function containsAnswer(text: string, answer: string): boolean {
  const wanted = normalizeAnswer(answer);
  if (wanted === '') return false;
  const haystack = ` ${normalizeAnswer(text)} `;
  if (haystack.includes(` ${wanted} `)) return true;
  const parts = answer
    .split(PART_SEPARATOR)
    .map(normalizeAnswer)
    .filter((part) => part !== '');
  return parts.length > 1 && parts.every((part) => haystack.includes(` ${part} `));
}

/**
 * One question's contribution to `evidence_recall`: whether its gold answer appears in the
 * injected memory (`memoryText`, the snippets as given to the answer model). `null` means the
 * question does not count: abstention questions (their gold text explains why there is no
 * answer), preference questions (their gold text is a rubric, not a fact) and empty answers.
 * @example
 * evidenceHit(question, snippet); // true | false | null
 */
export function evidenceHit(
  question: Pick<EvalQuestion, 'answer' | 'abstention' | 'questionType'>,
  memoryText: string,
): boolean | null {
  if (question.abstention || question.questionType === 'single-session-preference') return null;
  if (normalizeAnswer(question.answer) === '') return null;
  return containsAnswer(memoryText, question.answer);
}
