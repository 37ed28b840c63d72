/**
 * Eval datasets: LongMemEval and LoCoMo files read into one shape, validated field by field,
 * and the `--limit` / `--types` selection of their questions. No I/O: the caller reads and
 * parses the file.
 * @module
 */
import { createHash } from 'node:crypto';
import { HarnessMemoryError } from '../core/errors.js';
import type { InstanceContext, ParsedConversation } from './_dataset-fields.js';
import { describeInstance, invalidField, isRecord, jsonTypeOf } from './_dataset-fields.js';
import { parseLocomoSample } from './_locomo-format.js';
import { parseLongMemEvalInstance } from './_longmemeval-format.js';
import type { EvalConversation, EvalDataset, EvalDatasetFormat, EvalSession } from './eval-conversation.js';

export { LONGMEMEVAL_QUESTION_TYPES } from './eval-conversation.js';
export type {
  EvalDatasetFormat,
  EvalMessage,
  EvalSession,
  EvalQuestion,
  EvalConversation,
  EvalDatasetProblem,
  EvalDataset,
} from './eval-conversation.js';

const PARSERS: Readonly<Record<EvalDatasetFormat, (value: unknown, index: number) => ParsedConversation>> = {
  longmemeval: parseLongMemEvalInstance,
  locomo: parseLocomoSample,
};

/**
 * Reads an already-parsed LongMemEval or LoCoMo file, detecting the format from its first
 * element, and validates every field used. Sessions come out in date order.
 *
 * Memory: the result shares the message strings of `json` (LongMemEval) or adds one short
 * prefix per turn (LoCoMo), so it costs little beyond the parsed JSON. For files of hundreds
 * of megabytes (`longmemeval_s`, `longmemeval_m`, which is larger than the longest string V8
 * allows), use `readEvalDatasetFile`, which reads the file one instance at a time.
 *
 * @throws HarnessMemoryError `EVAL_DATASET_INVALID` naming the instance and the field, for
 * malformed input, an unknown format or repeated ids.
 * @example
 * const dataset = parseEvalDataset(JSON.parse(await readFile('locomo10.json', 'utf8')));
 * for (const problem of dataset.problems) console.warn(problem.message);
 */
export function parseEvalDataset(json: unknown): EvalDataset {
  const format = detectFormat(json);
  return assembleEvalDataset(
    format,
    (json as readonly unknown[]).map((element, index) => parseEvalElement(format, element, index)),
  );
}

/**
 * One element of a dataset file's top-level array, read as `format`: its conversation
 * (sessions in date order) and its unreadable dates.
 * @throws HarnessMemoryError `EVAL_DATASET_INVALID` naming the instance and the field.
 */
export function parseEvalElement(format: EvalDatasetFormat, element: unknown, index: number): ParsedConversation {
  const parsed = PARSERS[format](element, index);
  return {
    ...parsed,
    conversation: { ...parsed.conversation, sessionsDigest: sessionsDigest(parsed.conversation.sessions) },
  };
}

/**
 * A digest of what a conversation holds: each session's id and date and each turn's role and text, in order.
 * Hashed piece by piece, as a LongMemEval `_m` haystack is a few megabytes.
 */
export function sessionsDigest(sessions: readonly EvalSession[]): string {
  const hash = createHash('sha256');
  for (const session of sessions) {
    hash.update(JSON.stringify(['session', session.id, session.date]));
    for (const message of session.messages) hash.update(JSON.stringify(['turn', message.role, message.content]));
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * The format of a dataset whose top-level array starts with `first`. @throws HarnessMemoryError
 * `EVAL_DATASET_INVALID`
 */
export function detectEvalFormat(first: unknown): EvalDatasetFormat {
  return detectFormat([first]);
}

/** The dataset of the parsed elements: ids checked unique, date problems listed when the dataset has dates. */
export function assembleEvalDataset(
  format: EvalDatasetFormat,
  parsed: readonly ParsedConversation[],
  loadSessions?: EvalDataset['loadSessions'],
): EvalDataset {
  checkUniqueIds(format, parsed);
  const hasDates = parsed.some((instance) => instance.hasDate);
  const problems = hasDates
    ? parsed.flatMap(({ conversation, undated }) =>
        undated.map((entry) => ({
          index: conversation.index,
          id: conversation.id,
          field: entry.field,
          message:
            `${describeInstance({ format, index: conversation.index, id: conversation.id })}: ` +
            `${entry.field} ${entry.problem}.`,
        })),
      )
    : [];
  const conversations = parsed.map((instance) => instance.conversation);
  return loadSessions === undefined
    ? { format, conversations, problems }
    : { format, conversations, problems, loadSessions };
}

function detectFormat(json: unknown): EvalDatasetFormat {
  const first: unknown = Array.isArray(json) ? json[0] : undefined;
  if (isRecord(first)) {
    if ('haystack_sessions' in first || 'question_id' in first) return 'longmemeval';
    if ('conversation' in first || 'sample_id' in first || 'qa' in first) return 'locomo';
  }
  let found: string;
  if (!Array.isArray(json)) found = `a JSON ${jsonTypeOf(json)}`;
  else if (json.length === 0) found = 'an empty array';
  else if (isRecord(first))
    found = `an array whose first element has the keys ${Object.keys(first).slice(0, 8).join(', ') || '(none)'}`;
  else found = `an array whose first element is ${jsonTypeOf(first)}`;
  return unknownFormat(found);
}

function unknownFormat(found: string): never {
  throw new HarnessMemoryError({
    code: 'EVAL_DATASET_INVALID',
    component: 'eval',
    message:
      `The dataset is in no format the eval reads: found ${found}. Accepted: LongMemEval (a JSON array of ` +
      `instances with question_id, question_type, question, answer, question_date, haystack_sessions, ` +
      `haystack_dates, haystack_session_ids) ` +
      'or LoCoMo (a JSON array of samples with sample_id, conversation {speaker_a, speaker_b, session_N, ' +
      'session_N_date_time} and qa).',
    data: {},
  });
}

// Resume and the results file key on ids, so a repeated id would silently merge two questions.
function checkUniqueIds(format: EvalDatasetFormat, parsed: readonly ParsedConversation[]): void {
  const firstIndex = new Map<string, number>();
  const idField = format === 'longmemeval' ? 'question_id' : 'sample_id';
  for (const { conversation } of parsed) {
    const earlier = firstIndex.get(conversation.id);
    if (earlier !== undefined) {
      const context: InstanceContext = { format, index: conversation.index, id: conversation.id };
      throw invalidField(context, idField, `repeats the ${idField} of instance ${earlier}; ids must be unique`);
    }
    firstIndex.set(conversation.id, conversation.index);
  }
}

/** The question types present in a dataset, in order of first appearance. */
export function questionTypesOf(dataset: EvalDataset): string[] {
  const types = new Set<string>();
  for (const conversation of dataset.conversations)
    for (const question of conversation.questions) types.add(question.questionType);
  return [...types];
}

/** Which questions to run: `--limit N` and `--types t1,t2`. */
export interface SelectQuestionsOptions {
  /** Keep only the first N questions (after the type filter), in file order. @default every question */
  readonly limit?: number | undefined;
  /** Keep only questions of these types (`question_type`, or `category-N` for LoCoMo). @default every type */
  readonly types?: readonly string[] | undefined;
}

/**
 * The dataset narrowed to the chosen questions. Conversations left with no question are
 * dropped, and a LoCoMo conversation keeps only its chosen questions (it is still remembered
 * once). Dataset problems are kept only for the conversations that remain.
 * @throws HarnessMemoryError `REQUEST_INVALID` (`field` `limit` or `types`) for a limit that is
 * not a positive integer, or a type absent from the dataset (the message lists the valid ones).
 * @example
 * const chosen = selectQuestions(dataset, { limit: 50, types: ['temporal-reasoning'] });
 */
export function selectQuestions(dataset: EvalDataset, options: SelectQuestionsOptions): EvalDataset {
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  if (options.limit !== undefined && (!Number.isSafeInteger(options.limit) || options.limit < 1)) {
    throw optionError('limit', `--limit must be a whole number of questions, 1 or more; got ${String(options.limit)}.`);
  }
  const types = checkTypes(dataset, options.types);
  let remaining = limit;
  const conversations: EvalConversation[] = [];
  for (const conversation of dataset.conversations) {
    if (remaining <= 0) break;
    const questions = conversation.questions
      .filter((question) => types === null || types.has(question.questionType))
      .slice(0, remaining);
    remaining -= questions.length;
    if (questions.length > 0) conversations.push({ ...conversation, questions });
  }
  const kept = new Set(conversations.map((conversation) => conversation.index));
  const problems = dataset.problems.filter((problem) => kept.has(problem.index));
  return dataset.loadSessions === undefined
    ? { format: dataset.format, conversations, problems }
    : { format: dataset.format, conversations, problems, loadSessions: dataset.loadSessions };
}

function checkTypes(dataset: EvalDataset, requested: readonly string[] | undefined): ReadonlySet<string> | null {
  if (requested === undefined) return null;
  const wanted = requested.map((type) => type.trim()).filter((type) => type !== '');
  const valid = questionTypesOf(dataset);
  if (wanted.length === 0)
    throw optionError('types', `--types names no question type; valid types: ${valid.join(', ')}.`);
  const unknown = wanted.filter((type) => !valid.includes(type));
  if (unknown.length > 0) {
    throw optionError(
      'types',
      `--types: ${unknown.map((type) => JSON.stringify(type)).join(', ')} ` +
        `${unknown.length === 1 ? 'is not a question type' : 'are not question types'} of this dataset; ` +
        `valid types: ${valid.join(', ')}.`,
    );
  }
  return new Set(wanted);
}

function optionError(field: 'limit' | 'types', message: string): HarnessMemoryError {
  return new HarnessMemoryError({ code: 'REQUEST_INVALID', component: 'eval', message, data: { field } });
}
