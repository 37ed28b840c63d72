import { describe, expect, it } from 'vitest';
import { RuneTokenEstimator, countCodePoints, estimateMessageTokens } from './token-estimator.js';

describe('token estimator: runes', () => {
  const estimator = new RuneTokenEstimator();
  it('costs (runes + 3) / 4 in integer arithmetic', () => {
    expect(estimator.estimate('hello world!')).toBe(3);
    expect(estimator.estimate('')).toBe(0);
    expect(estimator.estimate('a')).toBe(1);
    expect(estimator.estimate('abcd')).toBe(1);
    expect(estimator.estimate('abcde')).toBe(2);
  });

  it('counts Unicode code points, not UTF-16 units', () => {
    expect(countCodePoints('😀😀😀😀')).toBe(4);
    expect(estimator.estimate('😀😀😀😀')).toBe(1);
    expect(countCodePoints('日本語')).toBe(3);
    expect(countCodePoints('\ud800x')).toBe(2);
  });

  it('costs a message its content plus tool-call names and arguments', () => {
    expect(
      estimateMessageTokens(estimator, {
        content: 'hello world!',
        toolCalls: [{ name: 'abcd', arguments: '{"a":1}' }],
      }),
    ).toBe(3 + 1 + 2);
    expect(estimateMessageTokens(estimator, { content: null })).toBe(0);
  });
});
