/**
 * The datasets we ship and test with: `eval/longmemeval-sample.json` (run by
 * `npm run eval:sample` and CI) and the LoCoMo-format fixture. Both are written by us.
 */
import { readFileSync, statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { EvalDataset } from '../src/eval/eval-dataset.js';
import { LONGMEMEVAL_QUESTION_TYPES, parseEvalDataset, questionTypesOf } from '../src/eval/eval-dataset.js';
import { containsAnswer } from '../src/eval/eval-normalize.js';

const LONGMEMEVAL_SAMPLE = new URL('../eval/longmemeval-sample.json', import.meta.url);
const LOCOMO_FIXTURE = new URL('./fixtures/locomo-sample.json', import.meta.url);
const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

function load(url: URL): EvalDataset {
  return parseEvalDataset(JSON.parse(readFileSync(url, 'utf8')));
}

describe('eval samples: the shipped LongMemEval-format sample', () => {
  const dataset = load(LONGMEMEVAL_SAMPLE);
  const questions = dataset.conversations.flatMap((conversation) => conversation.questions);

  it('is small enough for CI and reads without a problem', () => {
    expect(statSync(LONGMEMEVAL_SAMPLE).size).toBeLessThan(200 * 1024);
    expect(dataset.format).toBe('longmemeval');
    expect(dataset.problems).toEqual([]);
  });

  it('covers every question type and abstention with at least 30 instances', () => {
    expect(dataset.conversations.length).toBeGreaterThanOrEqual(30);
    expect(questionTypesOf(dataset).sort()).toEqual([...LONGMEMEVAL_QUESTION_TYPES].sort());
    for (const type of LONGMEMEVAL_QUESTION_TYPES) {
      expect(
        questions.filter((question) => question.questionType === type && !question.abstention).length,
        type,
      ).toBeGreaterThanOrEqual(4);
    }
    const abstentionTypes = new Set(
      questions.filter((question) => question.abstention).map((question) => question.questionType),
    );
    expect(abstentionTypes.size).toBeGreaterThanOrEqual(5);
  });

  it('gives every instance small-talk sessions besides the ones holding the answer', () => {
    for (const conversation of dataset.conversations) {
      const question = conversation.questions[0];
      const answerSessions = new Set(question?.answerSessionIds ?? []);
      const sessionIds = conversation.sessions.map((session) => session.id);
      for (const id of answerSessions) expect(sessionIds, conversation.id).toContain(id);
      expect(conversation.sessions.length, conversation.id).toBeGreaterThanOrEqual(3);
      expect(sessionIds.filter((id) => !answerSessions.has(id)).length, conversation.id).toBeGreaterThanOrEqual(1);
      expect(question?.abstention ? answerSessions.size === 0 : answerSessions.size > 0, conversation.id).toBe(true);
    }
  });

  it('writes dates whose weekday is right, with every session before its question', () => {
    for (const conversation of dataset.conversations) {
      const question = conversation.questions[0];
      for (const dated of [
        ...conversation.sessions,
        { date: question?.questionDate ?? null, timestamp: question?.questionTimestamp ?? null },
      ]) {
        const weekday = /\((\w{3})\)/.exec(dated.date ?? '')?.[1];
        expect(weekday, `${conversation.id}: ${dated.date}`).toBe(
          WEEKDAYS[new Date(dated.timestamp ?? Number.NaN).getUTCDay()],
        );
      }
      const lastSession = Math.max(...conversation.sessions.map((session) => session.timestamp ?? 0));
      expect(question?.questionTimestamp ?? 0, conversation.id).toBeGreaterThan(lastSession);
    }
  });

  it('states the answer of every fact question in its answer sessions (the latest one for an update)', () => {
    const factTypes = ['single-session-user', 'single-session-assistant', 'knowledge-update'];
    for (const conversation of dataset.conversations) {
      const question = conversation.questions[0];
      if (question === undefined || question.abstention || !factTypes.includes(question.questionType)) continue;
      const answerSessions = conversation.sessions.filter((session) => question.answerSessionIds?.includes(session.id));
      const latest = answerSessions[answerSessions.length - 1];
      const text = latest?.messages.map((message) => message.content).join('\n') ?? '';
      expect(containsAnswer(text, question.answer), `${conversation.id}: ${question.answer}`).toBe(true);
    }
  });
});

describe('eval samples: the LoCoMo-format fixture', () => {
  const dataset = load(LOCOMO_FIXTURE);

  it('reads without a problem and covers every category', () => {
    expect(dataset.format).toBe('locomo');
    expect(dataset.problems).toEqual([]);
    expect(questionTypesOf(dataset).sort()).toEqual([
      'category-1',
      'category-2',
      'category-3',
      'category-4',
      'category-5',
    ]);
  });

  it('holds an image caption, a numeric answer and an adversarial question without an answer', () => {
    const messages = dataset.conversations.flatMap((conversation) =>
      conversation.sessions.flatMap((session) => session.messages),
    );
    expect(messages.some((message) => message.content.includes('shared an image: '))).toBe(true);
    const questions = dataset.conversations.flatMap((conversation) => conversation.questions);
    expect(questions.some((question) => question.answer === '2')).toBe(true);
    expect(
      questions.some(
        (question) => question.category === 5 && question.answer === '' && question.adversarialAnswer !== undefined,
      ),
    ).toBe(true);
  });
});
