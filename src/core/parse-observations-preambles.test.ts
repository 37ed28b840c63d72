/**
 * Preambles in observer answers: only a line that frames the answer is dropped, never a fact
 * that opens with the same words ("Based on the transcript, …", "The following …", "Sure, …").
 */
import { describe, expect, it } from 'vitest';
import { isNothingToObserve, parseObservations } from './parse-observations.js';

// Lines that only introduce the answer, as hosted and local models write them.
const PREAMBLES = [
  'Here are the observations:',
  'Here are the observations from the new transcript segment:',
  'Here are the durable observations I extracted:',
  'Sure! Here are the observations:',
  'Sure, here are the observations based on the transcript:',
  'Okay, here is my analysis of the conversation.',
  'Certainly! Below are the key facts worth remembering.',
  'Based on the transcript, here are the observations:',
  'Based on the conversation, I have identified the following observations:',
  'Based on the transcript, I identified one durable fact.',
  'After reviewing the transcript, I identified 3 durable facts:',
  'I have extracted the following observations from the segment:',
  'The following observations were extracted from the transcript:',
  "Here's what I found:",
  'Here is the output in the requested format:',
  "Sure, here's the memory update for this segment.",
  'Here are the new observations, scored by importance:',
  'Here is the list of observations, each with an importance score and source seqs:',
  'Here are the observations extracted from messages 1-5:',
  "I've identified these facts:",
  '**Here are the observations:**',
  '> Sure! Here is what I learned about the user:',
  'Observations:',
  'Sure!',
];

describe('parseObservations: a preamble is not stored', () => {
  it.each(PREAMBLES)('drops "%s" above scores, scores after text and a plain list', (preamble) => {
    expect(parseObservations(`${preamble}\n\nIMPORTANCE: 0.9\nUser prefers tabs.`)).toEqual([
      { content: 'User prefers tabs.', importance: 0.9 },
    ]);
    expect(
      parseObservations(`${preamble}\nUser prefers tabs.\nIMPORTANCE: 0.9\nUser uses Go.\nIMPORTANCE: 0.4`),
    ).toEqual([
      { content: 'User prefers tabs.', importance: 0.9 },
      { content: 'User uses Go.', importance: 0.4 },
    ]);
    expect(parseObservations(`${preamble}\n- User prefers tabs.\n- User uses Go.`)).toEqual([
      { content: 'User prefers tabs.', importance: null },
      { content: 'User uses Go.', importance: null },
    ]);
  });
});

describe('parseObservations: a fact that opens like a preamble (review: lost facts)', () => {
  // Once each of these was taken for a preamble, whatever followed its first words, and lost.
  it.each([
    ['Based on the transcript, the user never pushes to main.', 'The user never pushes to main.'],
    [
      'The following directories are generated and must never be edited: dist/ and gen/.',
      'The following directories are generated and must never be edited: dist/ and gen/.',
    ],
    ['Sure, the user builds with pnpm.', 'The user builds with pnpm.'],
    ['Sure! The user builds with pnpm.', 'The user builds with pnpm.'],
    ['Okay. pnpm is the only package manager allowed.', 'pnpm is the only package manager allowed.'],
    ['Certainly the API must stay backward compatible.', 'Certainly the API must stay backward compatible.'],
    ['Here is a hard rule from the user: never force-push.', 'Here is a hard rule from the user: never force-push.'],
    ['Here is what I found: the user builds with pnpm.', 'The user builds with pnpm.'],
    ['I found that the user deploys on Fridays.', 'I found that the user deploys on Fridays.'],
    ['OK so the release branch is frozen until June.', 'OK so the release branch is frozen until June.'],
    ['The following dirs are generated:', 'The following dirs are generated:'],
  ])('keeps "%s"', (answer, content) => {
    expect(parseObservations(answer)).toEqual([{ content, importance: null }]);
    expect(parseObservations(`${answer}\n\nIMPORTANCE: 0.9\nUser prefers tabs.`)).toEqual([
      { content, importance: null },
      { content: 'User prefers tabs.', importance: 0.9 },
    ]);
  });

  it('keeps the rest of an unscored answer under such a fact', () => {
    expect(
      parseObservations('Based on the transcript, the user prefers tabs over spaces.\n\nThe user deploys on Fridays.'),
    ).toEqual([{ content: 'The user prefers tabs over spaces.\n\nThe user deploys on Fridays.', importance: null }]);
    expect(parseObservations('The following directories are generated:\n- dist/\n- gen/')).toEqual([
      { content: 'The following directories are generated:\n- dist/\n- gen/', importance: null },
    ]);
  });

  // Once read as scores before their text: the first fact was lost and the second took its score.
  it.each([
    ['Based on the transcript, the user never pushes to main.', 'The user never pushes to main.'],
    [
      'The following directories are generated and must never be edited: dist/ and gen/.',
      'The following directories are generated and must never be edited: dist/ and gen/.',
    ],
  ])('gives each score to its own text when the first fact opens with "%s"', (first, content) => {
    const answer = `${first}\nIMPORTANCE: 0.9\nSOURCE: 1\n\nThe user deploys on Fridays.\nIMPORTANCE: 0.5\nSOURCE: 2`;
    expect(parseObservations(answer)).toEqual([
      { content, importance: 0.9, sourceSeqs: [1] },
      { content: 'The user deploys on Fridays.', importance: 0.5, sourceSeqs: [2] },
    ]);
  });

  it('reads "nothing" after a preamble as nothing, and a fact after it as a fact', () => {
    for (const answer of [
      'Based on the transcript, there are no new durable facts.',
      'Here are the observations: NONE',
      'Sure! None.',
    ]) {
      expect(isNothingToObserve(answer), answer).toBe(true);
      expect(parseObservations(answer), answer).toEqual([]);
    }
    expect(isNothingToObserve('Here is what I found: none of the tests pass on Windows.')).toBe(false);
    expect(parseObservations('Here is what I found: none of the tests pass on Windows.')).toEqual([
      { content: 'none of the tests pass on Windows.', importance: null },
    ]);
  });
});

describe('parseObservations: preambles in linear time', () => {
  // Each runs in milliseconds; a step that rescanned the line per stripped lead would take seconds.
  it.each([
    ['interjections', `${'Sure, '.repeat(10_000)}the user uses vim.`],
    ['announcements', `${'Based on the transcript, '.repeat(2_500)}the user uses vim.`],
    ['a lead and a long run of white space', `I${' '.repeat(100_000)}have${' '.repeat(100_000)}found vim`],
    ['"about the user" and white space', `Here is what I learned about${' '.repeat(100_000)}the user: vim`],
    ['commas', `Here are the observations${','.repeat(100_000)} vim`],
  ])('reads %s', (_name, answer) => {
    expect(parseObservations(answer)).toHaveLength(1);
  });
});
