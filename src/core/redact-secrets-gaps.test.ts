/**
 * Gaps a review found in redaction: a password labelled `pwd`, Square credentials, short Bearer
 * tokens that mix cases, and a label written twice (`password: \tpassword: …`), whose second
 * label was taken for the value and the value left; and the prose and paths like them that
 * must stay as they are.
 */
import { describe, expect, it } from 'vitest';
import { redactSecrets } from './redact-secrets.js';

// Built from pieces so the fixtures do not look like live credentials to secret scanners.
const SQUARE_SECRET = `sq0csp-${'Sq1-'.repeat(10)}Sq2`;
const SQUARE_TOKEN = `sq0atp-${'Sq3_'.repeat(5)}Sq`;
const SQUARE_PRODUCTION = `EAAA${'Sq4-Ab'.repeat(10)}`;
const L = '[REDACTED:labelled_secret]';

/** Each text and what it redacts to, which redacting again keeps. */
function expectRedacted(cases: ReadonlyArray<readonly [string, string]>): void {
  for (const [text, redacted] of cases) {
    expect(redactSecrets(text).text).toBe(redacted);
    expect(redactSecrets(redacted).text).toBe(redacted);
  }
}

function expectKept(texts: readonly string[]): void {
  for (const text of texts) expect(redactSecrets(text)).toEqual({ text, counts: {} });
}

describe('redactSecrets: a password labelled pwd', () => {
  it('redacts the value after pwd= or pwd: in any case, outside a URL too', () => {
    expect(redactSecrets('mysql -u root pwd=S3cretValue9')).toEqual({
      text: `mysql -u root pwd=${L}`,
      counts: { labelled_secret: 1 },
    });
    expectRedacted([
      ['pwd=hunter2secret', `pwd=${L}`],
      ['pwd: hunter2secret', `pwd: ${L}`],
      ['PWD: S3cretValue9', `PWD: ${L}`],
      ['Pwd = S3cretValue9', `Pwd = ${L}`],
      ['pwd="S3cret Value9"', `pwd="${L}"`],
      ['{"pwd":"Hunter2024"}', `{"pwd":"${L}"}`],
      ['Pwd=Tr0ub4dor&3;Server=db', `Pwd=${L};Server=db`],
      // A JSON escape at the start is the password's, not a path's root.
      ['{"pwd":"\\"Hunter2024\\""}', `{"pwd":"${L}"}`],
      ['{"pwd":"\\nHunter2024"}', `{"pwd":"${L}"}`],
    ]);
  });

  it('redacts PWD= and passwd=, as before', () => {
    expectRedacted([
      ['PWD=hunter2secret', `PWD=${L}`],
      ['passwd=hunter2secret', `passwd=${L}`],
      ['passwd: hunter2secret', `passwd: ${L}`],
    ]);
  });

  it('keeps the pwd command, the working directory it names and the pwd module', () => {
    expectKept([
      'cd /tmp && pwd',
      'echo $PWD',
      'the pwd command prints the working directory',
      'bash: pwd: too many arguments',
      'pwd: /home/alice/project2',
      'PWD=/home/alice',
      'OLDPWD=/home/alice/app1',
      '{"pwd":"/srv/app1","code":0}',
      '{"pwd":"C:\\\\work\\\\app1"}',
      'pwd: ~/src/app1',
      'pwd = os.getcwd()',
      'pwd=$(pwd)',
      "import pwd; pwd.getpwnam('alice1')",
    ]);
  });

  it('keeps a relative path or a call after pwd, in code and JSON', () => {
    expectKept([
      'let pwd = env::current_dir()?;',
      "const pwd = 'packages/app';",
      '{"pwd":"packages/web","code":0}',
      'pwd: src/v2/app',
    ]);
  });
});

describe('redactSecrets: Square credentials', () => {
  it('redacts an OAuth secret (sq0csp-) and an access token (sq0atp-)', () => {
    expect(redactSecrets(`secret ${SQUARE_SECRET} and ${SQUARE_TOKEN}.`)).toEqual({
      text: 'secret [REDACTED:square_token] and [REDACTED:square_token].',
      counts: { square_token: 2 },
    });
    expectRedacted([
      [`"${SQUARE_TOKEN}"`, '"[REDACTED:square_token]"'],
      [
        `curl -H 'Square-Version: 2024-01-18' -d '${SQUARE_SECRET}'`,
        `curl -H 'Square-Version: 2024-01-18' -d '[REDACTED:square_token]'`,
      ],
    ]);
  });

  it('redacts a production access token (EAAA and 60 characters)', () => {
    expect(redactSecrets(`token ${SQUARE_PRODUCTION} ok`)).toEqual({
      text: 'token [REDACTED:square_token] ok',
      counts: { square_token: 1 },
    });
    expectRedacted([
      [`{"access_token":"${SQUARE_PRODUCTION}"}`, '{"access_token":"[REDACTED:square_token]"}'],
      [`?token=${SQUARE_PRODUCTION}&x=1`, '?token=[REDACTED:square_token]&x=1'],
    ]);
  });

  it('keeps what is too short, an application id, and EAAA inside base64 or a hex digest', () => {
    const hex = `EAAA${'0123456789ABCDEF'.repeat(4)}`.slice(0, 64);
    expectKept([
      SQUARE_SECRET.slice(0, -1),
      SQUARE_TOKEN.slice(0, -1),
      `sq0idp-${'Sq5_'.repeat(6)}`,
      SQUARE_PRODUCTION.slice(0, -1),
      `xEAAA${'Sq4-Ab'.repeat(10)}`,
      `iVBORw0KGgo/${SQUARE_PRODUCTION}`,
      `data ${SQUARE_PRODUCTION}+AAAA==`,
      `sha256 ${hex}`,
      `EAAA${'abcdefghij'.repeat(6)}`,
    ]);
  });
});

describe('redactSecrets: short Bearer tokens', () => {
  it('redacts a token of 8 or more characters that mixes cases, with no digit', () => {
    expect(redactSecrets('Bearer abcdEFGH')).toEqual({
      text: 'Bearer [REDACTED:bearer_token]',
      counts: { bearer_token: 1 },
    });
    expectRedacted([
      ['use bearer AbCdEfGhIjKl now', 'use bearer [REDACTED:bearer_token] now'],
      ['Bearer ABCDefgh', 'Bearer [REDACTED:bearer_token]'],
    ]);
  });

  // An Authorization header's value was redacted before too, as `auth_header` (any 4 or more
  // characters): now as the Bearer token it is.
  it('redacts a short token in an Authorization header as a Bearer token', () => {
    expect(redactSecrets('Authorization: Bearer abcdEFGH')).toEqual({
      text: 'Authorization: Bearer [REDACTED:bearer_token]',
      counts: { bearer_token: 1 },
    });
    expectRedacted([
      ["curl -H 'Authorization: Bearer PqRsTuVw'", "curl -H 'Authorization: Bearer [REDACTED:bearer_token]'"],
      ['Bearer abc123XYZ9', 'Bearer [REDACTED:bearer_token]'],
      ['Authorization: Bearer abc123XYZ9', 'Authorization: Bearer [REDACTED:bearer_token]'],
      ['Authorization: Bearer short1', 'Authorization: Bearer [REDACTED:auth_header]'],
    ]);
  });

  it('keeps prose: a capitalized word, capitals alone, and words without a digit', () => {
    expectKept([
      'Bearer of bad news',
      'bearer tokens are short-lived',
      'HTTP Bearer Authentication scheme',
      'the Bearer Authorization header',
      'Bearer AUTHENTICATION',
      'Bearer abcdefgh',
      'Bearer abc12',
      'Bearer aBcD',
    ]);
  });

  it('keeps a CamelCase word or identifier after the word bearer', () => {
    expectKept([
      'use the Bearer JavaScript client',
      'Bearer getToken()',
      'standard-bearer MacArthur',
      'Bearer TypeScript',
      'Bearer accessToken',
      'Bearer WebSocket',
    ]);
  });
});

describe('redactSecrets: a label written twice', () => {
  it('redacts the value after the second label, the labels kept', () => {
    expect(redactSecrets('password: \tpassword: X9secret')).toEqual({
      text: `password: \tpassword: ${L}`,
      counts: { labelled_secret: 1 },
    });
    expectRedacted([
      ['password:password: X9secret', `password:password: ${L}`],
      ['Password:\tPassword:\tX9secret', `Password:\tPassword:\t${L}`],
      ['api_key: token: Tk9-value', `api_key: token: ${L}`],
      ['pwd: pwd: S3cretValue9', `pwd: pwd: ${L}`],
    ]);
  });

  it('still redacts a value that starts like a label but has no blank after it', () => {
    expectRedacted([
      ['password: secret=Xy9', `password: ${L}`],
      ['password:password:X9secret', `password:${L}`],
    ]);
  });

  it('keeps prose about a password, as before', () => {
    expectKept([
      'reset your password: click the link',
      'password: required',
      'password: password: required',
      'Forgot your password? Reset it here',
    ]);
  });
});

describe('redactSecrets: these patterns stay linear', () => {
  // No timed assertion, as in redact-secrets.test.ts: a pattern that backtracks on these takes
  // minutes on a megabyte, far past the test's timeout, while linear matching takes
  // milliseconds.
  it('finishes on 1 MB of adversarial input for every new pattern', () => {
    const inputs = [
      'pwd='.repeat(250_000),
      'pwd: '.repeat(200_000),
      `pwd=${'a1'.repeat(500_000)}`,
      'password: \t'.repeat(90_000),
      'password:'.repeat(110_000),
      `${'a'.repeat(40)}password: `.repeat(20_000),
      `password: ${'a'.repeat(40)}`.repeat(20_000),
      'Bearer '.repeat(140_000),
      `Bearer ${'aB'.repeat(500_000)}`,
      `Bearer${' '.repeat(1_000_000)}`,
      'sq0csp-'.repeat(140_000),
      `sq0atp-${'A'.repeat(1_000_000)}`,
      'EAAA'.repeat(250_000),
      ` EAAA${'a1B'.repeat(20)}+`.repeat(15_000),
      `EAAA${'a1B'.repeat(330_000)}/`,
    ];
    for (const input of inputs) {
      const once = redactSecrets(input).text;
      expect(redactSecrets(once).text).toBe(once);
    }
  }, 30_000);
});
