import { describe, expect, it } from 'vitest';
import { containsAnswer, evidenceHit, normalizeAnswer } from './eval-normalize.js';

describe('eval normalize: answers', () => {
  it.each([
    ['The Cat', 'cat'],
    ['  An   apple,  a pear ', 'apple pear'],
    ['the theory', 'theory'],
    ['Café Crème', 'cafe creme'],
    ['ＦＵＬＬ　ＷＩＤＴＨ １２', 'full width 12'],
    ['ﬁsh', 'fish'],
    ["the user's dog", 'users dog'],
    ['It’s Rex’s bowl', 'its rexs bowl'],
    ['$400,000', '400000'],
    ['1,234,567 steps', '1234567 steps'],
    ['3.5 hours.', '3.5 hours'],
    ['v2.0.1', 'v2.0.1'],
    ['end. Next', 'end next'],
    ['twenty-five', '25'],
    ['Twenty five dollars', '25 dollars'],
    ['forty', '40'],
    ['three', '3'],
    ['Thirteen cats and zero dogs', '13 cats and 0 dogs'],
    ['ninety-nine', '99'],
    ['one hundred', '1 hundred'],
    ['"Yes!" — she said', 'yes she said'],
    ['', ''],
    ['...', ''],
    ['東京タワー', '東京タワー'],
    ['ダイエット', 'ダイエット'],
    ['Ελλάδα', 'ελλαδα'],
  ])('normalises %j to %j', (text, expected) => {
    expect(normalizeAnswer(text)).toBe(expected);
  });
});

describe('eval normalize: containsAnswer', () => {
  it.each([
    ['User adopted a cat named Miso in May.', 'Miso', true],
    ['User adopted a cat named Miso in May.', 'miso.', true],
    ['They drove two hours to the coast.', '2 hours', true],
    ['They drove 2 hours to the coast.', 'two hours', true],
    ['Budget is $400,000 for the house.', '400000', true],
    ['The concatenate function', 'cat', false],
    ['Visited Porto, then Lisbon, later Faro', 'Porto, Lisbon and Faro', true],
    ['Visited Porto and Lisbon', 'Porto, Lisbon and Faro', false],
    ['Tofu and Miso are the cats', 'Miso & Tofu', true],
    ['Prefers the café on Rua Augusta', 'Cafe on rua augusta', true],
    ['nothing here', '', false],
    ['nothing here', '!!!', false],
    ['Their salary is 40,000', '400000', false],
  ])('finds %j in %j: %s', (text, answer, expected) => {
    expect(containsAnswer(text, answer)).toBe(expected);
  });
});

describe('eval normalize: evidenceHit', () => {
  const memory =
    '<observational-memory>\nObservations:\n- [1] User switched gyms to Iron Temple in March.\n</observational-memory>';

  it('counts a factual question as a hit or a miss', () => {
    expect(evidenceHit({ answer: 'Iron Temple', abstention: false, questionType: 'knowledge-update' }, memory)).toBe(
      true,
    );
    expect(evidenceHit({ answer: 'Gold Gym', abstention: false, questionType: 'knowledge-update' }, memory)).toBe(
      false,
    );
  });

  it('leaves out abstention and preference questions and empty answers', () => {
    expect(
      evidenceHit({ answer: 'Iron Temple', abstention: true, questionType: 'single-session-user' }, memory),
    ).toBeNull();
    expect(
      evidenceHit(
        { answer: 'The user would prefer Iron Temple', abstention: false, questionType: 'single-session-preference' },
        memory,
      ),
    ).toBeNull();
    expect(evidenceHit({ answer: ' . ', abstention: false, questionType: 'category-1' }, memory)).toBeNull();
  });
});
