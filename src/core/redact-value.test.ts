import { describe, expect, it } from 'vitest';
import { redactJsonText, redactValue } from './redact-value.js';

const OPENAI = `sk-proj-${'Ab3_'.repeat(8)}`;

describe('redactValue', () => {
  it('redacts every string of a nested value, keys kept', () => {
    const value = {
      prompt: `use ${OPENAI}`,
      list: ['plain', { deep: `Bearer abc123def456` }],
      count: 3,
      flag: true,
      none: null,
    };
    expect(redactValue(value)).toEqual({
      prompt: 'use [REDACTED:openai_key]',
      list: ['plain', { deep: 'Bearer [REDACTED:bearer_token]' }],
      count: 3,
      flag: true,
      none: null,
    });
    expect(value.prompt).toBe(`use ${OPENAI}`);
  });

  it('returns the same object when nothing needs redacting', () => {
    const value = { a: ['b', { c: 'd' }], e: 1 };
    expect(redactValue(value)).toBe(value);
  });

  it('redacts values nested deeper than it walks', () => {
    let deep: unknown = { key: OPENAI };
    for (let level = 0; level < 100; level++) deep = { next: deep };
    expect(JSON.stringify(redactValue(deep))).not.toContain(OPENAI);
  });
});

describe('redactJsonText', () => {
  it('redacts inside JSON strings and keeps valid JSON, even for an unterminated private key', () => {
    const text = JSON.stringify({
      key: OPENAI,
      pem: '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC',
      after: 'kept',
    });
    const redacted = redactJsonText(text);
    expect(JSON.parse(redacted)).toEqual({
      key: '[REDACTED:openai_key]',
      pem: '[REDACTED:private_key]',
      after: 'kept',
    });
  });

  it('returns JSON without secrets byte for byte, and redacts text that is not JSON', () => {
    const text = '{ "a" : 1,\n  "b": "x" }';
    expect(redactJsonText(text)).toBe(text);
    expect(redactJsonText(`not json ${OPENAI}`)).toBe('not json [REDACTED:openai_key]');
  });
});
