import { describe, expect, it } from 'vitest';
import { redactAndCut, redactSecrets } from './redact-secrets.js';
import { seededRandom } from '../../test/support/seeded-random.js';

// Built from pieces so the fixtures do not look like live credentials to secret scanners.
const JWT = ['eyJhbGciOiJIUzI1NiJ9', 'eyJzdWIiOiIxMjM0NTY3ODkwIn0', 'dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'].join(
  '.',
);
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
const ANTHROPIC = `sk-ant-api03-${'Xy9_'.repeat(10)}`;
const AWS_SECRET = `wJalrXUtnFEMI/K7MDENG/${'bPxRfiCYEXAMPLEKEY'}`;

describe('redactSecrets: private keys', () => {
  it('redacts a whole PEM private key block', () => {
    const { text, counts } = redactSecrets(`key:\n${PEM}\nafter`);
    expect(text).toBe('key:\n[REDACTED:private_key]\nafter');
    expect(counts).toEqual({ private_key: 1 });
  });

  it('redacts a PGP private key block', () => {
    const block = '-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----';
    expect(redactSecrets(`key:\n${block}\nafter`).text).toBe('key:\n[REDACTED:private_key]\nafter');
  });

  it('redacts from an unterminated BEGIN line to the end of the text', () => {
    expect(redactSecrets('x -----BEGIN PRIVATE KEY-----\nMIIE\nmore').text).toBe('x [REDACTED:private_key]');
  });

  it('keeps a public key block', () => {
    const pub = '-----BEGIN PUBLIC KEY-----\nMIIBIjAN\n-----END PUBLIC KEY-----';
    expect(redactSecrets(pub).text).toBe(pub);
  });
});

describe('redactSecrets: a private key read in pieces', () => {
  // A file read in two calls: the first piece has the BEGIN line, the second the END line.
  const [HEAD, TAIL] = [PEM.split('\n').slice(0, 2).join('\n'), PEM.split('\n').slice(2).join('\n')];

  it('redacts a piece that ends a key: its base64 lines and the END line', () => {
    const { text, counts } = redactSecrets(`${TAIL}\nafter`);
    expect(text).toBe('[REDACTED:private_key]\nafter');
    expect(counts).toEqual({ private_key: 1 });
    expect(redactSecrets(`rest of the key:\n${TAIL}`).text).toBe('rest of the key:\n[REDACTED:private_key]');
    expect(redactSecrets(`${HEAD}\n`).text).toBe('[REDACTED:private_key]');
  });

  it('redacts a tail cut inside a line, indented, with CRLF line breaks, or in JSON text', () => {
    const cut = `${PEM.split('\n')[1]?.slice(9)}\n${TAIL}`;
    expect(redactSecrets(`note: ${cut}`).text).toBe('note: [REDACTED:private_key]');
    const indented = TAIL.split('\n')
      .map((line) => `    ${line}`)
      .join('\n');
    expect(redactSecrets(`key: |\n${indented}\nnext: 1`).text).toBe('key: |\n[REDACTED:private_key]\nnext: 1');
    expect(redactSecrets(TAIL.replaceAll('\n', '\r\n')).text).toBe('[REDACTED:private_key]');
    const json = JSON.stringify({ path: 'id_rsa', text: `${cut}\n` });
    const redacted = redactSecrets(json).text;
    expect(JSON.parse(redacted)).toEqual({ path: 'id_rsa', text: '[REDACTED:private_key]\n' });
    const pgp = 'mQENBFzAbCdEfGh=\n=x2Yz\n-----END PGP PRIVATE KEY BLOCK-----';
    expect(redactSecrets(pgp).text).toBe('[REDACTED:private_key]');
  });

  it('keeps what is no key body: a prose line, a public key, text after the END line', () => {
    expect(redactSecrets('see below\n\n-----END PRIVATE KEY----- done').text).toBe(
      'see below\n\n[REDACTED:private_key] done',
    );
    const pub = 'MIIBIjAN\n-----END PUBLIC KEY-----';
    expect(redactSecrets(pub).text).toBe(pub);
    // One short word is no key line (a key's lines are long but for its last, and PGP's checksum).
    const once = redactSecrets(`a\n${TAIL}\n${TAIL}`).text;
    expect(once).toBe('a\n[REDACTED:private_key]\n[REDACTED:private_key]');
    expect(redactSecrets(once).text).toBe(once);
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

  it('redacts a long bearer token without digits when it mixes cases, and keeps capitals alone', () => {
    expect(redactSecrets('Authorization: Bearer CnTwentyFourCharsLongTokenXyz').text).toBe(
      'Authorization: Bearer [REDACTED:bearer_token]',
    );
    expect(redactSecrets('Bearer AUTHENTICATIONSCHEMEISUSED').text).toBe('Bearer AUTHENTICATIONSCHEMEISUSED');
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

describe('redactSecrets: more key kinds', () => {
  it('redacts Anthropic keys as their own kind, not as OpenAI keys', () => {
    const { text, counts } = redactSecrets(`key=${ANTHROPIC} and ${OPENAI}`);
    expect(text).toBe('key=[REDACTED:anthropic_key] and [REDACTED:openai_key]');
    expect(counts).toEqual({ anthropic_key: 1, openai_key: 1 });
  });

  it('redacts an AWS secret access key when it is labelled, keeping the label', () => {
    expect(AWS_SECRET).toHaveLength(40);
    expect(redactSecrets(`aws_secret_access_key = ${AWS_SECRET}`).text).toBe(
      'aws_secret_access_key = [REDACTED:aws_secret_key]',
    );
    expect(redactSecrets(`AWS_SECRET_ACCESS_KEY=${AWS_SECRET}\n`).text).toBe(
      'AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_key]\n',
    );
    expect(redactSecrets(`{"SecretAccessKey": "${AWS_SECRET}"}`).text).toBe(
      '{"SecretAccessKey": "[REDACTED:aws_secret_key]"}',
    );
  });

  it('keeps an unlabelled 40-character string and a labelled one of the wrong length', () => {
    expect(redactSecrets(`hash ${AWS_SECRET}`).text).toBe(`hash ${AWS_SECRET}`);
    // Not an AWS key: a labelled secret (`secret_key` labels one), taken whole.
    expect(redactSecrets(`secret_key=${AWS_SECRET}X`).text).toBe('secret_key=[REDACTED:labelled_secret]');
  });

  it('redacts Slack app-level tokens', () => {
    expect(redactSecrets('xapp-1-A0123456789-abcdef').text).toBe('[REDACTED:slack_token]');
  });
});

describe('redactSecrets: provider keys, auth headers and labelled secrets', () => {
  it('redacts Stripe, GitLab, Google API, Hugging Face and npm keys as their own kinds', () => {
    const text = [
      `sk_live_${'Ab1'.repeat(6)}`,
      `rk_test_${'Ab1'.repeat(6)}`,
      `glpat-${'Ab1_'.repeat(6)}`,
      `AIza${'Ab1_-'.repeat(7)}`,
      `hf_${'Ab1'.repeat(11)}`,
      `npm_${'Ab1'.repeat(12)}`,
    ].join(' ');
    const result = redactSecrets(text);
    expect(result.counts).toEqual({
      stripe_key: 2,
      gitlab_token: 1,
      google_api_key: 1,
      huggingface_token: 1,
      npm_token: 1,
    });
    expect(result.text).not.toMatch(/Ab1/);
  });

  it('keeps a publishable Stripe key and look-alikes that are too short', () => {
    for (const text of [`pk_live_${'Ab1'.repeat(6)}`, 'sk_live_abc', 'glpat-short', 'hf_abc', 'npm_install'])
      expect(redactSecrets(text).text).toBe(text);
  });

  it('redacts the credentials of an Authorization header, keeping its scheme', () => {
    expect(redactSecrets('Authorization: Basic dXNlcjpwYXNzd29yZA==').text).toBe(
      'Authorization: Basic [REDACTED:auth_header]',
    );
    expect(redactSecrets('{"authorization": "Token abc123def456"}').text).toBe(
      '{"authorization": "Token [REDACTED:auth_header]"}',
    );
    expect(redactSecrets('Authorization: Bearer abc123def456').counts).toEqual({ bearer_token: 1 });
    expect(redactSecrets('Basic authentication is enabled').counts).toEqual({});
  });

  it.each([
    ['DB_PASSWORD=Tr0ub4dor-horse-9', 'DB_PASSWORD=[REDACTED:labelled_secret]'],
    ['"password": "Tr0ub4dor-horse-9"', '"password": "[REDACTED:labelled_secret]"'],
    ['{\\"api_key\\": \\"k3y-value!\\"}', '{\\"api_key\\": \\"[REDACTED:labelled_secret]\\"}'],
    ["client_secret: 'abc 123 def'", "client_secret: '[REDACTED:labelled_secret]'"],
    ['AccountName=x;AccountKey=abc123+/def==;Suffix=y', 'AccountName=x;AccountKey=[REDACTED:labelled_secret];Suffix=y'],
    ['GITHUB_TOKEN = a1b2c3d4e5f6', 'GITHUB_TOKEN = [REDACTED:labelled_secret]'],
    // Letters only, and holding , ; & (an environment value runs to the end of the word).
    ['DB_PASSWORD=hunterhorse', 'DB_PASSWORD=[REDACTED:labelled_secret]'],
    ['export API_TOKEN=abc,def;ghi&jkl done', 'export API_TOKEN=[REDACTED:labelled_secret] done'],
    ['"password": "correcthorse"', '"password": "[REDACTED:labelled_secret]"'],
    ["password = 'letmein'", "password = '[REDACTED:labelled_secret]'"],
  ])('redacts the value of %j, keeping its label', (text, redacted) => {
    const result = redactSecrets(text);
    expect(result.text).toBe(redacted);
    expect(result.counts).toEqual({ labelled_secret: 1 });
    expect(redactSecrets(result.text).text).toBe(result.text);
  });

  it.each([
    'const apiKey = process.env.OPENAI_API_KEY;',
    'password = getPassword()',
    'api_key = config.api_key',
    'password: required',
    'The password: must be 8 characters',
    'max_tokens: 100000',
    'token: ********',
    'password=****cret',
    'secret: ${SECRET_NAME}',
    'password=[REDACTED:url_password]',
    'DB_PASSWORD=$DB_PASSWORD_FROM_VAULT',
    'API_TOKEN=none',
    '"password": "required"',
    'token = response',
    'PASSWORD_FILE=/run/secrets/db',
    'MAX_TOKENS=4096',
  ])('keeps %j, whose labelled value is a reference, a word or a placeholder', (text) => {
    expect(redactSecrets(text)).toEqual({ text, counts: {} });
  });
});

describe('redactSecrets: more labelled secrets', () => {
  const L = '[REDACTED:labelled_secret]';
  const HEX = '0a1b2c3d4e5f60718293a4b5c6d7e8f9';

  it.each([
    // Environment names whose label word has more name after it, or a name of its own.
    ['SMTP_PASS=Sm7pPassw0rd', `SMTP_PASS=${L}`],
    ['DB_PWD=Dbpwd12345', `DB_PWD=${L}`],
    ['DB_PASSWORD_PROD=Hunter2024', `DB_PASSWORD_PROD=${L}`],
    [`SECRET_KEY_BASE=${HEX}`, `SECRET_KEY_BASE=${L}`],
    [`ENCRYPTION_KEY=${HEX}`, `ENCRYPTION_KEY=${L}`],
    [`export SIGNING_KEY=${HEX}`, `export SIGNING_KEY=${L}`],
    [`RAILS_MASTER_KEY=${HEX}`, `RAILS_MASTER_KEY=${L}`],
    ['APP_KEY=base64:Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2Rl=', `APP_KEY=${L}`],
    // PHP and Ruby hashes, PHP constants, XML elements.
    ['"password" => "Hunter2024",', `"password" => "${L}",`],
    [":api_key => 'k3y-value!'", `:api_key => '${L}'`],
    ["define('DB_PASSWORD', 'Hunter2024');", `define('DB_PASSWORD', '${L}');`],
    ['define( "AUTH_TOKEN" , "t0k3n-value" )', `define( "AUTH_TOKEN" , "${L}" )`],
    ['<password>Hunter2024</password>', `<password>${L}</password>`],
    ['<apiKey> abcdef0123456789 </apiKey>', `<apiKey> ${L} </apiKey>`],
    ['<db.secret>s3cr3t-value</db.secret>', `<db.secret>${L}</db.secret>`],
    ['<Token>abc123def456</Token>', `<Token>${L}</Token>`],
    // A name/value pair (Kubernetes env, AWS parameters), and a JSON array.
    ['{"name":"DB_PASSWORD","value":"Tr0ub4dor&3"}', `{"name":"DB_PASSWORD","value":"${L}"}`],
    ['{"Name": "api_token", "Value": "abc123def456"}', `{"Name": "api_token", "Value": "${L}"}`],
    ['{"password":["Hunter2024","x"]}', `{"password":["${L}","x"]}`],
    // Chat: the value has a digit or a symbol.
    ['my password is Hunter2024', `my password is ${L}`],
    ['The API key is k3y-0123456789, thanks', `The API key is ${L} thanks`],
    ['db_password is "correcthorse"', `db_password is "${L}"`],
  ])('redacts the value of %j, keeping its label', (text, redacted) => {
    const result = redactSecrets(text);
    expect(result.text).toBe(redacted);
    expect(result.counts).toEqual({ labelled_secret: 1 });
    expect(redactSecrets(result.text).text).toBe(result.text);
  });

  it.each([
    'BYPASS=Skip1234',
    'COMPASS_HEADING=north-by-east',
    'FIRST_PASS=enabled',
    'ALLOW_PASS=yes',
    'TOKEN_URL=https://auth.example.com/token',
    'TOKEN_TYPE=bearer',
    'PASSWORD_MIN_LENGTH=12',
    'SECRET_NAME=db-credentials',
    'PRIMARY_KEY=id',
    'SORT_KEY=created_at',
    'KEYBOARD=us-intl',
    'items.map(token => token.trim());',
    'tokens.forEach(token => console.log(token));',
    'users.filter(password => password.length > 8);',
    "'password' => 'required',",
    '"token" => $token,',
    "define('DB_HOST', 'localhost1');",
    "define('DB_PASSWORD', getenv('DB_PASSWORD'));",
    '<token>hello</token>',
    '<secret>The answer is 42</secret>',
    '<password>string</password>',
    '<token>{{token}}</token>',
    '<passwordPolicy>strict-8</passwordPolicy>',
    '{"name":"DB_HOST","value":"db.internal1"}',
    '{"name":"password","value":"required"}',
    '{"name":"x","value":"Tr0ub4dor&3","label":"password"}',
    'Your password is too short.',
    'The token is expired.',
    'The password is 8 characters long',
    'password is required (min 8)',
    'The API key is stored in the vault',
    'if token is None: return',
    'assert token is not None',
    'the session token is 3600s',
    '[REDACTED:github_token] is 9f8e7d6c',
    '{"tokens":["abc123def456"]}',
  ])('keeps %j', (text) => {
    expect(redactSecrets(text)).toEqual({ text, counts: {} });
  });
});

describe('redactSecrets: passwords in URLs', () => {
  it('redacts the password of scheme://user:password@host and keeps the rest', () => {
    const { text, counts } = redactSecrets('dsn postgres://harness:s3cr3t-pw@db.internal:5432/harness ok');
    expect(text).toBe('dsn postgres://harness:[REDACTED:url_password]@db.internal:5432/harness ok');
    expect(counts).toEqual({ url_password: 1 });
    expect(redactSecrets('https://:token123@example.com').text).toBe('https://:[REDACTED:url_password]@example.com');
  });

  it('takes a password holding a raw @ to the last @ before the host', () => {
    expect(redactSecrets('postgres://harness:p@ssw0rd!@db.internal:5432/x').text).toBe(
      'postgres://harness:[REDACTED:url_password]@db.internal:5432/x',
    );
    expect(redactSecrets('https://u:pw@host/path@x').text).toBe('https://u:[REDACTED:url_password]@host/path@x');
  });

  it('redacts password query parameters', () => {
    expect(redactSecrets('https://x.test/login?user=a&password=hunter2&next=/').text).toBe(
      'https://x.test/login?user=a&password=[REDACTED:url_password]&next=/',
    );
    expect(redactSecrets('https://x.test/?PWD=abc#frag').text).toBe('https://x.test/?PWD=[REDACTED:url_password]#frag');
  });

  it('keeps a token redacted as the user name of a URL whole, placeholder and all', () => {
    expect(redactSecrets(`git clone https://${GITHUB}@github.com/o/r`)).toEqual({
      text: 'git clone https://[REDACTED:github_token]@github.com/o/r',
      counts: { github_token: 1 },
    });
    expect(redactSecrets(`https://${GITHUB}:pw1@github.com/o/r`).text).toBe(
      'https://[REDACTED:github_token]:[REDACTED:url_password]@github.com/o/r',
    );
    expect(redactSecrets(`https://u:[x${GITHUB}@h/`).text).toBe('https://u:[REDACTED:url_password]@h/');
  });

  it('keeps URLs without a password: a user only, a port, an @ in the path', () => {
    for (const url of ['https://user@example.com/x', 'http://example.com:8080/a@b', 'https://x.test/?passport=1']) {
      expect(redactSecrets(url).text).toBe(url);
    }
  });
});

describe('redactSecrets: URL-encoded text', () => {
  it('finds a token right after a percent escape, as in an encoded callback or redirect link', () => {
    const tokens = [OPENAI, ANTHROPIC, GITHUB, GITHUB_PAT, SLACK, JWT, 'AKIAIOSFODNN7EXAMPLE'];
    for (const token of tokens) {
      for (const escape of ['%3D', '%3d', '%20', '%22', '%2F', '%3A']) {
        const text = `https://x.test/cb?next=https%3A%2F%2Fapi.test%2F%3Fapi_key${escape}${token}&page=2`;
        const { text: redacted } = redactSecrets(text);
        expect(redacted).not.toContain(token);
        expect(redacted).toMatch(/api_key%[0-9A-Fa-f]{2}\[REDACTED:[a-z_]+\]&page=2$/);
      }
    }
  });

  it('redacts labelled values and password parameters whose separators are percent-encoded', () => {
    expect(redactSecrets('?next=%2Flogin%3Fuser%3Dbob%26password%3DHunter22%2521%26page%3D2').text).toBe(
      '?next=%2Flogin%3Fuser%3Dbob%26password%3D[REDACTED:url_password]%26page%3D2',
    );
    expect(redactSecrets('?next=%2Fdb%3FDB_PASSWORD%3Dsup3rs3cret').text).toBe(
      '?next=%2Fdb%3FDB_PASSWORD%3D[REDACTED:labelled_secret]',
    );
    expect(redactSecrets('client_secret%3Ak9Xq2mLp7 next').text).toBe(
      'client_secret%3A[REDACTED:labelled_secret] next',
    );
  });

  it('keeps words that only end in a token prefix and percent signs that are no escape', () => {
    for (const text of [`ta${OPENAI}`, `100%a${OPENAI}`, 'the %3Dmeeting, 50%3Afoo']) {
      expect(redactSecrets(text).text).toBe(text);
    }
  });
});

describe('redactSecrets: JSON text', () => {
  it('finds secrets right after an escape such as \\n, as in stored tool arguments', () => {
    const text = JSON.stringify({
      all:
        `first\n${OPENAI}\n${ANTHROPIC}\nAKIAIOSFODNN7EXAMPLE\n${GITHUB}\n${SLACK}\n${JWT}\nBearer ` +
        `abc123def456\n4111111111111111\nredis://u:pw1@h\naws_secret_access_key=${AWS_SECRET}`,
    });
    const { text: redacted, counts } = redactSecrets(text);
    expect(counts).toEqual({
      openai_key: 1,
      anthropic_key: 1,
      aws_access_key: 1,
      github_token: 1,
      slack_token: 1,
      jwt: 1,
      bearer_token: 1,
      card_number: 1,
      url_password: 1,
      aws_secret_key: 1,
    });
    expect(JSON.parse(redacted)).toEqual({
      all: 'first\n[REDACTED:openai_key]\n[REDACTED:anthropic_key]\n[REDACTED:aws_access_key]\n[REDACTED:github_token]\n[REDACTED:slack_token]\n[REDACTED:jwt]\nBearer [REDACTED:bearer_token]\n[REDACTED:card_number]\nredis://u:[REDACTED:url_password]@h\naws_secret_access_key=[REDACTED:aws_secret_key]',
    });
    expect(redactSecrets(JSON.stringify({ aws_secret_access_key: AWS_SECRET })).text).toBe(
      '{"aws_secret_access_key":"[REDACTED:aws_secret_key]"}',
    );
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

describe('redactSecrets: email addresses', () => {
  it('redacts an address wherever it stands', () => {
    expect(redactSecrets('Contact alice.smith@example.com today').text).toBe('Contact [REDACTED:email_address] today');
    expect(redactSecrets('<bob+memo@mail.example.co.uk>, "c_d@x-y.io".').text).toBe(
      '<[REDACTED:email_address]>, "[REDACTED:email_address]".',
    );
    // A mailto: link holds a person's address, not a URL's user name.
    expect(redactSecrets('mailto:eve@example.org').counts).toEqual({ email_address: 1 });
  });

  it('takes accented addresses whole, and keeps JSON text valid (never starts on an escape letter)', () => {
    expect(redactSecrets('jörg@example.com, alice@münchen.de').text).toBe(
      '[REDACTED:email_address], [REDACTED:email_address]',
    );
    for (const message of ['could not notify\nbob@example.com', 'tab\tbob@example.com', 'é\u00e9bob@example.com']) {
      const json = JSON.stringify({ message });
      const redacted = redactSecrets(json).text;
      expect(() => JSON.parse(redacted), redacted).not.toThrow();
    }
    expect(redactSecrets(JSON.stringify({ m: 'x\nbob@example.com' })).text).toBe(
      '{"m":"x\\n[REDACTED:email_address]"}',
    );
  });

  it('keeps what only looks like one: SSH remotes, package versions, decorators, local hosts', () => {
    for (const text of [
      'git@github.com:org/repo.git',
      'Git@gitlab.example.com:org/repo.git',
      'npm i @scope/pkg@1.2.3 lodash@4.17.21',
      '@app.route("/")',
      'root@localhost',
      'a@b.c',
    ])
      expect(redactSecrets(text).text).toBe(text);
  });

  it('takes addresses run together as one, so a second pass changes nothing (idempotent)', () => {
    const once = redactSecrets('alice.smith+memo@example.co.ukalice.smith+memo@example.co.uk').text;
    expect(once).toBe('[REDACTED:email_address]');
    for (const text of ['bob@example.com.', 'a@b.co@c.de and x@y.zz@', 'mail: c@d.org;e@f.net'])
      expect(redactSecrets(redactSecrets(text).text).text).toBe(redactSecrets(text).text);
  });

  it('stays linear on long runs that never finish an address', () => {
    const text = `${'a.'.repeat(20_000)}@${'b-'.repeat(20_000)}`;
    expect(redactSecrets(text).text).toBe(text);
  });

  // A run of ever-longer address tails: quadratic before (about 23 s for 200,000 characters,
  // freezing a server for every tenant); linear now, well within the test's own timeout.
  it('stays linear on a run of address fragments, as long as a prompt may be', () => {
    const text = '@_@-.cd-'.repeat(50_000);
    expect(redactSecrets(text).counts).toEqual({});
    const addresses = 'x@y.zz@'.repeat(30_000);
    expect(redactSecrets(addresses).text).not.toContain('x@y.zz');
  }, 10_000);
});

describe('redactSecrets: combined input', () => {
  const mixed = `aws AKIAIOSFODNN7EXAMPLE\ngh ${GITHUB} and ${GITHUB}\ncard 4111111111111111\n${PEM}`;

  it('redacts several secrets in one text and counts each kind', () => {
    const { text, counts } = redactSecrets(mixed);
    expect(text).toBe(
      'aws [REDACTED:aws_access_key]\ngh [REDACTED:github_token] and [REDACTED:github_token]\ncard ' +
        '[REDACTED:card_number]\n[REDACTED:private_key]',
    );
    expect(counts).toEqual({ private_key: 1, aws_access_key: 1, github_token: 2, card_number: 1 });
  });

  it('returns the text unchanged with empty counts when nothing matches', () => {
    expect(redactSecrets('nothing secret here')).toEqual({ text: 'nothing secret here', counts: {} });
  });

  it('is idempotent', () => {
    const once = redactSecrets(
      `${mixed}\nBearer abc123def456 ${JWT} ${OPENAI} ${SLACK} ${ANTHROPIC} ` +
        `aws_secret_access_key=${AWS_SECRET} redis://u:p4ss@h:1/0 https://h/?pwd=x`,
    );
    expect(once.counts).toMatchObject({ anthropic_key: 1, aws_secret_key: 1, url_password: 2 });
    const twice = redactSecrets(once.text);
    expect(twice.text).toBe(once.text);
    expect(twice.counts).toEqual({});
  });

  // No timed assertion: a pattern that backtracks on these inputs takes minutes on a
  // megabyte, far past the test timeout, while linear matching takes milliseconds. How fast
  // it really is belongs to the bench.
  it('finishes on 1 MB of adversarial input for every pattern', () => {
    const inputs = [
      'eyJ'.repeat(350_000),
      'sk-'.repeat(350_000),
      'sk-ant-'.repeat(150_000),
      `-----BEGIN ${'A '.repeat(20)}PRIVATE KEY-----`.repeat(20_000),
      '1 '.repeat(500_000),
      `Bearer ${'a'.repeat(1_000_000)}`,
      '<'.repeat(1_000_000),
      'a'.repeat(1_000_000),
      'a:'.repeat(500_000),
      'x://'.repeat(250_000),
      `x://${'u:'.repeat(500_000)}`,
      `x://u:${'p'.repeat(1_000_000)}`,
      '?password='.repeat(100_000),
      'secret_key='.repeat(100_000),
      'password='.repeat(100_000),
      `${'a'.repeat(30)}token:`.repeat(30_000),
      `Authorization: Basic ${'A'.repeat(1_000_000)}`,
      `"password": "${'a1'.repeat(500_000)}`,
      `aws_secret_access_key=${'A'.repeat(1_000_000)}`,
      '\\nsk-'.repeat(200_000),
      '\\n1'.repeat(300_000),
      `\\n${'1'.repeat(1_000_000)}x`,
      `${'QUJD\n'.repeat(200_000)}-----END PRIVATE KEY-----`,
      'QUJD\n-----END PRIVATE KEY-----'.repeat(30_000),
      `${'QUJD '.repeat(200_000)}-----END PRIVATE KEY-----`,
      `<password>${'a'.repeat(1_000_000)}`,
      '<password>a'.repeat(90_000),
      'password is '.repeat(90_000),
      `${'A_'.repeat(500_000)}PASS=`,
      "define('password', ".repeat(50_000),
      '{"name":"password","value":'.repeat(40_000),
    ];
    for (const input of inputs) {
      const once = redactSecrets(input).text;
      expect(redactSecrets(once).text).toBe(once);
    }
  }, 30_000);
});

describe('redactSecrets: labelled values that hold escapes and punctuation', () => {
  it.each([
    ['DB_PASSWORD=Kd81\\9!Lm', 'DB_PASSWORD=[REDACTED:labelled_secret]'],
    ['password: Kd81,9;x&y<z>"q\'r end', 'password: [REDACTED:labelled_secret] end'],
    ['"password": "Kd81Kd81#q\\\\z!"', '"password": "[REDACTED:labelled_secret]"'],
    ['{"db_password":"Kd81\\"Kd81!"}', '{"db_password":"[REDACTED:labelled_secret]"}'],
    ['password=abc123 and then', 'password=[REDACTED:labelled_secret] and then'],
  ])('redacts all of the value in %j', (text, redacted) => {
    expect(redactSecrets(text).text).toBe(redacted);
    expect(redactSecrets(redacted).text).toBe(redacted);
  });

  it('keeps JSON text valid: a value ends at the quote that closes its string', () => {
    const json = JSON.stringify({ note: 'DB_PASSWORD=Kd81\\9"x!', next: 'kept' });
    const redacted = redactSecrets(json).text;
    expect(JSON.parse(redacted)).toEqual({ note: 'DB_PASSWORD=[REDACTED:labelled_secret]', next: 'kept' });
  });

  it.each([
    ['DB_PASSWORD=Kd81(9)x!', 'DB_PASSWORD=[REDACTED:labelled_secret]'],
    ['{"password": "Kd81(x)!"}', '{"password": "[REDACTED:labelled_secret]"}'],
    ['{\\"password\\": \\"Kd81\\\\\\\\z!\\"}', '{\\"password\\": \\"[REDACTED:labelled_secret]\\"}'],
    ['https://x.test/?password=Kd81&9&next=/', 'https://x.test/?password=[REDACTED:url_password]&next=/'],
  ])('redacts all of %j (a parenthesis, JSON inside JSON, an & in a query value)', (text, redacted) => {
    expect(redactSecrets(text).text).toBe(redacted);
  });

  it('takes a bare value longer than a thousand characters whole, such as a session token', () => {
    const token = `IQoJb3JpZ2luX2Vj${'Kd81/+'.repeat(250)}`;
    expect(redactSecrets(`AWS_SESSION_TOKEN=${token} next`).text).toBe(
      'AWS_SESSION_TOKEN=[REDACTED:labelled_secret] next',
    );
  });

  it('keeps JSON text valid and redaction idempotent on random labelled values', () => {
    const pieces = [
      'password=',
      'token: ',
      '"api_key": "',
      "secret='",
      'Kd81',
      '\\',
      '"',
      "'",
      ',',
      ';',
      '&',
      ' ',
      '\n',
    ];
    const next = seededRandom(0x5eed81);
    for (let index = 0; index < 5_000; index++) {
      const text = Array.from(
        { length: 1 + Math.floor(next() * 6) },
        () => pieces[Math.floor(next() * pieces.length)],
      ).join('');
      const json = JSON.stringify({ a: text, b: ['kept', { c: text }] });
      const redacted = redactSecrets(json).text;
      expect(() => JSON.parse(redacted), `${json} -> ${redacted}`).not.toThrow();
      expect(redactSecrets(redacted).text).toBe(redacted);
    }
  });

  it("keeps a connection string's next field", () => {
    expect(redactSecrets('Server=db;Password=Kd81&9;x;User Id=svc').text).toBe(
      'Server=db;Password=[REDACTED:url_password];User Id=svc',
    );
  });
});

describe('redactSecrets: secret keys and Authorization headers', () => {
  it.each([
    "SECRET_KEY = 'django-insecure-Ka81Ka81xq'",
    'JWT_SECRET_KEY=Ka81Ka81Ka81xq',
    'secret_key: Ka81Ka81Ka81xq!',
    '"secretKey": "Ka81Ka81Ka81xq"',
  ])('redacts the value of %j', (text) => {
    expect(redactSecrets(text).text).not.toContain('Ka81Ka81');
    expect(redactSecrets(text).counts).toEqual({ labelled_secret: 1 });
  });

  it("redacts any token after an Authorization header's scheme", () => {
    expect(redactSecrets('Authorization: Bearer kcaaaaaaaaaaaaaaaaaaaaaakc').text).toBe(
      'Authorization: Bearer [REDACTED:auth_header]',
    );
    expect(redactSecrets('{"authorization":"bearer kcaaaaaaaaaaaa"}').text).toBe(
      '{"authorization":"bearer [REDACTED:auth_header]"}',
    );
  });
});

describe('redactAndCut', () => {
  const AWS = `wJalrXUtnFEMIK7MDENG${'bPxRfiCYEXAMPLEKEY12'}`;

  it('redacts before cutting, so no part of a secret is left', () => {
    const text = `${'x'.repeat(20)} aws_secret_access_key=${AWS}`;
    expect(redactAndCut(text, 60, '…')).toBe(`${'x'.repeat(20)} aws_secret_access_key=…`);
    expect(redactAndCut(text, 100, '…')).toBe(`${'x'.repeat(20)} aws_secret_access_key=[REDACTED:aws_secret_key]`);
  });

  it('cuts before a placeholder rather than through it, and adds the ending only when it cut', () => {
    expect(redactAndCut(`ab sk-${'Ab3_'.repeat(8)}`, 10, '…')).toBe('ab …');
    expect(redactAndCut('short', 10, '…')).toBe('short');
    expect(redactAndCut('😀😀😀', 3, '…')).toBe('😀…');
  });

  it('reads no further than it needs on a huge text, and still says it cut', () => {
    const text = `${'a '.repeat(10)}${'b'.repeat(5_000_000)}`;
    expect(redactAndCut(text, 30, '…')).toBe(`${'a '.repeat(10)}${'b'.repeat(10)}…`);
    const shrunk = `-----BEGIN PRIVATE KEY-----\n${'M'.repeat(100_000)}`;
    expect(redactAndCut(shrunk, 40, '…')).toBe('[REDACTED:private_key]…');
  });
});
