import { describe, expect, it } from 'vitest';
import { isLabelledSecret, labelsSecret, redactSecrets } from './redact-secrets.js';
import { redactJsonText, redactValue } from './redact-value.js';
import { redactWorkingMemoryValue } from './working-memory.js';
import { seededRandom } from '../../test/support/seeded-random.js';

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

describe('redactValue: strings read without invisible characters', () => {
  const hidden = `sk-\u200Bproj-${'Zq7'.repeat(10)}`;

  it('redacts a key split by an invisible character only with readWithoutInvisible', () => {
    const value = { note: `key ${hidden}`, list: [hidden], emoji: 'coder 👩\u200D💻', step: 2 };
    expect(redactValue(value)).toBe(value);
    expect(redactValue(value, { readWithoutInvisible: true })).toEqual({
      note: 'key [REDACTED:openai_key]',
      list: ['[REDACTED:openai_key]'],
      emoji: 'coder 👩\u200D💻',
      step: 2,
    });
    expect(redactValue(`key ${hidden}`, { readWithoutInvisible: true })).toBe('key [REDACTED:openai_key]');
  });

  it('reads strings without invisible characters at any depth', () => {
    let value: unknown = { note: `key ${hidden}` };
    for (let depth = 0; depth < 500; depth++) value = { inner: value };
    let node = redactValue(value, { readWithoutInvisible: true }) as Record<string, unknown>;
    for (let depth = 0; depth < 500; depth++) node = node['inner'] as Record<string, unknown>;
    expect(node).toEqual({ note: 'key [REDACTED:openai_key]' });
  });

  it('keeps strings with invisible characters but no hidden secret as given, the same object too', () => {
    const value = { emoji: 'coder 👩\u200D💻', soft: 'hy\u00ADphen', list: ['zero\u200Bwidth'] };
    expect(redactValue(value, { readWithoutInvisible: true })).toBe(value);
    const mixed = { emoji: 'coder 👩\u200D💻', key: OPENAI };
    expect(redactValue(mixed, { readWithoutInvisible: true })).toEqual({
      emoji: 'coder 👩\u200D💻',
      key: '[REDACTED:openai_key]',
    });
  });
});

describe('redactValue: the one-pass check', () => {
  // The fragments a value is built from: secrets of every kind, the characters near which
  // matching changes (line breaks, tabs, quotes, backslashes), and half-secrets that only
  // match when joined.
  const FRAGMENTS = [
    OPENAI,
    `sk-ant-api03-${'Xy9_'.repeat(6)}`,
    ['eyJhbGciOiJIUzI1NiJ9', 'eyJzdWIiOiIxIn0', 'sig_-x'].join('.'),
    `ghp_${'a1B2c3'.repeat(6)}`,
    'xoxb-1234567890-abcdefghij',
    'AKIA' + 'ABCDEFGHIJKLMNOP',
    `aws_secret_access_key =\t${'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'}`,
    `"SecretAccessKey": "${'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'}"`,
    'postgres://user:hunter2@db.example',
    '?password=hunter2&x=1',
    'Bearer abc123def456',
    `sk_live_${'Ab1'.repeat(5)}`,
    `glpat-${'Ab1_'.repeat(6)}`,
    `AIza${'Ab1_-'.repeat(7)}`,
    `hf_${'Ab1'.repeat(11)}`,
    `npm_${'Ab1'.repeat(12)}`,
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
    `sq0atp-${'Sq1_'.repeat(6)}`,
    `sq0csp-${'Sq2-'.repeat(11)}`,
    `EAAA${'Sq3x'.repeat(16)}`,
    'Bearer abcdEFGH',
    'x-api-key: sk-abcdefghij',
    `Private-Lines: 1\nAAAAIF${'Prv9'.repeat(14)}`,
    `Private-MAC: ${'a1b2c3d4'.repeat(8)}`,
    'DB_PASSWORD=Tr0ub4dor-9',
    'pwd=Hunter2024!',
    '"api_key": "k3y-value!"',
    'password: required',
    '4111 1111 1111 1111',
    '4111-1111-1111-1112',
    'alice.smith+memo@example.co.uk',
    'git@github.com:org/repo.git',
    '@scope/pkg@1.2.3',
    '-----BEGIN PRIVATE KEY-----\nMIIE',
    '-----END PRIVATE KEY-----',
    'sk-',
    'abcdefghijklmnopqrstuvwxyz',
    '4111 1111',
    '1111 1111',
    'bearer',
    ' ',
    '\t',
    '\n',
    '"',
    '\\',
    'plain words',
    '[REDACTED:openai_key]',
    'db_password',
    'secretKey',
    'pwd',
    '/home/alice',
    'Kd81"q\\z!',
  ];

  /**
   * The reference: every string (and key) redacted on its own, and read with the nearest key
   * above it that labels a secret (`label`).
   */
  function oracle(value: unknown, label?: string): unknown {
    if (typeof value === 'string') return underLabel(redactSecrets(value).text, label);
    if (Array.isArray(value)) return value.map((item) => oracle(item, label));
    if (value !== null && typeof value === 'object') {
      // Keys left as they are keep their names; two redacted alike stay two (" (2)", " (3)", …).
      const entries = Object.entries(value);
      const taken = new Set(entries.map(([key]) => key).filter((key) => redactSecrets(key).text === key));
      return Object.fromEntries(
        entries.map(([key, item]) => {
          const redacted = redactSecrets(key).text;
          let next = redacted;
          if (redacted !== key) {
            for (let copy = 2; taken.has(next); copy++) next = `${redacted} (${copy})`;
            taken.add(next);
          }
          const below = labelsSecret(key) ? key : label;
          if (typeof item !== 'string') return [next, oracle(item, below)];
          return [next, underLabel(asLabelled(key, redactSecrets(item).text), below === key ? undefined : below)];
        }),
      );
    }
    return value;
  }

  function underLabel(value: string, label: string | undefined): string {
    return label === undefined ? value : asLabelled(label, value);
  }

  /**
   * A string value as the JSON text `{"key":"value"}` redacts it; a value its key labels a
   * secret is decided on as it is (the JSON text's placeholder kept when it took it whole).
   */
  function asLabelled(key: string, value: string): string {
    const label = redactSecrets(key).text;
    const asText = labelledAsText(label, value);
    if (!isLabelledSecret(label, value)) return asText;
    return /^\[REDACTED:[a-z_]+\]$/.test(asText) ? asText : '[REDACTED:labelled_secret]';
  }

  function labelledAsText(label: string, value: string): string {
    const text = `{${JSON.stringify(label)}:${JSON.stringify(value)}}`;
    const redacted = redactSecrets(text).text;
    if (redacted === text) return value;
    try {
      return Object.values(JSON.parse(redacted) as object)[0] as string;
    } catch {
      return value; // a rule ran through the JSON's quotes: the value as redacted on its own
    }
  }

  function randomValue(next: () => number, depth: number): unknown {
    const text = (): string =>
      Array.from({ length: 1 + Math.floor(next() * 3) }, () => FRAGMENTS[Math.floor(next() * FRAGMENTS.length)]).join(
        next() < 0.5 ? '' : ' ',
      );
    const pick = next();
    if (depth > 3 || pick < 0.45) return text();
    if (pick < 0.55) return Math.floor(next() * 1e6);
    if (pick < 0.75) return Array.from({ length: Math.floor(next() * 4) }, () => randomValue(next, depth + 1));
    return Object.fromEntries(
      Array.from({ length: Math.floor(next() * 4) }, () => [text(), randomValue(next, depth + 1)]),
    );
  }

  it('redacts exactly what redacting each string and key on its own would, on 3,000 random values', () => {
    const next = seededRandom(0x2545f491);
    let unchanged = 0;
    for (let index = 0; index < 3_000; index++) {
      const value = { [`k${index}`]: randomValue(next, 0) };
      const expected = oracle(value);
      expect(redactValue(value, { keys: true })).toEqual(expected);
      if (JSON.stringify(expected) === JSON.stringify(value)) unchanged++;
    }
    // Both branches are exercised: values that need nothing and values that do.
    expect(unchanged).toBeGreaterThan(100);
    expect(unchanged).toBeLessThan(2_900);
  });

  it('redacts a value its key labels a secret, as the same JSON text is redacted', () => {
    const aws = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
    const value = {
      cfg: { api_key: 'k3y-value!', db_password: 'Tr0ub4dor-9', SecretAccessKey: aws, region: 'eu-west-1' },
      form: { password: 'required', token: 'abc' },
    };
    expect(redactValue(value)).toEqual({
      cfg: {
        api_key: '[REDACTED:labelled_secret]',
        db_password: '[REDACTED:labelled_secret]',
        SecretAccessKey: '[REDACTED:aws_secret_key]',
        region: 'eu-west-1',
      },
      form: value.form,
    });
    expect(redactJsonText(JSON.stringify({ AccessKeyId: 'x', SecretAccessKey: aws }))).toBe(
      '{"AccessKeyId":"x","SecretAccessKey":"[REDACTED:aws_secret_key]"}',
    );
  });

  it('redacts the cookies of a Cookie or Set-Cookie header given as an object, as the header text is', () => {
    const headers = {
      Cookie: 'sessionid=9f8e7d6c5b4a3928; theme=dark',
      'set-cookie': 'sid=9f8e7d6c5b4a3928; Path=/',
      Accept: '*/*',
    };
    expect(redactValue({ headers })).toEqual({
      headers: {
        Cookie: 'sessionid=[REDACTED:session_cookie]; theme=dark',
        'set-cookie': 'sid=[REDACTED:session_cookie]; Path=/',
        Accept: '*/*',
      },
    });
    expect(redactJsonText(JSON.stringify({ Cookie: 'theme=dark' }))).toBe('{"Cookie":"theme=dark"}');
  });

  it('leaves a secret split across two strings alone, as redacting each string does', () => {
    const value = { a: 'sk-', b: 'proj-' + 'Ab3_'.repeat(8) };
    expect(redactValue(value)).toBe(value);
  });

  it('keeps two keys that redact alike as two keys, none of their values lost', () => {
    const value = { 'ann@example.com': 'admin', 'bob@example.org': 'owner', plain: 1 };
    expect(redactValue(value, { keys: true })).toEqual({
      '[REDACTED:email_address]': 'admin',
      '[REDACTED:email_address] (2)': 'owner',
      plain: 1,
    });
    // A key already named like a placeholder keeps its name and value.
    expect(
      redactValue({ 'ann@mail.example.org': 'admin', '[REDACTED:email_address]': 'owner' }, { keys: true }),
    ).toEqual({ '[REDACTED:email_address] (2)': 'admin', '[REDACTED:email_address]': 'owner' });
  });

  it('redacts keys only when asked, and keeps a "__proto__" key a plain key', () => {
    const value = JSON.parse(`{"__proto__": {"x": 1}, "${OPENAI}": "v"}`) as Record<string, unknown>;
    expect(Object.keys(redactValue(value))).toEqual(['__proto__', OPENAI]);
    const redacted = redactValue(value, { keys: true });
    expect(Object.keys(redacted)).toEqual(['__proto__', '[REDACTED:openai_key]']);
    expect(Object.getPrototypeOf(redacted)).toBe(Object.prototype);
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

describe('redactValue: labelled values decided on the value itself', () => {
  it('redacts a password holding a backslash or a quote, in a value and in JSON text', () => {
    expect(JSON.stringify(redactValue({ password: 'Kd81Kd81#q\\z!' }))).not.toContain('Kd81Kd81');
    expect(JSON.stringify(redactValue({ password: 'Kd81"Kd81#q' }))).not.toContain('Kd81');
    expect(redactJsonText(JSON.stringify({ db_password: 'Kd81Kd81#q\\z!' }))).toBe(
      '{"db_password":"[REDACTED:labelled_secret]"}',
    );
  });

  it('redacts a long or multi-line value its key labels a secret', () => {
    expect(JSON.stringify(redactValue({ api_key: `Kd81${'x'.repeat(400)}` }))).not.toContain('Kd81');
    expect(JSON.stringify(redactValue({ token: 'Kd81Kd81\nsecond line' }))).not.toContain('Kd81');
  });

  it('takes secret_key, secretKey and JWT_SECRET_KEY for labels', () => {
    const value = { secret_key: 'Ka81Ka81Ka81xq', secretKey: 'Ka81Ka81Ka81xq', JWT_SECRET_KEY: 'Ka81Ka81Ka81xq' };
    expect(JSON.stringify(redactValue(value))).not.toContain('Ka81');
  });
});

describe('redactValue: a pwd key', () => {
  const L = '[REDACTED:labelled_secret]';
  /** `value` as its JSON text is redacted. */
  const asText = (value: object): unknown => JSON.parse(redactSecrets(JSON.stringify(value)).text);

  it('redacts the password a pwd or passwd key labels, as the same JSON text is redacted', () => {
    const value = { pwd: 'hunter2secret', db_pwd: 'Tr0ub4dor&3', Pwd: 'Kd81"q\\z!', passwd: 'hunter2secret' };
    const expected = { pwd: L, db_pwd: L, Pwd: L, passwd: L };
    expect(redactValue(value)).toEqual(expected);
    expect(asText(value)).toEqual(expected);
    expect(JSON.parse(redactJsonText(JSON.stringify(value)))).toEqual(expected);
  });

  it('keeps a working directory under a pwd key, and a placeholder word, as the JSON text does', () => {
    const value = {
      pwd: '/home/alice2',
      PWD: 'C:\\work\\repo1',
      OLDPWD: '~',
      build: { pwd: '../out2' },
      old_pwd: 'required',
    };
    expect(redactValue(value)).toBe(value);
    expect(asText(value)).toEqual(value);
  });
});

describe('redactValue: a label carried to the strings under it', () => {
  const L = '[REDACTED:labelled_secret]';

  it('decides every string in an array or object under a labelled key as labelled by it', () => {
    expect(redactValue({ password: ['Hunter2024', 'Other2025!'] })).toEqual({ password: [L, L] });
    expect(redactValue({ db: { password: { current: 'Hunter2024', previous: ['Old2023!'] } } })).toEqual({
      db: { password: { current: L, previous: [L] } },
    });
    expect(redactWorkingMemoryValue('password', ['Hunter2024', 'Other2025!'])).toEqual([L, L]);
    expect(redactWorkingMemoryValue('db', { password: { current: 'Hunter2024' } })).toEqual({
      password: { current: L },
    });
  });

  it('keeps placeholder words and references under a labelled key, and strings under other keys', () => {
    const value = { password: ['required', { hint: '${DB_PASSWORD}' }], tokens: ['abc123def456'], n: [1] };
    expect(redactValue(value)).toBe(value);
  });

  it('keeps JSON text with a labelled array valid JSON', () => {
    const text = redactJsonText('{"password":["Hunter2024"],"user":"svc"}', { keys: true });
    expect(JSON.parse(text)).toEqual({ password: [L], user: 'svc' });
  });

  it('redacts the value of a name/value pair whose name labels a secret', () => {
    const env = [
      { name: 'DB_PASSWORD', value: 'Tr0ub4dor&3' },
      { Name: 'api_token', Value: ['abc123def456'] },
      { name: 'DB_HOST', value: 'db.internal1' },
      { name: 'password', value: 'required' },
    ];
    expect(redactValue({ env })).toEqual({
      env: [
        { name: 'DB_PASSWORD', value: L },
        { Name: 'api_token', Value: [L] },
        { name: 'DB_HOST', value: 'db.internal1' },
        { name: 'password', value: 'required' },
      ],
    });
  });
});

describe('redactValue: a reading without invisible characters loses no secret', () => {
  const AWS = 'AKIAIOSFODNN7EXAMPLE';
  const Z = '\u200B';

  it('keeps what the text as given found when the reading without them finds more', () => {
    // Without the zero-width space the two ids run together and are no id; three keys show.
    const text = `${AWS}${Z}${AWS} then ${['a', 'b', 'c'].map((c) => `sk-${Z}${c.repeat(24)}`).join(' ')}`;
    const redacted = redactValue(text, { readWithoutInvisible: true });
    expect(redacted).toBe(
      '[REDACTED:aws_access_key][REDACTED:aws_access_key] then [REDACTED:openai_key] [REDACTED:openai_key] ' +
        '[REDACTED:openai_key]',
    );
    expect(redactValue({ note: text }, { readWithoutInvisible: true }).note).toBe(redacted);
  });

  it('keeps what the reading without them found when the text as given finds part of it', () => {
    const text = `key sk-${'Ab3_'.repeat(6)}\u00AD${'Zq7'.repeat(4)} end`;
    expect(redactValue(text, { readWithoutInvisible: true })).toBe('key [REDACTED:openai_key] end');
  });
});

describe('redactValue: deep values', () => {
  const deep = (levels: number, leaf: unknown): unknown => {
    let value = leaf;
    for (let level = 0; level < levels; level++) value = [value];
    return value;
  };

  it('redacts a value nested deeper than the stack allows, without throwing', () => {
    const value = { note: OPENAI, deep: deep(20_000, OPENAI) };
    const redacted = redactValue(value);
    expect(redacted.note).toBe('[REDACTED:openai_key]');
    let leaf: unknown = redacted.deep;
    while (Array.isArray(leaf)) leaf = leaf[0];
    expect(leaf).toBe('[REDACTED:openai_key]');
    const quiet = { deep: deep(20_000, 'plain') };
    expect(redactValue(quiet, { keys: true })).toBe(quiet);
  });

  it('redacts a part shared twice once, and refuses a value that contains itself only when it needs redacting', () => {
    const shared = { key: OPENAI };
    const redacted = redactValue({ a: shared, b: [shared] });
    expect(redacted.a).toEqual({ key: '[REDACTED:openai_key]' });
    expect(redacted.b[0]).toBe(redacted.a);
    const cyclic: Record<string, unknown> = { note: 'plain' };
    cyclic['self'] = cyclic;
    expect(redactValue(cyclic)).toBe(cyclic);
    cyclic['key'] = OPENAI;
    expect(() => redactValue(cyclic)).toThrow(TypeError);
  });

  it('redacts deep JSON text as text', () => {
    const text = `{"action":"set","value":${'['.repeat(8000)}"${OPENAI}"${']'.repeat(8000)}}`;
    const redacted = redactJsonText(text);
    expect(redacted).not.toContain(OPENAI);
    expect(redacted).toContain('[REDACTED:openai_key]');
  });
});
