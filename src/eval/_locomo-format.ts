/**
 * Reads one LoCoMo sample (`locomo10.json` from snap-research/locomo) into an
 * EvalConversation: the whole conversation once, with every QA item of the sample.
 */
import type { InstanceContext, ParsedConversation, UndatedField } from './_dataset-fields.js';
import { expectAnswer, expectArray, expectRecord, expectString, expectText, invalidField } from './_dataset-fields.js';
import { DATE_EXAMPLES, orderByDate, parseDatasetDate } from './_session-dates.js';
import type { EvalMessage, EvalQuestion, EvalSession } from './eval-conversation.js';

/** The category of adversarial questions, whose answer is not in the conversation. */
export const LOCOMO_ADVERSARIAL_CATEGORY = 5;

const SESSION_KEY = /^session_(\d+)$/;
// Evidence ids look like `D3:14` (dialogue 3, turn 14); published files hold a few odd ones.
const EVIDENCE_SESSION = /D(\d+)\s*:/g;

interface Speakers {
  readonly user: string;
  readonly assistant: string;
}

/** Parses the sample at `index` of a LoCoMo file. */
export function parseLocomoSample(value: unknown, index: number): ParsedConversation {
  const anonymous: InstanceContext = { format: 'locomo', index, id: undefined };
  const sample = expectRecord(value, anonymous, 'the sample');
  const sampleId = expectText(sample['sample_id'], anonymous, 'sample_id');
  const context: InstanceContext = { ...anonymous, id: sampleId };
  const conversation = expectRecord(sample['conversation'], context, 'conversation');
  // speaker_a is the user, speaker_b the assistant; both names stay in every message's text.
  const speakers: Speakers = {
    user: expectText(conversation['speaker_a'], context, 'conversation.speaker_a'),
    assistant: expectText(conversation['speaker_b'], context, 'conversation.speaker_b'),
  };
  const undated: UndatedField[] = [];
  const sessions = orderByDate(readSessions(conversation, context, speakers, undated));
  const lastDated = sessions.findLast((session) => session.timestamp !== null);
  const questions = expectArray(sample['qa'], context, 'qa').map((item, position) =>
    readQuestion(item, position, context, lastDated ?? null),
  );
  return {
    conversation: { id: sampleId, index, sessions, questions },
    undated,
    hasDate: sessions.some((session) => session.date !== null),
  };
}

function readSessions(
  conversation: Record<string, unknown>,
  context: InstanceContext,
  speakers: Speakers,
  undated: UndatedField[],
): EvalSession[] {
  const keys = Object.keys(conversation)
    .map((key) => ({ key, number: Number(SESSION_KEY.exec(key)?.[1] ?? Number.NaN) }))
    .filter(({ number }) => !Number.isNaN(number))
    .sort((left, right) => left.number - right.number);
  if (keys.length === 0)
    throw invalidField(
      context,
      'conversation',
      'has no session_N lists; a LoCoMo conversation holds session_1, session_2, ...',
    );
  const sessions = keys.map(({ key, number }) => {
    const dateField = `conversation.${key}_date_time`;
    const rawDate = conversation[`${key}_date_time`];
    const dateText =
      rawDate === undefined || rawDate === null ? null : expectString(rawDate, context, dateField).trim() || null;
    const timestamp = dateText === null ? null : parseDatasetDate(dateText);
    if (timestamp === null) {
      undated.push({
        field: dateField,
        problem:
          dateText === null
            ? 'is missing; the session keeps its place in the order'
            : `${JSON.stringify(dateText)} is not a date like ${DATE_EXAMPLES}; the session keeps its place ` +
              `in the order`,
      });
    }
    const turns = expectArray(conversation[key], context, `conversation.${key}`);
    return {
      id: key,
      date: dateText,
      timestamp,
      messages: turns.map((turn, position) =>
        readTurn(turn, `conversation.${key}[${position}]`, context, speakers, `s${number}m${position + 1}`),
      ),
    };
  });
  // Message ids are numbered by session: session_1 and session_01 would share them, and the
  // later session's messages would be dropped as already stored.
  keys.forEach(({ key, number }, index) => {
    const previous = keys[index - 1];
    if (previous !== undefined && previous.number === number)
      throw invalidField(context, `conversation.${key}`, `is session ${number} again, as ${previous.key} is`);
  });
  return sessions;
}

function readTurn(
  value: unknown,
  field: string,
  context: InstanceContext,
  speakers: Speakers,
  id: string,
): EvalMessage {
  const turn = expectRecord(value, context, field);
  const speaker = expectString(turn['speaker'], context, `${field}.speaker`);
  if (speaker !== speakers.user && speaker !== speakers.assistant) {
    throw invalidField(
      context,
      `${field}.speaker`,
      `is ${JSON.stringify(speaker)}, neither speaker_a (${JSON.stringify(speakers.user)}) nor speaker_b ` +
        `(${JSON.stringify(speakers.assistant)})`,
    );
  }
  const text = expectString(turn['text'], context, `${field}.text`);
  const caption = turn['blip_caption'];
  if (caption !== undefined && caption !== null) expectString(caption, context, `${field}.blip_caption`);
  const image =
    typeof caption === 'string' && caption.trim() !== '' ? `\n[${speaker} shared an image: ${caption.trim()}]` : '';
  return { id, role: speaker === speakers.user ? 'user' : 'assistant', content: `${speaker}: ${text}${image}` };
}

function readQuestion(
  value: unknown,
  position: number,
  context: InstanceContext,
  lastDated: EvalSession | null,
): EvalQuestion {
  const field = `qa[${position}]`;
  const item = expectRecord(value, context, field);
  const category = item['category'];
  if (
    typeof category !== 'number' ||
    !Number.isInteger(category) ||
    category < 1 ||
    category > LOCOMO_ADVERSARIAL_CATEGORY
  ) {
    throw invalidField(
      context,
      `${field}.category`,
      `must be an integer from 1 to ${LOCOMO_ADVERSARIAL_CATEGORY}, got ${JSON.stringify(category) ?? 'nothing'}`,
    );
  }
  const adversarial = category === LOCOMO_ADVERSARIAL_CATEGORY;
  // Adversarial items often have no `answer`: the right response is that it was never said.
  const answer =
    adversarial && (item['answer'] === undefined || item['answer'] === null)
      ? ''
      : expectAnswer(item['answer'], context, `${field}.answer`, adversarial);
  const adversarialAnswer = item['adversarial_answer'];
  const answerSessionIds = evidenceSessions(item['evidence']);
  return {
    questionId: `${context.id}:q${position + 1}`,
    questionType: `category-${category}`,
    question: expectText(item['question'], context, `${field}.question`),
    answer,
    // LoCoMo questions carry no date: they are asked after the last session.
    questionDate: lastDated?.date ?? null,
    questionTimestamp: lastDated?.timestamp ?? null,
    abstention: adversarial,
    category,
    ...(answerSessionIds.length === 0 ? {} : { answerSessionIds }),
    ...(adversarialAnswer === undefined || adversarialAnswer === null
      ? {}
      : { adversarialAnswer: expectAnswer(adversarialAnswer, context, `${field}.adversarial_answer`, true) }),
  };
}

/** `session_N` ids named by the evidence list (`["D1:3", "D4:10"]`), each once, in order. */
function evidenceSessions(evidence: unknown): string[] {
  if (!Array.isArray(evidence)) return [];
  const ids = new Set<string>();
  for (const entry of evidence) {
    if (typeof entry !== 'string') continue;
    for (const match of entry.matchAll(EVIDENCE_SESSION)) ids.add(`session_${Number(match[1])}`);
  }
  return [...ids];
}
