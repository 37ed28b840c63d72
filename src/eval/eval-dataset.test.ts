import { describe, expect, it } from 'vitest';
import { HarnessMemoryError } from '../core/errors.js';
import { parseDatasetDate } from './_session-dates.js';
import type { EvalDataset } from './eval-dataset.js';
import { parseEvalDataset, questionTypesOf, selectQuestions } from './eval-dataset.js';
import { seededRandom } from '../../test/support/seeded-random.js';

type Json = Record<string, unknown>;

function longMemEvalInstance(overrides: Json = {}): Json {
  return {
    question_id: 'q1',
    question_type: 'single-session-user',
    question: 'What is the name of my cat?',
    answer: 'Miso',
    question_date: '2023/06/01 (Thu) 09:00',
    haystack_session_ids: ['s-a', 's-b', 's-c'],
    haystack_dates: ['2023/05/20 (Sat) 02:21', '2023/05/03 (Wed) 10:00', '2023/05/20 (Sat) 02:21'],
    haystack_sessions: [
      [
        { role: 'user', content: 'I adopted a cat called Miso.', has_answer: true },
        { role: 'assistant', content: 'Congratulations!' },
      ],
      [{ role: 'user', content: 'Any tips for sourdough?' }],
      [{ role: 'user', content: 'What is the weather like in Lisbon?' }],
    ],
    answer_session_ids: ['s-a'],
    ...overrides,
  };
}

function locomoSample(overrides: Json = {}, conversationOverrides: Json = {}): Json {
  return {
    sample_id: 'conv-1',
    conversation: {
      speaker_a: 'Ana',
      speaker_b: 'Ben',
      session_2_date_time: '4:05 pm on 20 June, 2023',
      session_2: [{ speaker: 'Ben', dia_id: 'D2:1', text: 'I started pottery classes.' }],
      session_10_date_time: '9:00 am on 2 July, 2023',
      session_10: [
        {
          speaker: 'Ana',
          dia_id: 'D10:1',
          text: 'Look at my garden!',
          img_url: ['https://example.invalid/x.jpg'],
          blip_caption: 'a photo of tomatoes',
        },
      ],
      session_1_date_time: '1:56 pm on 8 May, 2023',
      session_1: [
        { speaker: 'Ana', dia_id: 'D1:1', text: 'I moved to Porto last week.' },
        { speaker: 'Ben', dia_id: 'D1:2', text: 'How exciting!' },
      ],
      ...conversationOverrides,
    },
    qa: [
      { question: 'Where did Ana move?', answer: 'Porto', evidence: ['D1:1'], category: 4 },
      { question: 'When did Ben start pottery?', answer: 2023, evidence: ['D2:1', 'D2:1; D10:1'], category: 2 },
      {
        question: 'What did Ben say about his dog?',
        evidence: [],
        category: 5,
        adversarial_answer: 'It is called Rex',
      },
    ],
    ...overrides,
  };
}

function datasetError(json: unknown): HarnessMemoryError {
  try {
    parseEvalDataset(json);
  } catch (error) {
    if (HarnessMemoryError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected parseEvalDataset to throw');
}

describe('eval dataset: LongMemEval', () => {
  it('reads an instance into one conversation holding its question', () => {
    const dataset = parseEvalDataset([longMemEvalInstance({ answer: 42, question_id: 'q1_abs' })]);
    expect(dataset.format).toBe('longmemeval');
    expect(dataset.problems).toEqual([]);
    const [conversation] = dataset.conversations;
    expect(conversation?.id).toBe('q1_abs');
    expect(conversation?.questions).toEqual([
      {
        questionId: 'q1_abs',
        questionType: 'single-session-user',
        question: 'What is the name of my cat?',
        answer: '42',
        questionDate: '2023/06/01 (Thu) 09:00',
        questionTimestamp: Date.UTC(2023, 5, 1, 9, 0),
        abstention: true,
        answerSessionIds: ['s-a'],
      },
    ]);
  });

  it('orders sessions by date, keeping the file order of equal dates', () => {
    const [conversation] = parseEvalDataset([longMemEvalInstance()]).conversations;
    expect(conversation?.sessions.map((session) => session.id)).toEqual(['s-b', 's-a', 's-c']);
    expect(conversation?.sessions[1]).toEqual({
      id: 's-a',
      date: '2023/05/20 (Sat) 02:21',
      timestamp: Date.UTC(2023, 4, 20, 2, 21),
      messages: [
        { id: 's1m1', role: 'user', content: 'I adopted a cat called Miso.' },
        { id: 's1m2', role: 'assistant', content: 'Congratulations!' },
      ],
    });
  });

  it('keeps an undated session in its place and reports the field', () => {
    const instance = longMemEvalInstance({
      haystack_dates: ['2023/05/20 (Sat) 02:21', 'sometime in May', '2023/05/01 (Mon) 08:00'],
    });
    const dataset = parseEvalDataset([instance]);
    expect(dataset.conversations[0]?.sessions.map((session) => session.id)).toEqual(['s-c', 's-b', 's-a']);
    expect(dataset.problems).toEqual([
      {
        index: 0,
        id: 'q1',
        field: 'haystack_dates[1]',
        message: expect.stringContaining(
          'LongMemEval instance 0 (question_id "q1"): haystack_dates[1] "sometime in May" is not a date',
        ) as unknown,
      },
    ]);
  });

  it(
    'reports a missing question date and missing session dates once per instance when other instances have ' + 'dates',
    () => {
      const undated = longMemEvalInstance({ question_id: 'q2', question_date: undefined, haystack_dates: undefined });
      const dataset = parseEvalDataset([longMemEvalInstance(), undated]);
      expect(dataset.problems.map((problem) => [problem.index, problem.field])).toEqual([
        [1, 'haystack_dates'],
        [1, 'question_date'],
      ]);
      expect(dataset.conversations[1]?.sessions.map((session) => session.id)).toEqual(['s-a', 's-b', 's-c']);
    },
  );

  it('reports nothing and keeps the file order when the dataset has no dates at all', () => {
    const dataset = parseEvalDataset([longMemEvalInstance({ question_date: undefined, haystack_dates: undefined })]);
    expect(dataset.problems).toEqual([]);
    expect(dataset.conversations[0]?.sessions.map((session) => [session.id, session.timestamp])).toEqual([
      ['s-a', null],
      ['s-b', null],
      ['s-c', null],
    ]);
    expect(dataset.conversations[0]?.questions[0]?.questionDate).toBeNull();
  });

  it('accepts a repeated session id, keeping message ids distinct', () => {
    const [conversation] = parseEvalDataset([
      longMemEvalInstance({ haystack_session_ids: ['x', 'y', 'x'] }),
    ]).conversations;
    expect(conversation?.sessions.map((session) => session.id)).toEqual(['y', 'x', 'x']);
    const messageIds = conversation?.sessions.flatMap((session) => session.messages.map((message) => message.id)) ?? [];
    expect(new Set(messageIds).size).toBe(messageIds.length);
  });

  it('names sessions session_<n> when the file gives no session ids', () => {
    const dataset = parseEvalDataset([longMemEvalInstance({ haystack_session_ids: undefined })]);
    expect(dataset.conversations[0]?.sessions.map((session) => session.id)).toEqual([
      'session_2',
      'session_1',
      'session_3',
    ]);
  });
});

describe('eval dataset: the digest of a conversation', () => {
  it('differs for the same question over another haystack, and not for the same file read again', () => {
    const instance = longMemEvalInstance();
    const digestOf = (json: Json) => parseEvalDataset([json]).conversations[0]?.sessionsDigest;
    expect(digestOf(instance)).toMatch(/^[0-9a-f]{16}$/);
    expect(digestOf(longMemEvalInstance())).toBe(digestOf(instance));
    const sessions = instance['haystack_sessions'] as Array<Array<{ role: string; content: string }>>;
    const otherTurns = sessions.map((turns) => turns.map((turn) => ({ ...turn, content: `${turn.content}!` })));
    expect(digestOf({ ...instance, haystack_sessions: otherTurns })).not.toBe(digestOf(instance));
    const dates = instance['haystack_dates'] as string[];
    expect(digestOf({ ...instance, haystack_dates: ['2023/05/21 (Sun) 02:21', ...dates.slice(1)] })).not.toBe(
      digestOf(instance),
    );
    const ids = instance['haystack_session_ids'] as string[];
    expect(digestOf({ ...instance, haystack_session_ids: ids.map((id) => `${id}-x`) })).not.toBe(digestOf(instance));
  });

  it('is one per LoCoMo sample, shared by its questions', () => {
    expect(parseEvalDataset([locomoSample()]).conversations[0]?.sessionsDigest).toMatch(/^[0-9a-f]{16}$/);
  });
});

describe('eval dataset: LoCoMo', () => {
  it('reads a sample into one conversation with all its questions', () => {
    const dataset = parseEvalDataset([locomoSample()]);
    expect(dataset.format).toBe('locomo');
    expect(dataset.problems).toEqual([]);
    const [conversation] = dataset.conversations;
    expect(conversation?.id).toBe('conv-1');
    expect(
      conversation?.questions.map((question) => [
        question.questionId,
        question.questionType,
        question.answer,
        question.abstention,
        question.category,
      ]),
    ).toEqual([
      ['conv-1:q1', 'category-4', 'Porto', false, 4],
      ['conv-1:q2', 'category-2', '2023', false, 2],
      ['conv-1:q3', 'category-5', '', true, 5],
    ]);
    expect(conversation?.questions[1]?.answerSessionIds).toEqual(['session_2', 'session_10']);
    expect(conversation?.questions[2]?.adversarialAnswer).toBe('It is called Rex');
    expect(conversation?.questions[2]?.answerSessionIds).toBeUndefined();
  });

  it('orders sessions by date and maps speakers to roles, keeping names and image captions in the text', () => {
    const [conversation] = parseEvalDataset([locomoSample()]).conversations;
    expect(conversation?.sessions.map((session) => session.id)).toEqual(['session_1', 'session_2', 'session_10']);
    expect(conversation?.sessions[0]?.messages).toEqual([
      { id: 's1m1', role: 'user', content: 'Ana: I moved to Porto last week.' },
      { id: 's1m2', role: 'assistant', content: 'Ben: How exciting!' },
    ]);
    expect(conversation?.sessions[2]?.messages[0]?.content).toBe(
      'Ana: Look at my garden!\n[Ana shared an image: a photo of tomatoes]',
    );
    expect(conversation?.sessions[2]?.timestamp).toBe(Date.UTC(2023, 6, 2, 9, 0));
  });

  it('asks every question at the date of the last session', () => {
    const [conversation] = parseEvalDataset([locomoSample()]).conversations;
    expect(conversation?.questions.map((question) => question.questionDate)).toEqual([
      '9:00 am on 2 July, 2023',
      '9:00 am on 2 July, 2023',
      '9:00 am on 2 July, 2023',
    ]);
  });

  it('reports an unreadable session date, naming the sample and the field', () => {
    const dataset = parseEvalDataset([locomoSample({}, { session_2_date_time: 'the day after' })]);
    expect(dataset.problems.map((problem) => problem.message)).toEqual([
      'LoCoMo sample 0 (sample_id "conv-1"): conversation.session_2_date_time "the day after" is not a date ' +
        'like "2023/05/20 (Sat) 02:21", "1:56 pm on 8 May, 2023" or "2023-05-20T02:21"; the session keeps ' +
        'its place in the order.',
    ]);
    expect(dataset.conversations[0]?.sessions.map((session) => session.id)).toEqual([
      'session_1',
      'session_2',
      'session_10',
    ]);
  });
});

describe('eval dataset: malformed input', () => {
  const longMemEvalCases: Array<[string, Json, string]> = [
    [
      'a non-string message',
      {
        haystack_sessions: [
          [{ role: 'user', content: 'hi' }],
          [
            { role: 'user', content: 'a' },
            { role: 'user', content: 'b' },
            { role: 'user', content: 3 },
          ],
        ],
        haystack_dates: undefined,
        haystack_session_ids: undefined,
      },
      'haystack_sessions[1][2].content must be a string, got number',
    ],
    [
      'an unknown role',
      { haystack_sessions: [[{ role: 'system', content: 'x' }], [], []] },
      'haystack_sessions[0][0].role must be "user" or "assistant", got "system"',
    ],
    [
      'a session that is not a list',
      { haystack_sessions: [[], {}, []] },
      'haystack_sessions[1] must be an array, got object',
    ],
    [
      'a turn that is not an object',
      { haystack_sessions: [[], [null], []] },
      'haystack_sessions[1][0] must be an object, got null',
    ],
    ['no sessions', { haystack_sessions: undefined }, 'haystack_sessions must be an array, got undefined'],
    ['a missing question', { question: undefined }, 'question must be a string, got undefined'],
    ['an empty question id', { question_id: ' ' }, 'question_id must not be empty'],
    ['an answer that is an object', { answer: { text: 'x' } }, 'answer must be a string or a number, got object'],
    ['a blank answer to a question that is not an abstention', { answer: '  ' }, 'answer must not be empty'],
    [
      'a numeric date',
      { haystack_dates: ['2023/05/20 (Sat) 02:21', 5, '2023/05/20 (Sat) 02:21'] },
      'haystack_dates[1] must be a string, got number',
    ],
    [
      'too few dates',
      { haystack_dates: ['2023/05/20 (Sat) 02:21'] },
      'haystack_dates has 1 entries but haystack_sessions has 3',
    ],
    [
      'an unknown question type',
      { question_type: 'trivia' },
      'question_type is "trivia"; expected one of single-session-user, single-session-assistant, ' +
        'single-session-preference, knowledge-update, temporal-reasoning, multi-session',
    ],
    [
      'answer session ids that are not strings',
      { answer_session_ids: [1] },
      'answer_session_ids[0] must be a string, got number',
    ],
  ];
  it.each(longMemEvalCases)('names the instance and the field for %s', (_name, overrides, expected) => {
    const error = datasetError([
      longMemEvalInstance({ question_id: 'first' }),
      longMemEvalInstance({ question_id: 'q9', ...overrides }),
    ]);
    expect(error.code).toBe('EVAL_DATASET_INVALID');
    const id = overrides['question_id'] === ' ' ? 'no question_id' : 'question_id "q9"';
    expect(error.detail).toContain(`LongMemEval instance 1 (${id}): ${expected}`);
    expect(error.data).toMatchObject({ format: 'longmemeval', index: 1 });
  });

  const locomoCases: Array<[string, Json, Json, string]> = [
    [
      'a text that is not a string',
      {},
      { session_2: [{ speaker: 'Ben', text: null }] },
      'conversation.session_2[0].text must be a string, got null',
    ],
    [
      'an unknown speaker',
      {},
      { session_2: [{ speaker: 'Cy', text: 'hi' }] },
      'conversation.session_2[0].speaker is "Cy", neither speaker_a ("Ana") nor speaker_b ("Ben")',
    ],
    [
      'a caption that is not a string',
      {},
      { session_2: [{ speaker: 'Ben', text: 'hi', blip_caption: 7 }] },
      'conversation.session_2[0].blip_caption must be a string, got number',
    ],
    ['a session that is not a list', {}, { session_2: 'hello' }, 'conversation.session_2 must be an array, got string'],
    [
      'a date that is not a string',
      {},
      { session_2_date_time: 12 },
      'conversation.session_2_date_time must be a string, got number',
    ],
    ['a missing speaker name', {}, { speaker_b: undefined }, 'conversation.speaker_b must be a string, got undefined'],
    [
      'a session numbered with a leading zero that is not a list',
      {},
      { session_02: 'x' },
      'conversation.session_02 must be an array, got string',
    ],
    [
      'a session numbered as another is',
      {},
      { session_01: [] },
      'conversation.session_01 is session 1 again, as session_1 is',
    ],
    [
      'a conversation without sessions',
      { conversation: { speaker_a: 'Ana', speaker_b: 'Ben' } },
      {},
      'conversation has no session_N lists',
    ],
    [
      'a category out of range',
      { qa: [{ question: 'x', answer: 'y', category: 6 }] },
      {},
      'qa[0].category must be an integer from 1 to 5, got 6',
    ],
    [
      'a missing answer outside category 5',
      { qa: [{ question: 'x', category: 1 }] },
      {},
      'qa[0].answer must be a string or a number, got undefined',
    ],
    [
      'a blank answer outside category 5',
      { qa: [{ question: 'x', answer: '', category: 2 }] },
      {},
      'qa[0].answer must not be empty',
    ],
    ['qa that is not a list', { qa: {} }, {}, 'qa must be an array, got object'],
  ];
  it.each(locomoCases)('names the sample and the field for %s', (_name, overrides, conversationOverrides, expected) => {
    const error = datasetError([locomoSample(overrides, conversationOverrides)]);
    expect(error.code).toBe('EVAL_DATASET_INVALID');
    expect(error.detail).toContain(`LoCoMo sample 0 (sample_id "conv-1"): ${expected}`);
  });

  it.each([
    ['an object', { data: [] }, 'found a JSON object'],
    ['an empty array', [], 'found an empty array'],
    ['an array of strings', ['a'], 'found an array whose first element is string'],
    ['unrelated objects', [{ title: 'x', body: 'y' }], 'found an array whose first element has the keys title, body'],
  ])('refuses %s as an unknown format, listing the two accepted formats', (_name, json, found) => {
    const error = datasetError(json);
    expect(error.code).toBe('EVAL_DATASET_INVALID');
    expect(error.detail).toContain(found);
    expect(error.detail).toContain('Accepted: LongMemEval (a JSON array of instances');
    expect(error.detail).toContain('or LoCoMo (a JSON array of samples');
  });

  it('refuses a repeated question_id or sample_id', () => {
    expect(datasetError([longMemEvalInstance(), longMemEvalInstance()]).detail).toContain(
      'LongMemEval instance 1 (question_id "q1"): question_id repeats the question_id of instance 0',
    );
    expect(datasetError([locomoSample(), locomoSample()]).detail).toContain(
      'LoCoMo sample 1 (sample_id "conv-1"): sample_id repeats the sample_id of instance 0',
    );
  });

  it('throws only EVAL_DATASET_INVALID, never a TypeError, whatever field is broken', () => {
    const random = seededRandom(18);
    const replacements: unknown[] = [null, 7, 'text', [], {}, true, [null], [{}], { role: 'user' }];
    for (const [index, template] of [longMemEvalInstance(), locomoSample()].entries()) {
      for (let round = 0; round < 400; round++) {
        const broken = structuredClone(template);
        const paths = leafPaths(broken);
        const path = paths[Math.floor(random() * paths.length)] ?? [];
        setAt(broken, path, replacements[Math.floor(random() * replacements.length)]);
        try {
          parseEvalDataset([broken]);
        } catch (error) {
          expect(HarnessMemoryError.isInstance(error), `${index}:${path.join('.')}: ${String(error)}`).toBe(true);
          expect((error as HarnessMemoryError).code).toBe('EVAL_DATASET_INVALID');
        }
      }
    }
  });
});

describe('eval dataset: dates', () => {
  it.each([
    ['2023/05/20 (Sat) 02:21', Date.UTC(2023, 4, 20, 2, 21)],
    ['2023/5/2 (Tue) 23:59', Date.UTC(2023, 4, 2, 23, 59)],
    ['2023/05/20', Date.UTC(2023, 4, 20)],
    ['1:56 pm on 8 May, 2023', Date.UTC(2023, 4, 8, 13, 56)],
    ['12:05 am on 1 January, 2024', Date.UTC(2024, 0, 1, 0, 5)],
    ['12:30 pm on 15 Sept, 2023', Date.UTC(2023, 8, 15, 12, 30)],
    ['2023-05-20', Date.UTC(2023, 4, 20)],
    ['2023-05-20T14:30', Date.UTC(2023, 4, 20, 14, 30)],
    ['2023-05-20T14:30:00+02:00', Date.UTC(2023, 4, 20, 12, 30)],
  ])('reads %s', (text, expected) => {
    expect(parseDatasetDate(text)).toBe(expected);
  });

  it.each([
    '2023/02/30 (Thu) 10:00',
    '2023/05/20 (Sat) 25:00',
    '13:00 pm on 8 May, 2023',
    '1:56 pm on 8 Mayday, 2023',
    'yesterday',
    '',
    '2023-13-01',
  ])('refuses %j', (text) => {
    expect(parseDatasetDate(text)).toBeNull();
  });
});

describe('eval dataset: selecting questions', () => {
  function twoFormats(): { longMemEval: EvalDataset; locomo: EvalDataset } {
    return {
      longMemEval: parseEvalDataset([
        longMemEvalInstance({ question_id: 'a' }),
        longMemEvalInstance({ question_id: 'b', question_type: 'temporal-reasoning' }),
        longMemEvalInstance({ question_id: 'c', question_type: 'temporal-reasoning', haystack_dates: ['x', 'y', 'z'] }),
      ]),
      locomo: parseEvalDataset([locomoSample(), locomoSample({ sample_id: 'conv-2' })]),
    };
  }

  it('keeps every question without options', () => {
    const { longMemEval } = twoFormats();
    expect(selectQuestions(longMemEval, {})).toEqual(longMemEval);
  });

  it('keeps the first N questions in file order', () => {
    const { longMemEval, locomo } = twoFormats();
    expect(selectQuestions(longMemEval, { limit: 2 }).conversations.map((conversation) => conversation.id)).toEqual([
      'a',
      'b',
    ]);
    const chosen = selectQuestions(locomo, { limit: 4 });
    expect(
      chosen.conversations.map((conversation) => conversation.questions.map((question) => question.questionId)),
    ).toEqual([['conv-1:q1', 'conv-1:q2', 'conv-1:q3'], ['conv-2:q1']]);
  });

  it('filters by type before the limit and keeps the problems of the kept conversations only', () => {
    const { longMemEval, locomo } = twoFormats();
    const temporal = selectQuestions(longMemEval, { types: ['temporal-reasoning'], limit: 1 });
    expect(temporal.conversations.map((conversation) => conversation.id)).toEqual(['b']);
    expect(temporal.problems).toEqual([]);
    expect(
      selectQuestions(longMemEval, { types: [' temporal-reasoning ', ''] }).problems.map((problem) => problem.id),
    ).toEqual(['c', 'c', 'c']);
    const adversarial = selectQuestions(locomo, { types: ['category-5'] });
    expect(
      adversarial.conversations.map((conversation) => [
        conversation.id,
        conversation.questions.length,
        conversation.sessions.length,
      ]),
    ).toEqual([
      ['conv-1', 1, 3],
      ['conv-2', 1, 3],
    ]);
  });

  it('lists the question types in order of first appearance', () => {
    const { longMemEval, locomo } = twoFormats();
    expect(questionTypesOf(longMemEval)).toEqual(['single-session-user', 'temporal-reasoning']);
    expect(questionTypesOf(locomo)).toEqual(['category-4', 'category-2', 'category-5']);
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses the limit %s', (limit) => {
    const { longMemEval } = twoFormats();
    expect(() => selectQuestions(longMemEval, { limit })).toThrow(
      expect.objectContaining({ code: 'REQUEST_INVALID', data: { field: 'limit' } }) as Error,
    );
  });

  it('refuses a type absent from the dataset, listing the valid ones', () => {
    const { longMemEval } = twoFormats();
    expect(() => selectQuestions(longMemEval, { types: ['temporal-reasoning', 'multi-session'] })).toThrow(
      '--types: "multi-session" is not a question type of this dataset; valid types: single-session-user, ' +
        'temporal-reasoning.',
    );
    expect(() => selectQuestions(longMemEval, { types: [' '] })).toThrow(
      '--types names no question type; valid types: single-session-user, temporal-reasoning.',
    );
  });
});

function leafPaths(value: unknown, prefix: Array<string | number> = []): Array<Array<string | number>> {
  const paths: Array<Array<string | number>> = [prefix];
  if (Array.isArray(value)) value.forEach((element, index) => paths.push(...leafPaths(element, [...prefix, index])));
  else if (typeof value === 'object' && value !== null)
    for (const [key, element] of Object.entries(value)) paths.push(...leafPaths(element, [...prefix, key]));
  return paths.filter((path) => path.length > 0);
}

function setAt(root: unknown, path: ReadonlyArray<string | number>, replacement: unknown): void {
  let node = root as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  const last = path[path.length - 1];
  if (last !== undefined) node[last] = replacement;
}
