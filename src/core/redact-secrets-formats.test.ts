/**
 * Formats an attacker review found passing through unchanged: URL-encoded Authorization
 * headers, cookies, passwords on command lines, webhook URLs, signed-URL signatures, PuTTY
 * keys, SendGrid keys and short credentials after a header name; and the prose like them that
 * must stay as it is.
 */
import { describe, expect, it } from 'vitest';
import { redactSecrets } from './redact-secrets.js';

// Built from pieces so the fixtures do not look like live credentials to secret scanners.
const SENDGRID = `SG.${'Ab1_'.repeat(5)}cd.${'Ef2-'.repeat(10)}ghi`;
const SLACK_HOOK = `https://hooks.slack.com/services/T0${'1A2B3C4'}/B0${'5D6E7F8'}/${'Xy9Z'.repeat(6)}`;
const DISCORD_HOOK = `https://discord.com/api/webhooks/123456789012345678/${'Ab1-Cd2_'.repeat(8)}ef`;
const MAC = 'a1b2c3d4'.repeat(8);
const PUTTY_PUBLIC = ['Public-Lines: 2', `AAAAC3NzaC1lZDI1NTE5AAAAI${'Pub1'.repeat(8)}`, 'Pub2Pub2Pub2'];
const PUTTY_PRIVATE = ['Private-Lines: 2', `AAAAIF${'Prv9'.repeat(14)}`, 'Prv8Prv8Prv8Prv8='];
const PUTTY = [
  'PuTTY-User-Key-File-3: ssh-ed25519',
  'Encryption: none',
  'Comment: eddsa-key-20260101',
  ...PUTTY_PUBLIC,
  ...PUTTY_PRIVATE,
  `Private-MAC: ${MAC}`,
].join('\n');

/** Each text and what it redacts to. */
function expectRedacted(cases: ReadonlyArray<readonly [string, string]>): void {
  for (const [text, redacted] of cases) {
    expect(redactSecrets(text).text).toBe(redacted);
    expect(redactSecrets(redacted).text).toBe(redacted);
  }
}

function expectKept(texts: readonly string[]): void {
  for (const text of texts) expect(redactSecrets(text)).toEqual({ text, counts: {} });
}

describe('redactSecrets: URL-encoded Authorization headers', () => {
  it('redacts a Bearer token after an encoded space, which stays encoded', () => {
    expect(redactSecrets('authorization=Bearer%20Zq8Lm2Np4Rt6Vx9BcDfGh')).toEqual({
      text: 'authorization=Bearer%20[REDACTED:bearer_token]',
      counts: { bearer_token: 1 },
    });
  });

  it('redacts the credentials of an encoded header up to the next parameter', () => {
    expectRedacted([
      [
        '/cb?authorization=Basic%20dXNlcjpwYXNz%3D%3D&page=2',
        '/cb?authorization=Basic%20[REDACTED:auth_header]&page=2',
      ],
      ['q=authorization%3DBearer%20abcdefghij', 'q=authorization%3DBearer%20[REDACTED:auth_header]'],
      ['authorization=Token+abcdefghij', 'authorization=Token+[REDACTED:auth_header]'],
    ]);
  });

  it('keeps a scheme named in a link without credentials', () => {
    expectKept(['see ?topic=Bearer%20authentication', 'authorization=Basic&x=1', 'Bearer%20tokens explained']);
  });
});

describe('redactSecrets: cookies', () => {
  it('redacts the values of a Cookie header and the cookie of a Set-Cookie header', () => {
    expect(redactSecrets('Cookie: sessionid=9f8e7d6c5b4a39281706f5e4d3c2b1a0')).toEqual({
      text: 'Cookie: sessionid=[REDACTED:session_cookie]',
      counts: { session_cookie: 1 },
    });
    expectRedacted([
      [
        'Set-Cookie: session=eyJhbGciOiJIUzI1NiJ9abcdefghijkl; HttpOnly',
        'Set-Cookie: session=[REDACTED:session_cookie]; HttpOnly',
      ],
      [
        'cookie: theme=dark; sessionid=9f8e7d6c5b4a3928; csrftoken=Qw7Er5Ty3Ui1; lang=en',
        'cookie: theme=dark; sessionid=[REDACTED:session_cookie]; csrftoken=[REDACTED:session_cookie]; lang=en',
      ],
      [
        'Set-Cookie: id=a3fWa9bC8dE7; Expires=Thu, 21 Oct 2027 07:28:00 GMT; Path=/; Secure',
        'Set-Cookie: id=[REDACTED:session_cookie]; Expires=Thu, 21 Oct 2027 07:28:00 GMT; Path=/; Secure',
      ],
      [
        `curl -H 'Cookie: sid=9f8e7d6c5b4a3928' https://x.test`,
        `curl -H 'Cookie: sid=[REDACTED:session_cookie]' https://x.test`,
      ],
      ['curl --cookie "sid=9f8e7d6c5b4a3928" x.test', 'curl --cookie "sid=[REDACTED:session_cookie]" x.test'],
      [
        '{"headers":{"Cookie":"sid=9f8e7d6c5b4a3928; a=1","Accept":"*/*"}}',
        '{"headers":{"Cookie":"sid=[REDACTED:session_cookie]; a=1","Accept":"*/*"}}',
      ],
    ]);
  });

  it('reads each header on a line as a second pass reads it (idempotent)', () => {
    for (const text of [
      'Cookie: sessionid=9f8e7d6c5b4a3928Cookie: &sig=Qw7Er5Ty3Ui1',
      'Cookie: sid=9f8e7d6c5b4a3928--cookie sid=Ab1-Cd2_Ab1-Cd2_',
      'x-api-key: Cookie: Set-Cookie: &sessionid=9f8e7d6c5b4a3928',
      'Cookie: a=1; Set-Cookie: sid=9f8e7d6c5b4a3928; Path=/abcdefghij',
    ]) {
      const once = redactSecrets(text).text;
      expect(redactSecrets(once).text).toBe(once);
    }
    expect(redactSecrets('Cookie: a=1; Set-Cookie: sid=9f8e7d6c5b4a3928; Path=/abcdefghij').text).toBe(
      'Cookie: a=1; Set-Cookie: sid=[REDACTED:session_cookie]; Path=/abcdefghij',
    );
  });

  it('keeps the word cookie in prose, short values and placeholders', () => {
    expectKept([
      'I ate a cookie: it was great',
      'The cookie: name=value pairs, separated by semicolons',
      'cookie: theme=dark; lang=en-GB',
      'Set-Cookie: session=<value>; Path=/',
      'Cookies: we use them for sessions',
      'cookie_name=sessionid',
    ]);
  });
});

describe('redactSecrets: passwords on command lines', () => {
  it('redacts the password of mysql, sshpass, docker login and redis-cli', () => {
    expect(redactSecrets('mysql -u root -pTr0ub4dor3x')).toEqual({
      text: 'mysql -u root -p[REDACTED:cli_password]',
      counts: { cli_password: 1 },
    });
    expectRedacted([
      ['mysqldump -uroot -proot app > app.sql', 'mysqldump -uroot -p[REDACTED:cli_password] app > app.sql'],
      [`mysql -h db -p'Tr0ub 4dor' -e "select 1"`, `mysql -h db -p'[REDACTED:cli_password]' -e "select 1"`],
      ['sshpass -p Tr0ub4dor3x ssh host', 'sshpass -p [REDACTED:cli_password] ssh host'],
      ['sshpass -v -p "raspberry" ssh pi@10.0.0.2', 'sshpass -v -p "[REDACTED:cli_password]" ssh pi@10.0.0.2'],
      ['docker login -u me -p Tr0ub4dor3x', 'docker login -u me -p [REDACTED:cli_password]'],
      ['podman login --password hunter22 quay.io', 'podman login --password [REDACTED:cli_password] quay.io'],
      ['docker login --password=Tr0ub4dor3x r.io', 'docker login --password=[REDACTED:cli_password] r.io'],
      ['redis-cli -h cache -p 6379 -a Tr0ub4dor3x ping', 'redis-cli -h cache -p 6379 -a [REDACTED:cli_password] ping'],
      [
        '{"command":"sshpass -p Tr0ub4dor3x ssh host","cwd":"/"}',
        '{"command":"sshpass -p [REDACTED:cli_password] ssh host","cwd":"/"}',
      ],
      ['{"command":"mysql -p\\"Tr0ub4dor\\" app"}', '{"command":"mysql -p\\"[REDACTED:cli_password]\\" app"}'],
    ]);
  });

  it('keeps -p where it is no password, and a password read from elsewhere', () => {
    expectKept([
      'use -p to print',
      'mkdir -p /tmp/x && git add -p',
      'ssh -p 2222 host',
      'docker run -p 8080:80 nginx',
      'mysql -u root -p app',
      'mysql -u root -p',
      'mysql -u root -P 3306 -h db',
      'mysql -e "select 1"; find . -print',
      'sshpass -f ~/.pw ssh -p 22 host',
      'sshpass -p to supply the password',
      'docker login -u me --password-stdin < token.txt',
      'docker login -p $TOKEN registry.example.com',
      'docker login -p "$(cat token.txt)"',
      'sshpass -p <password> ssh host',
      '{"cmd":"mysql -u root -p","next":"x"}',
    ]);
  });
});

describe('redactSecrets: webhook URLs', () => {
  it('redacts the path of a Slack or Discord webhook, the host kept', () => {
    expectRedacted([
      [SLACK_HOOK, 'https://hooks.slack.com/services/[REDACTED:slack_webhook]'],
      [
        `curl -X POST ${SLACK_HOOK.replace('services', 'workflows')} -d @m.json`,
        'curl -X POST https://hooks.slack.com/workflows/[REDACTED:slack_webhook] -d @m.json',
      ],
      [
        JSON.stringify({ url: SLACK_HOOK }).replaceAll('/', '\\/'),
        '{"url":"https:\\/\\/hooks.slack.com\\/services\\/[REDACTED:slack_webhook]"}',
      ],
      [DISCORD_HOOK, 'https://discord.com/api/webhooks/[REDACTED:discord_webhook]'],
      [
        DISCORD_HOOK.replace('discord.com/api/', 'discordapp.com/api/v10/'),
        'https://discordapp.com/api/v10/webhooks/[REDACTED:discord_webhook]',
      ],
    ]);
    expect(redactSecrets(DISCORD_HOOK).counts).toEqual({ discord_webhook: 1 });
  });

  it('keeps links to the webhook documentation', () => {
    expectKept([
      'https://hooks.slack.com/services/',
      'https://api.slack.com/messaging/webhooks',
      'https://discord.com/api/webhooks/{webhook.id}/{webhook.token}',
      'https://discord.com/developers/docs/resources/webhook',
    ]);
  });
});

describe('redactSecrets: signed URLs', () => {
  it('redacts an Azure SAS signature and S3 and GCS signatures, the other parameters kept', () => {
    expectRedacted([
      [
        'https://example.com/?sig=Zq8Lm2Np4Rt6Vx9BcDfGh&se=2025',
        'https://example.com/?sig=[REDACTED:url_signature]&se=2025',
      ],
      [
        'https://a.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sig=Zq8Lm2Np4Rt6Vx9BcDfGh%2Bab%2F%3D&spr=https',
        'https://a.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sig=[REDACTED:url_signature]&spr=https',
      ],
      [
        `https://b.s3.amazonaws.com/k?X-Amz-Expires=60&X-Amz-Signature=${'0a1b2c3d'.repeat(8)}`,
        'https://b.s3.amazonaws.com/k?X-Amz-Expires=60&X-Amz-Signature=[REDACTED:url_signature]',
      ],
      [
        'https%3A%2F%2Fa.test%2Fb%3Fsv%3D1%26sig%3DZq8Lm2Np4Rt6Vx9BcDfGh%26se%3D2',
        'https%3A%2F%2Fa.test%2Fb%3Fsv%3D1%26sig%3D[REDACTED:url_signature]%26se%3D2',
      ],
    ]);
  });

  it('keeps sig in other words and parameters, and values too short to be a signature', () => {
    expectKept([
      '?design=Zq8Lm2Np4Rt6Vx9BcDfGh',
      '&signal=Zq8Lm2Np4Rt6Vx9BcDfGh',
      'sig=Zq8Lm2Np4Rt6Vx9BcDfGh',
      '?sig=abc123',
      'the sig file and its signature',
    ]);
  });
});

describe('redactSecrets: PuTTY private keys', () => {
  it('redacts the private lines and MAC of a key file, its public lines kept', () => {
    const { text, counts } = redactSecrets(PUTTY);
    expect(text).toBe(
      [
        'PuTTY-User-Key-File-3: ssh-ed25519',
        'Encryption: none',
        'Comment: eddsa-key-20260101',
        ...PUTTY_PUBLIC,
        '[REDACTED:private_key]',
      ].join('\n'),
    );
    expect(counts).toEqual({ private_key: 1 });
    expectRedacted([
      [
        PUTTY.replaceAll('\n', '\r\n'),
        `${PUTTY.slice(0, PUTTY.indexOf('Private-Lines'))}[REDACTED:private_key]`.replaceAll('\n', '\r\n'),
      ],
      // Cut short: the private lines to the end.
      [
        'PuTTY-User-Key-File-2: ssh-rsa\nPrivate-Lines: 14\nAAAAgQCw8Jk3hUOqK3b7dTkZ5k',
        'PuTTY-User-Key-File-2: ssh-rsa\n[REDACTED:private_key]',
      ],
      // The rest of a key read in pieces: the private lines before its MAC line.
      [`${PUTTY_PRIVATE.slice(1).join('\n')}\nPrivate-MAC: ${MAC}`, '[REDACTED:private_key]'],
    ]);
  });

  it('redacts a key file inside JSON text, which stays JSON', () => {
    const redacted = redactSecrets(JSON.stringify({ path: 'id.ppk', content: PUTTY })).text;
    expect(JSON.parse(redacted)).toEqual({
      path: 'id.ppk',
      content: `${PUTTY.slice(0, PUTTY.indexOf('Private-Lines'))}[REDACTED:private_key]`,
    });
  });

  it('keeps the field names in prose', () => {
    expectKept([
      'Private-Lines: 14 says how many lines follow',
      'Private-Lines: 14\nThe private lines follow.',
      'the Private-MAC: field checks them',
    ]);
  });
});

describe('redactSecrets: SendGrid keys', () => {
  it('redacts a SendGrid key, bare or labelled', () => {
    expect(redactSecrets(`key ${SENDGRID} ok`)).toEqual({
      text: 'key [REDACTED:sendgrid_key] ok',
      counts: { sendgrid_key: 1 },
    });
    expectRedacted([[`SENDGRID_API_KEY=${SENDGRID}`, 'SENDGRID_API_KEY=[REDACTED:sendgrid_key]']]);
  });

  it('keeps text shaped only partly like one', () => {
    expectKept(['SG.short.value', `SG.${'a'.repeat(22)}.${'b'.repeat(42)}`, `cfg.${SENDGRID.slice(0, 30)}`]);
  });
});

describe('redactSecrets: a credential after a header name', () => {
  it('redacts a value without digits after an API-key or token header', () => {
    expect(redactSecrets('x-api-key: sk-abcdefghij')).toEqual({
      text: 'x-api-key: [REDACTED:labelled_secret]',
      counts: { labelled_secret: 1 },
    });
    expectRedacted([
      ['curl -H "X-Auth-Token: abc_defghij" x.test', 'curl -H "X-Auth-Token: [REDACTED:labelled_secret]" x.test'],
      ['PRIVATE-TOKEN: AbCdEfGhIjKl', 'PRIVATE-TOKEN: [REDACTED:labelled_secret]'],
    ]);
  });

  it('keeps a word or a placeholder after the header name', () => {
    expectKept([
      'x-api-key: header',
      'X-Api-Key: Authentication is needed',
      'x-api-key: required',
      'x-api-key: <your key>',
      'x-api-key: abc',
    ]);
  });
});

describe('redactSecrets: these formats stay linear', () => {
  // No timed assertion, as in redact-secrets.test.ts: a pattern that backtracks on these takes
  // minutes on a megabyte, far past the test's timeout. Each output is bounded by its input:
  // a placeholder replaces at least 8 characters (a cookie's value), so never grows it 4-fold.
  it('finishes on 1 MB of adversarial input for every new pattern', () => {
    const hex = 'a1'.repeat(20);
    const inputs = [
      'Cookie: '.repeat(125_000),
      `Cookie: ${'a=bcdefghij1; '.repeat(70_000)}`,
      `Set-Cookie: s=${'b'.repeat(1_000_000)}`,
      '--cookie '.repeat(110_000),
      `Cookie: ${'-c'.repeat(500_000)}`,
      'Set-Cookie:x'.repeat(85_000),
      ' mysql'.repeat(170_000),
      `mysql ${'a'.repeat(250)} `.repeat(4_000),
      'mysql -p -p '.repeat(80_000),
      `mysql -p'${'a'.repeat(1_000_000)}`,
      'sshpass -x '.repeat(90_000),
      'docker login -u '.repeat(60_000),
      `docker login -p "${'a'.repeat(1_000_000)}`,
      'redis-cli -a '.repeat(75_000),
      `Private-Lines: 1\n${'A'.repeat(1_000_000)}`,
      'Private-Lines: 1\nAAAA\n'.repeat(45_000),
      `${`${'A'.repeat(64)}\n`.repeat(15_000)}Private-MAC: ${hex}`,
      `Private-MAC: ${hex}\n`.repeat(18_000),
      '?sig='.repeat(200_000),
      `?sig=${'A'.repeat(1_000_000)}`,
      `?sig=${'%2'.repeat(500_000)}`,
      'hooks.slack.com/services/'.repeat(40_000),
      `hooks.slack.com/services/${'A/'.repeat(500_000)}`,
      'discord.com/api/webhooks/1234567/'.repeat(30_000),
      'SG.'.repeat(350_000),
      `SG.${'a'.repeat(22)}.`.repeat(38_000),
      'Bearer%20'.repeat(110_000),
      `Bearer%20${'a'.repeat(1_000_000)}`,
      'authorization=Bearer+'.repeat(48_000),
      `authorization: Basic ${'&a'.repeat(500_000)}`,
      'x-api-key: '.repeat(90_000),
      `x-api-key: ${'a-'.repeat(500_000)}`,
    ];
    for (const input of inputs) {
      const once = redactSecrets(input).text;
      expect(once.length).toBeLessThanOrEqual(4 * input.length);
      expect(redactSecrets(once).text).toBe(once);
    }
  }, 30_000);
});
