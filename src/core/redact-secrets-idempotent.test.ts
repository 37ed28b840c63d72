/**
 * One call of redactSecrets is a fixed point: what a second call would take, the first took.
 * Text is redacted once before it is stored, so a secret only a second pass finds is stored in
 * the clear. Secrets run together are where passes differ: a rule that refuses a match next to
 * a name character takes it once a later rule turned that neighbour into a placeholder.
 */
import { describe, expect, it } from 'vitest';
import { redactSecrets, type SecretKind } from './redact-secrets.js';
import { seededRandom } from '../../test/support/seeded-random.js';

const GOOGLE = `AIza${'Ab1_-'.repeat(7)}`;
const NPM = `npm_${'Ab1'.repeat(12)}`;
const CARD = '4111 1111 1111 1111';

// The samples of redact-value.test.ts (a secret of every kind, the characters near which
// matching changes, half-secrets), and secrets that end in a character another rule's
// secret may follow but their own rule refuses after them (`-`, `+`).
const FRAGMENTS = [
  `sk-proj-${'Ab3_'.repeat(8)}`,
  `sk-ant-api03-${'Xy9_'.repeat(6)}`,
  ['eyJhbGciOiJIUzI1NiJ9', 'eyJzdWIiOiIxIn0', 'sig_-x'].join('.'),
  `ghp_${'a1B2c3'.repeat(6)}`,
  'xoxb-1234567890-abcdefghij',
  'AKIA' + 'ABCDEFGHIJKLMNOP',
  `aws_secret_access_key =\t${'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'}`,
  `aws_secret_access_key=${'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKE+'}`,
  `"SecretAccessKey": "${'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'}"`,
  'postgres://user:hunter2@db.example',
  '?password=hunter2&x=1',
  'Bearer abc123def456',
  `sk_live_${'Ab1'.repeat(5)}`,
  `glpat-${'Ab1_'.repeat(6)}`,
  GOOGLE,
  `AIza${'Ab1_A'.repeat(7)}`,
  `hf_${'Ab1'.repeat(11)}`,
  NPM,
  'Authorization: Basic dXNlcjpwYXNz',
  'authorization=Bearer%20Zq8Lm2Np4Rt6Vx9BcDfGh',
  'Cookie: sessionid=9f8e7d6c5b4a3928; theme=dark',
  'Cookie',
  'sid=9f8e7d6c5b4a3928',
  'mysql -u root -pTr0ub4dor3x',
  'sshpass -p Tr0ub4dor3x',
  `https://hooks.slack.com/services/T01A2B3C4/B05D6E7F8/${'Xy9Z'.repeat(6)}`,
  `https://discord.com/api/webhooks/123456789012345678/${'Ab1-Cd2_'.repeat(8)}`,
  '?sig=Zq8Lm2Np4Rt6Vx9BcDfGh',
  `SG.${'Ab1_'.repeat(5)}cd.${'Ef2-'.repeat(10)}ghi`,
  `SG.${'Ab1_'.repeat(5)}cd.${'Ef2-'.repeat(10)}gh-`,
  `sq0atp-${'Sq1_'.repeat(6)}`,
  `sq0csp-${'Sq2-'.repeat(11)}`,
  `EAAA${'Sq3x'.repeat(16)}`,
  `EAAA${'Sq3-'.repeat(16)}`,
  'Bearer abcdEFGH',
  'x-api-key: sk-abcdefghij',
  `Private-Lines: 1\nAAAAIF${'Prv9'.repeat(14)}`,
  `Private-MAC: ${'a1b2c3d4'.repeat(8)}`,
  'DB_PASSWORD=Tr0ub4dor-9',
  'pwd=Hunter2024!',
  '"api_key": "k3y-value!"',
  'password: required',
  CARD,
  '4111-1111-1111-1112',
  '5555555555554444',
  'alice.smith+memo@example.co.uk',
  'git@github.com:org/repo.git',
  '@scope/pkg@1.2.3',
  '-----BEGIN PRIVATE KEY-----\nMIIE',
  '-----END PRIVATE KEY-----',
  'sk-',
  'abcdefghijklmnopqrstuvwxyz',
  '4111 1111',
  'bearer',
  ' ',
  '\n',
  '"',
  '\\',
  'plain words',
  '[REDACTED:openai_key]',
  'db_password',
  'pwd',
  'Kd81"q\\z!',
];

// Mostly nothing between two fragments: secrets run together.
const SEPARATORS = ['', '', '', ' ', '\n', '-'];

const SEEDS = [0x2545f491, 0x1, 0x4, 0x6, 0x7, 0x777];
const CASES_PER_SEED = 5_000;

function randomText(next: ReturnType<typeof seededRandom>): string {
  let text = FRAGMENTS[next.below(FRAGMENTS.length)] ?? '';
  const more = 1 + next.below(4);
  for (let index = 0; index < more; index++) {
    text += `${SEPARATORS[next.below(SEPARATORS.length)] ?? ''}${FRAGMENTS[next.below(FRAGMENTS.length)] ?? ''}`;
  }
  return text;
}

function placeholdersOf(text: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const [, kind = ''] of text.matchAll(/\[REDACTED:([a-z_]+)\]/g)) found.set(kind, (found.get(kind) ?? 0) + 1);
  return found;
}

describe('redactSecrets: one call is a fixed point', () => {
  it('takes a Google API key right before a card number or an npm token, which rules after its own take', () => {
    expect(redactSecrets(`${GOOGLE}${CARD}`)).toEqual({
      text: '[REDACTED:google_api_key][REDACTED:card_number]',
      counts: { google_api_key: 1, card_number: 1 },
    });
    expect(redactSecrets(`key ${GOOGLE}${NPM} end`)).toEqual({
      text: 'key [REDACTED:google_api_key][REDACTED:npm_token] end',
      counts: { google_api_key: 1, npm_token: 1 },
    });
  });

  it('reads a label that a rule after its own shortened (an address running into a token)', () => {
    const text = `alice.smith+memo@example.co.ukCookie${NPM}DB_PASSWORD=Tr0ub4dor-9`;
    const once = redactSecrets(text);
    expect(once.text).toBe(`[REDACTED:email_address]${NPM.slice('npm'.length)}DB_PASSWORD=[REDACTED:labelled_secret]`);
    expect(once.counts).toEqual({ email_address: 1, labelled_secret: 1 });
    expect(redactSecrets(once.text)).toEqual({ text: once.text, counts: {} });
  });

  it('counts every secret of a chain that takes three passes', () => {
    // The card frees the Google key, which frees the AWS secret key (whose last `+` the Google
    // rule accepts before its key).
    const text = `aws_secret_access_key=${'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKE+'}${GOOGLE}${CARD}`;
    expect(redactSecrets(text)).toEqual({
      text: 'aws_secret_access_key=[REDACTED:aws_secret_key][REDACTED:google_api_key][REDACTED:card_number]',
      counts: { aws_secret_key: 1, google_api_key: 1, card_number: 1 },
    });
  });

  it.each(SEEDS.map((seed) => ({ seed, hex: `0x${seed.toString(16)}` })))(
    `changes nothing on a second call, on ${CASES_PER_SEED.toLocaleString('en')} random texts (seed $hex)`,
    ({ seed }) => {
      const next = seededRandom(seed);
      let redacted = 0;
      for (let index = 0; index < CASES_PER_SEED; index++) {
        const text = randomText(next);
        const once = redactSecrets(text);
        const twice = redactSecrets(once.text);
        const replay = JSON.stringify({ seed, index, text });
        expect(twice.text, replay).toBe(once.text);
        expect(twice.counts, replay).toEqual({});
        // The counts hold every placeholder the call added (more when a later rule took a
        // placeholder whole into its own).
        const before = placeholdersOf(text);
        for (const [kind, count] of placeholdersOf(once.text)) {
          const added = count - (before.get(kind) ?? 0);
          if (added > 0) expect(once.counts[kind as SecretKind] ?? 0, replay).toBeGreaterThanOrEqual(added);
        }
        if (once.text !== text) redacted++;
      }
      // Both kinds of text are drawn: with secrets and without.
      expect(redacted).toBeGreaterThan(CASES_PER_SEED / 2);
      expect(redacted).toBeLessThan(CASES_PER_SEED);
    },
  );
});
