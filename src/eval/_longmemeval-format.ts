/**
 * Reads one LongMemEval instance (`longmemeval_s`, `_m`, `_oracle` as published) into an
 * EvalConversation: one conversation per instance, holding its one question.
 */
import type { InstanceContext, ParsedConversation, UndatedField } from './_dataset-fields.js';
import {
  expectAnswer,
  expectArray,
  expectRecord,
  expectString,
  expectText,
  invalidField,
  jsonTypeOf,
  optionalStringArray,
} from './_dataset-fields.js';
import { DATE_EXAMPLES, orderByDate, parseDatasetDate } from './_session-dates.js';
import type { EvalMessage, EvalQuestion, EvalSession } from './eval-conversation.js';
import { LONGMEMEVAL_QUESTION_TYPES } from './eval-conversation.js';

/** Suffix of the `question_id` of an abstention instance (the answer is not in the haystack). */
const ABSTENTION_SUFFIX = '_abs';

/** Parses the instance at `index` of a LongMemEval file. */
export function parseLongMemEvalInstance(value: unknown, index: number): ParsedConversation {
  const anonymous: InstanceContext = { format: 'longmemeval', index, id: undefined };
  const instance = expectRecord(value, anonymous, 'the instance');
  const context: InstanceContext = { ...anonymous, id: expectText(instance['question_id'], anonymous, 'question_id') };
  const questionId = context.id ?? '';
  const questionType = expectString(instance['question_type'], context, 'question_type');
  if (!(LONGMEMEVAL_QUESTION_TYPES as readonly string[]).includes(questionType)) {
    throw invalidField(
      context,
      'question_type',
      `is ${JSON.stringify(questionType)}; expected one of ${LONGMEMEVAL_QUESTION_TYPES.join(', ')}`,
    );
  }
  const undated: UndatedField[] = [];
  const { sessions, hasDate } = readSessions(instance, context, undated);
  const questionDate = readQuestionDate(instance['question_date'], context, undated);
  const answerSessionIds = optionalStringArray(instance['answer_session_ids'], context, 'answer_session_ids');
  const question: EvalQuestion = {
    questionId,
    questionType,
    question: expectText(instance['question'], context, 'question'),
    answer: expectAnswer(instance['answer'], context, 'answer', questionId.endsWith(ABSTENTION_SUFFIX)),
    questionDate: questionDate.text,
    questionTimestamp: questionDate.timestamp,
    abstention: questionId.endsWith(ABSTENTION_SUFFIX),
    ...(answerSessionIds === undefined ? {} : { answerSessionIds }),
  };
  return {
    conversation: { id: questionId, index, sessions: orderByDate(sessions), questions: [question] },
    undated,
    hasDate: hasDate || questionDate.text !== null,
  };
}

function readSessions(
  instance: Record<string, unknown>,
  context: InstanceContext,
  undated: UndatedField[],
): { sessions: EvalSession[]; hasDate: boolean } {
  const haystack = expectArray(instance['haystack_sessions'], context, 'haystack_sessions');
  const dates = optionalStringArray(instance['haystack_dates'], context, 'haystack_dates');
  const ids = optionalStringArray(instance['haystack_session_ids'], context, 'haystack_session_ids');
  for (const [field, list] of [
    ['haystack_dates', dates],
    ['haystack_session_ids', ids],
  ] as const) {
    if (list !== undefined && list.length !== haystack.length) {
      throw invalidField(
        context,
        field,
        `has ${list.length} entries but haystack_sessions has ${haystack.length}; they must match one to one`,
      );
    }
  }
  // Session ids only name sessions in reports (message ids come from positions), so a
  // repeated id, which a haystack sampled from a shared pool may hold, is accepted.
  const sessions = haystack.map((turns, position): EvalSession => {
    const id = ids?.[position] ?? `session_${position + 1}`;
    const dateText = dates?.[position]?.trim() || null;
    const timestamp = dateText === null ? null : parseDatasetDate(dateText);
    if (timestamp === null && dates !== undefined)
      undated.push(undatedSession(`haystack_dates[${position}]`, dateText));
    return { id, date: dateText, timestamp, messages: readTurns(turns, context, position) };
  });
  if (dates === undefined)
    undated.push({ field: 'haystack_dates', problem: 'is missing, so the sessions keep their file order' });
  return { sessions, hasDate: dates?.some((date) => date.trim() !== '') ?? false };
}

function undatedSession(field: string, dateText: string | null): UndatedField {
  if (dateText === null) return { field, problem: 'is empty; the session keeps its place in the order' };
  return {
    field,
    problem:
      `${JSON.stringify(dateText)} is not a date like ${DATE_EXAMPLES}; the session keeps its place ` + `in the order`,
  };
}

function readTurns(value: unknown, context: InstanceContext, sessionPosition: number): EvalMessage[] {
  const field = `haystack_sessions[${sessionPosition}]`;
  return expectArray(value, context, field).map((turnValue, turnPosition) => {
    const turnField = `${field}[${turnPosition}]`;
    const turn = expectRecord(turnValue, context, turnField);
    const role = turn['role'];
    if (role !== 'user' && role !== 'assistant') {
      throw invalidField(
        context,
        `${turnField}.role`,
        `must be "user" or "assistant", got ${typeof role === 'string' ? JSON.stringify(role) : jsonTypeOf(role)}`,
      );
    }
    return {
      id: `s${sessionPosition + 1}m${turnPosition + 1}`,
      role,
      content: expectString(turn['content'], context, `${turnField}.content`),
    };
  });
}

function readQuestionDate(
  value: unknown,
  context: InstanceContext,
  undated: UndatedField[],
): { text: string | null; timestamp: number | null } {
  if (value === undefined || value === null) {
    undated.push({
      field: 'question_date',
      problem: 'is missing; the answer model is not told the date of the question',
    });
    return { text: null, timestamp: null };
  }
  const text = expectString(value, context, 'question_date').trim();
  const timestamp = text === '' ? null : parseDatasetDate(text);
  if (timestamp === null)
    undated.push({
      field: 'question_date',
      problem: text === '' ? 'is empty' : `${JSON.stringify(text)} is not a date like ${DATE_EXAMPLES}`,
    });
  return { text: text === '' ? null : text, timestamp };
}
