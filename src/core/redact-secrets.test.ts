import { describe, expect, it } from 'vitest';
import { redactSecrets } from './redact-secrets.js';

// Built from pieces so the fixtures do not look like live credentials to secret scanners.
const JWT = ['eyJhbGciOiJIUzI1NiJ9', 'eyJzdWIiOiIxMjM0NTY3ODkwIn0', 'dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'].join('.');
const PEM = [
  '-----BEGIN RSA PRIVATE KEY-----',
  'MIIEowIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aumgIE',
  'k9Ro2bQvJ0sNeP2S6yq8Z8d1c3Zl6Q==',
  '-----END RSA PRIVATE KEY-----',
].join('\n');
const OPENAI = `sk-proj-${'Ab3_'.repeat(8)}`;
const GITHUB = `ghp_${'a1B2c3'.repeat(6)}`;
const GITHUB_PAT = `github_pat_${'11ABCDEFG0_'.repeat(5)}`;
const SLACK = `xoxb-${'1234567890'}-abcdefghij`;

describe('redactSecrets: private keys', () => {
  it('redacts a whole PEM private key block', () => {
    const { text, counts } = redactSecrets(`key:\n${PEM}\nafter`);
    expect(text).toBe('key:\n[REDACTED:private_key]\nafter');
    expect(counts).toEqual({ private_key: 1 });
  });

  it('redacts from an unterminated BEGIN line to the end of the text', () => {
    expect(redactSecrets('x -----BEGIN PRIVATE KEY-----\nMIIE\nmore').text).toBe('x [REDACTED:private_key]');
  });

  it('keeps a public key block', () => {
    const pub = '-----BEGIN PUBLIC KEY-----\nMIIBIjAN\n-----END PUBLIC KEY-----';
    expect(redactSecrets(pub).text).toBe(pub);
  });
});

describe('redactSecrets: tokens', () => {
  it('redacts a JWT', () => {
    expect(redactSecrets(`token=${JWT};`).text).toBe('token=[REDACTED:jwt];');
  });

  it('keeps dotted text whose segments do not start with eyJ', () => {
    expect(redactSecrets('abc.eyJdef.ghi').text).toBe('abc.eyJdef.ghi');
  });

  it('redacts a bearer token and keeps the word Bearer', () => {
    const { text, counts } = redactSecrets('Authorization: bearer abc123.DEF-456_ghi');
    expect(text).toBe('Authorization: bearer [REDACTED:bearer_token]');
    expect(counts).toEqual({ bearer_token: 1 });
  });

  it('keeps a short bearer value and bearer prose', () => {
    expect(redactSecrets('Bearer abc12').text).toBe('Bearer abc12');
    expect(redactSecrets('We use Bearer authentication').text).toBe('We use Bearer authentication');
  });

  it('counts a JWT after Bearer as a JWT, not a bearer token', () => {
    const { text, counts } = redactSecrets(`Bearer ${JWT}`);
    expect(text).toBe('Bearer [REDACTED:jwt]');
    expect(counts).toEqual({ jwt: 1 });
  });

  it('redacts OpenAI-style keys, including project keys', () => {
    expect(redactSecrets(`key ${OPENAI} end`).text).toBe('key [REDACTED:openai_key] end');
    expect(redactSecrets('sk-abcdefghijklmnopqrstuvwx').text).toBe('[REDACTED:openai_key]');
  });

  it('keeps short sk- values and words ending in sk-', () => {
    expect(redactSecrets('sk-short-one').text).toBe('sk-short-one');
    expect(redactSecrets('task-abcdefghijklmnopqrstuvwxyz').text).toBe('task-abcdefghijklmnopqrstuvwxyz');
  });

  it('redacts AWS access key ids', () => {
    expect(redactSecrets('id=AKIAIOSFODNN7EXAMPLE.').text).toBe('id=[REDACTED:aws_access_key].');
    expect(redactSecrets('ASIAABCDEFGHIJKLMNOP').text).toBe('[REDACTED:aws_access_key]');
  });

  it('keeps AWS-like ids of the wrong length', () => {
    expect(redactSecrets('AKIAIOSFODNN7EXAMPLEX').text).toBe('AKIAIOSFODNN7EXAMPLEX');
    expect(redactSecrets('AKIAIOSFODNN7EXAMPL').text).toBe('AKIAIOSFODNN7EXAMPL');
  });

  it('redacts GitHub tokens and fine-grained PATs', () => {
    expect(redactSecrets(`push with ${GITHUB}`).text).toBe('push with [REDACTED:github_token]');
    expect(redactSecrets(GITHUB_PAT).text).toBe('[REDACTED:github_token]');
  });

  it('keeps GitHub-like prefixes with too few characters', () => {
    expect(redactSecrets('ghp_abc123').text).toBe('ghp_abc123');
    expect(redactSecrets('github_pat_short').text).toBe('github_pat_short');
  });

  it('redacts Slack tokens', () => {
    expect(redactSecrets(`slack ${SLACK}`).text).toBe('slack [REDACTED:slack_token]');
  });

  it('keeps Slack-like values with an unknown type letter or too few characters', () => {
    expect(redactSecrets('xoxz-1234567890abc').text).toBe('xoxz-1234567890abc');
    expect(redactSecrets('xoxb-12345').text).toBe('xoxb-12345');
  });
});

describe('redactSecrets: card numbers', () => {
  it('redacts Luhn-valid numbers, plain or grouped by spaces or dashes', () => {
    expect(redactSecrets('card 4111 1111 1111 1111 ok').text).toBe('card [REDACTED:card_number] ok');
    expect(redactSecrets('4111-1111-1111-1111').text).toBe('[REDACTED:card_number]');
    expect(redactSecrets('378282246310005').text).toBe('[REDACTED:card_number]');
  });

  it('keeps numbers that fail the Luhn check', () => {
    expect(redactSecrets('1234 5678 9012 3456').text).toBe('1234 5678 9012 3456');
  });

  it('keeps Luhn-valid digits inside a longer digit run or a word', () => {
    expect(redactSecrets('41111111111111110').text).toBe('41111111111111110');
    expect(redactSecrets('abc4111111111111111').text).toBe('abc4111111111111111');
  });

  it('finds a card followed by another digit group such as a CVV', () => {
    expect(redactSecrets('4111 1111 1111 1111 123').text).toBe('[REDACTED:card_number] 123');
  });

  it('keeps short digit sequences such as dates and phone numbers', () => {
    const text = 'call 555-123-4567 on 2024-01-15';
    expect(redactSecrets(text).text).toBe(text);
  });
});

describe('redactSecrets: combined input', () => {
  const mixed = `aws AKIAIOSFODNN7EXAMPLE\ngh ${GITHUB} and ${GITHUB}\ncard 4111111111111111\n${PEM}`;

  it('redacts several secrets in one text and counts each kind', () => {
    const { text, counts } = redactSecrets(mixed);
    expect(text).toBe(
      'aws [REDACTED:aws_access_key]\ngh [REDACTED:github_token] and [REDACTED:github_token]\ncard [REDACTED:card_number]\n[REDACTED:private_key]',
    );
    expect(counts).toEqual({ private_key: 1, aws_access_key: 1, github_token: 2, card_number: 1 });
  });

  it('returns the text unchanged with empty counts when nothing matches', () => {
    expect(redactSecrets('nothing secret here')).toEqual({ text: 'nothing secret here', counts: {} });
  });

  it('is idempotent', () => {
    const once = redactSecrets(`${mixed}\nBearer abc123def456 ${JWT} ${OPENAI} ${SLACK}`);
    const twice = redactSecrets(once.text);
    expect(twice.text).toBe(once.text);
    expect(twice.counts).toEqual({});
  });

  it('stays fast on 1 MB of adversarial input', () => {
    const inputs = [
      'eyJ'.repeat(350_000),
      'sk-'.repeat(350_000),
      `-----BEGIN ${'A '.repeat(20)}PRIVATE KEY-----`.repeat(20_000),
      '1 '.repeat(500_000),
      `Bearer ${'a'.repeat(1_000_000)}`,
      '<'.repeat(1_000_000),
    ];
    for (const input of inputs) {
      const started = performance.now();
      redactSecrets(input);
      expect(performance.now() - started).toBeLessThan(2_000);
    }
  });
});
