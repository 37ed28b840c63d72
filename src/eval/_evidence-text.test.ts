import { describe, expect, it } from 'vitest';
import { buildObservationSnippet } from '../core/observation-snippet.js';
import { RUNE_TOKEN_ESTIMATOR } from '../core/token-estimator.js';
import { evidenceText } from './_evidence-text.js';
import { datedContent } from './_conversation-memory.js';
import { formatConversationHistory } from './eval-answer-prompt.js';
import { evidenceHit } from './eval-normalize.js';

const question = (answer: string) => ({ answer, abstention: false, questionType: 'single-session-user' });

describe('evidence recall: what counts as evidence', () => {
  const snippet = buildObservationSnippet({
    observations: [
      {
        seq: 15,
        content: 'The user bought apples.',
        importance: 0.5,
        tokenCount: 6,
        createdAt: '2023-05-15T10:20:00.000Z',
        operationId: 'op',
        source: 'user',
        sourceMessageSeqs: [1],
        sourceStartSeq: 1,
        sourceEndSeq: 1,
      },
    ],
    links: { supersessions: [], contradictions: [] },
    reflection: null,
    maxTokens: 900,
    estimator: RUNE_TOKEN_ESTIMATOR,
  });
  const history = datedContent({ date: '2023/05/15 (Mon) 10:20' }, { content: 'I bought some apples today.' });
  const messages = [
    { role: 'system' as const, content: snippet },
    { role: 'user' as const, content: history },
  ];

  it('is not what the harness wrote around memory: dates, seq labels, the first line and tags', () => {
    for (const gold of ['15', 'Data', 'notes', 'observational memory', '2023'])
      expect(evidenceHit(question(gold), evidenceText(messages)), gold).toBe(false);
  });

  it('is what memory and the conversation hold', () => {
    for (const gold of ['apples', 'bought some apples'])
      expect(evidenceHit(question(gold), evidenceText(messages)), gold).toBe(true);
  });
});

describe('evidence recall: the full-context conversation', () => {
  const session = (id: string, user: string, assistant: string) => ({
    id,
    date: `2023/05/0${id} (Mon) 10:00`,
    timestamp: null,
    messages: [
      { id: `s${id}m1`, role: 'user' as const, content: user },
      { id: `s${id}m2`, role: 'assistant' as const, content: assistant },
    ],
  });
  const messages = [
    {
      role: 'system' as const,
      content: formatConversationHistory([
        session('1', 'Is it going to rain this weekend?', 'Check the local forecast.'),
        session('2', 'Recommend a good novel.', 'Try Middlemarch.'),
        session('3', 'How do I boil an egg?', 'Simmer it for nine minutes.'),
      ]),
    },
  ];

  it('is not the session headers, role labels or fence the harness writes around the messages', () => {
    for (const gold of ['3', 'Session 3', 'user', 'assistant', 'conversation history', 'Mon'])
      expect(evidenceHit(question(gold), evidenceText(messages)), gold).toBe(false);
  });

  it('is what the messages say', () => {
    for (const gold of ['Middlemarch', 'nine minutes', 'Is it going to rain'])
      expect(evidenceHit(question(gold), evidenceText(messages)), gold).toBe(true);
  });
});
