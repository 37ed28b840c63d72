/**
 * Edges of redaction that a mutation sweep found unpinned: the shortest and longest card
 * numbers, and a cut that ends right before a placeholder's closing bracket.
 */
import { describe, expect, it } from 'vitest';
import { redactAndCut, redactSecrets } from './redact-secrets.js';

describe('redactSecrets: card lengths', () => {
  it('redacts a Luhn-valid card of 13 digits, the shortest, and of 19, the longest', () => {
    expect(redactSecrets('card 4222222222222 ok').text).toBe('card [REDACTED:card_number] ok');
    expect(redactSecrets('card 6011000000000000001 ok').text).toBe('card [REDACTED:card_number] ok');
  });
});

describe('redactAndCut: placeholders at the limit', () => {
  it('cuts before a placeholder whose closing bracket is the first character past the limit', () => {
    const text = `ab sk-${'Ab3_'.repeat(8)}`;
    expect(redactSecrets(text).text).toBe('ab [REDACTED:openai_key]');
    expect(redactAndCut(text, 23, '…')).toBe('ab …');
    expect(redactAndCut(text, 24, '…')).toBe('ab [REDACTED:openai_key]');
  });
});
