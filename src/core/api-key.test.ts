import { describe, expect, it } from 'vitest';
import { apiKeyProblem, MAX_API_KEY_LENGTH } from './api-key.js';

describe('apiKeyProblem', () => {
  it('accepts keys of visible ASCII', () => {
    expect(apiKeyProblem('sk-harness_1.A~!#$%&*+/=?^`{|}')).toBeUndefined();
    expect(apiKeyProblem('k'.repeat(MAX_API_KEY_LENGTH))).toBeUndefined();
  });

  it.each([
    ['', 'must not be empty'],
    ['clé', 'visible ASCII'],
    ['ключ', 'visible ASCII'],
    ['two words', 'no spaces'],
    ['tab\there', 'visible ASCII'],
    ['k'.repeat(MAX_API_KEY_LENGTH + 1), `at most ${MAX_API_KEY_LENGTH}`],
    ['abc:def', 'must not hold ":"'],
  ])('refuses %j without repeating it', (key, reason) => {
    const problem = apiKeyProblem(key);
    expect(problem).toContain(reason);
    if (key !== '') expect(problem).not.toContain(key);
  });
});
