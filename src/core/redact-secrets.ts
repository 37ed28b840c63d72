/**
 * Redaction of credentials and card numbers from text before it is persisted as memory.
 * @module
 */
import { cutText } from './cut-text.js';

/** What kind of secret a redaction removed. */
export type SecretKind =
  | 'private_key'
  | 'jwt'
  | 'bearer_token'
  | 'anthropic_key'
  | 'openai_key'
  | 'aws_access_key'
  | 'aws_secret_key'
  | 'github_token'
  | 'slack_token'
  | 'stripe_key'
  | 'gitlab_token'
  | 'google_api_key'
  | 'huggingface_token'
  | 'npm_token'
  | 'sendgrid_key'
  | 'square_token'
  | 'slack_webhook'
  | 'discord_webhook'
  | 'url_password'
  | 'url_signature'
  | 'auth_header'
  | 'session_cookie'
  | 'cli_password'
  | 'labelled_secret'
  | 'email_address'
  | 'card_number';

/** The redacted text and how many secrets of each kind were replaced (kinds with none are absent). */
export interface RedactionResult {
  readonly text: string;
  readonly counts: Partial<Record<SecretKind, number>>;
}

interface Rule {
  readonly kind: SecretKind;
  readonly pattern: RegExp;
  /**
   * What every match needs the text to hold (a literal of the pattern), tested first with
   * `includes` on the text and on its lower-case copy (for patterns with the `i` flag): a text
   * without it cannot match, and the pattern's scan, most of a short text's cost, is skipped.
   */
  readonly needs: (text: Haystack) => boolean;
  /** Returns the replacement of a match, given its capture groups. */
  readonly replace?: (match: string, groups: readonly string[]) => string;
  /**
   * Redacts the whole text in place of `pattern` and `replace`, for a rule whose secret starts
   * before its pattern's match: the text and how many secrets it took.
   */
  readonly redactIn?: (text: string) => { readonly text: string; readonly count: number };
}

// Every token pattern starts with a lookbehind that refuses to start inside a longer run of
// token characters: that keeps matching linear on long runs and avoids hits inside other words.
// A character right after a backslash does not count: in JSON text (tool arguments and
// results, as stored) `…\nsk-…` is an escaped newline, then a key. Nor does the last digit of
// a percent escape: in a URL-encoded link (`?q=api_key%3Dsk-…`) the key starts after `%3D`.
// A rule that scans much text starts with a lookahead for its first character: the engine
// skips other positions fast, which a pattern opening on a lookbehind keeps it from doing.
const startsAfter = (tokenCharacters: string): string => String.raw`(?<!(?<!\\|%[0-9A-Fa-f])[${tokenCharacters}])`;
// What ends a secret's label: `:`, `=` or `=>` (a PHP or Ruby hash), `:` and `=` also
// percent-encoded (`password%3D…` in a link).
const LABEL_END = String.raw`(?:=>|[:=]|%3[AaDd])`;
const pattern = (source: string, flags = 'g'): RegExp => new RegExp(source, flags);

// The words that end a secret's label (`db_password`, `clientSecret`, `JWT_SECRET_KEY`,
// `x-api-key`, `accessToken`), as the labelled rule and `isLabelledSecret` read them.
const LABEL_WORDS = String.raw`password|passwd|passphrase|secret(?:[_-]?key)?|api[_-]?key|account[_-]?key|private[_-]?key|token`;

// A labelled value, taken whole (a password holds any punctuation):
// - quoted, escapes included (JSON text, code): `"Kd81\\z!"`, `'it\'s'` (never across a raw
//   `"`, which in JSON text ends the string the value is in);
// - quoted twice over, as JSON inside a JSON string writes it: `\"Kd81\\\\z!\"`;
// - bare, up to the end of the word: whitespace, or a line break written as an escape. Two
//   things inside a word end it too, so JSON text stays JSON and the next field stays: a quote
//   that closes a string (one followed by `,:;}]`, a backslash, whitespace or the end), and
//   `,;&` that starts a next `name=` (`Password=…;User Id=svc`, `?token=…&page=2`).
// Every part is bounded and made of units that tell themselves apart (an escape is one unit),
// so matching stays linear. A quoted value too long for its bound is taken bare, its opening
// quote kept (a session token runs past a thousand characters).
const QUOTED_VALUE = [
  String.raw`"(?:[^"\\\n]|\\.){1,1024}"`,
  String.raw`\\"(?:[^"\\\n]|\\\\(?:\\["\\]|[^"\\\n])){1,1024}\\"`,
  String.raw`'(?:[^'"\\\n]|\\.){1,1024}'`,
].join('|');
const LABELLED_VALUE = [
  QUOTED_VALUE,
  String.raw`(?:[^\s"\\,;&]|\\[^\s"nrt]|\\?"(?![\s,:;}\]\\]|$)|[,;&](?![A-Za-z_][\w. -]{0,40}=)){1,4096}`,
].join('|');

// An environment name that ends in a label word and one of these (`DB_PASSWORD_PROD`,
// `SECRET_KEY_BASE`) still names the secret, not a setting about it (`PASSWORD_FILE`,
// `TOKEN_URL`, `PASSWORD_MIN_LENGTH` stay).
const SECRET_NAME_ENDS =
  'PROD|PRODUCTION|DEV|DEVELOPMENT|STAGING|STAGE|TEST|QA|UAT|LIVE|LOCAL|PRIMARY|SECONDARY|OLD|NEW|CURRENT|' +
  'PREVIOUS|NEXT|BACKUP|ROOT|ADMIN|BASE|VALUE|RAW|B64|BASE64|HEX|V?\\d{1,3}';

// A path, quoted or not: what a `pwd` label names in a shell's output and in code (`pwd: /home/…`,
// `"pwd": "C:\\work"`, `pwd = 'packages/app'`), where it is the working directory, not a
// password. A backslash that starts a JSON escape (`\"Hunter2…`, `\nHunter2…`) starts a
// password, not a path. (The all-caps `PWD=/home/alice2` of an `env` dump is still taken by
// the environment-style rule when its path holds a digit.)
// A relative one holds a `/` (`packages/app`); a backslash inside a value may be a password's
// (`\\` in JSON text), so only an absolute Windows path (`C:\…`) counts.
const PATH_SEPARATOR = /\//;
const WORKING_DIRECTORY = /^(?:\\?["'])?(?:(?:~[\w.-]{0,32}|\.{1,2}|[A-Za-z]:)?(?:\/|\\(?!["'bfnrtu]))|~(?:\\?["'])?$)/;

// How every label word ends, with the ` is ` a sentence puts after it.
const SAID_LABEL_ENDS = ['password is ', 'passwd is ', 'passphrase is ', 'secret is ', 'key is ', 'token is '];

// The END line of a private key (PGP's armour says `PRIVATE KEY BLOCK`).
const KEY_END = /-----END [A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----/g;

// A line break in a key file, raw or escaped as in JSON text.
const KEY_LINE_BREAK = String.raw`(?:\r?\n|\\r\\n|\\n)`;
// The MAC line that ends a PuTTY key file (`.ppk`): a SHA-1 or SHA-256 HMAC in hex.
const PUTTY_MAC = /Private-MAC:[ \t]{0,8}[0-9A-Fa-f]{32,128}(?![0-9A-Za-z])/g;

// A word every command of CLI_PASSWORD_FLAG holds.
const CLI_COMMAND_NAME = /mysql|mariadb|sshpass|login|mongo|redis-cli/;

// Where a cookie header's name may start.
const COOKIE_START = startsAfter('A-Za-z0-9_');

// A command that takes a password on its command line, up to the flag that gives it: the
// command's name, then up to 16 of its words (options, their values), never past a `;`, `|`
// or `&` that ends the command. The first flag after the name is taken (the words are lazy).
// A backslash ends a word but in `\"`: in JSON text it starts an escape (`\n`), and the same
// text as JSON never reads on past where the text itself stops.
const CLI_WORDS = String.raw`(?:[ \t]{1,8}(?:[^\s;|&\\]|\\"){1,256}){0,16}?[ \t]{1,8}`;
const CLI_PASSWORD_FLAG = [
  // mysql and its tools take the password stuck to `-p` (`-pS3cret`): `-p name` asks for it
  // and opens the database `name`, and `-P` is the port.
  String.raw`(?:mysql(?:dump|admin|import|show|check|pump|sh)?|mariadb(?:-dump|-admin)?)${CLI_WORDS}-p(?=[^\s-])`,
  // sshpass's options come before the command it runs, whose own `-p` (ssh's port) is none.
  String.raw`sshpass(?:[ \t]{1,8}-[^\sp\\](?:[^\s;|&\\]|\\"){0,256}){0,4}?[ \t]{1,8}-p[ \t]{0,8}`,
  String.raw`(?:(?:docker|podman|buildah|skopeo|nerdctl|oras|helm[ \t]{1,8}registry)[ \t]{1,8}login|mongo(?:sh|dump|restore|import|export|stat|top|files)?)${CLI_WORDS}(?:-p[ \t]{0,8}|--password(?:[ \t]{1,8}|=))`,
  // redis-cli's `-p` is the port.
  String.raw`redis-cli${CLI_WORDS}(?:-a[ \t]{0,8}|--pass(?:[ \t]{1,8}|=))`,
].join('|');
// A password on a command line: quoted as a shell quotes it (a raw `"` that JSON structure
// follows is a JSON string's end, not a quote), or bare up to the end of the word.
const CLI_VALUE = [
  String.raw`'(?:[^'"\\\n]|\\.){1,256}'`,
  String.raw`\\"(?:[^"\\\n]){1,256}\\"`,
  String.raw`"(?![\s,:}\]])[^"\\\n]{1,256}"`,
  String.raw`[^\s"'\\;|&<>()\x60]{1,256}`,
].join('|');

// Order matters: whole blocks and specific formats come first, so `Bearer eyJ…` counts as a JWT
// and a placeholder is never matched again by a later rule. No rule may match across a line
// break unless it always replaces what it matches: redactValue checks all of a value's strings
// joined by line breaks in one pass (redact-value.ts; its randomized test has a sample of
// every kind: add one there with a new rule).
const RULES: readonly Rule[] = [
  {
    kind: 'private_key',
    needs: (text) => text.has('PRIVATE KEY'),
    // PGP's armour says `PRIVATE KEY BLOCK`.
    pattern:
      /-----BEGIN [A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----|$)/g,
  },
  {
    // The rest of a key read in pieces (a file read by offset): the END line and the key's
    // lines before it, with no BEGIN line left (see `keyTailStart`).
    kind: 'private_key',
    needs: (text) => text.has('PRIVATE KEY'),
    pattern: KEY_END,
    redactIn: (text) => redactKeyTails(text, KEY_END),
  },
  {
    // A PuTTY key file (`.ppk`): its private lines and their MAC (its public lines are public).
    // A line that is not all base64 ends the key, so `Private-Lines: 14` in prose stays. A
    // line ends at a line break, raw or escaped, a quote (raw or escaped: the end of a string)
    // or the end of the text, alike in the text and in the same text as JSON.
    kind: 'private_key',
    needs: (text) => text.has('Private-Lines:'),
    pattern: pattern(
      String.raw`Private-Lines:[ \t]{0,8}\d{1,4}(?:${KEY_LINE_BREAK}[A-Za-z0-9+/=]{1,128}(?=[\r\n]|\\[rn]|\\?"|$))+(?:${KEY_LINE_BREAK}${PUTTY_MAC.source})?`,
    ),
  },
  {
    // The rest of a PuTTY key read in pieces: its MAC line and the private lines before it.
    kind: 'private_key',
    needs: (text) => text.has('Private-MAC:'),
    pattern: PUTTY_MAC,
    redactIn: (text) => redactKeyTails(text, PUTTY_MAC),
  },
  // alg "none" tokens have an empty signature and still carry the payload, hence `*`.
  {
    kind: 'jwt',
    needs: (text) => text.has('eyJ'),
    pattern: pattern(String.raw`${startsAfter('A-Za-z0-9_-')}eyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*`),
  },
  // Before the OpenAI rule, which would take `sk-ant-…` for one of its own.
  {
    kind: 'anthropic_key',
    needs: (text) => text.has('sk-ant-'),
    pattern: pattern(String.raw`${startsAfter('A-Za-z0-9_-')}sk-ant-[A-Za-z0-9_-]{20,}`),
  },
  {
    kind: 'openai_key',
    needs: (text) => text.has('sk-'),
    pattern: pattern(String.raw`${startsAfter('A-Za-z0-9_-')}sk-[A-Za-z0-9_-]{20,}`),
  },
  {
    kind: 'aws_access_key',
    needs: (text) => text.has('AKIA') || text.has('ASIA'),
    pattern: pattern(String.raw`${startsAfter('A-Za-z0-9_')}(?:AKIA|ASIA)[A-Z0-9]{16}\b`),
  },
  {
    // A secret access key is 40 characters with nothing to tell it apart, so only a labelled
    // one (`aws_secret_access_key = …`, `"SecretAccessKey": "…"`) is taken.
    kind: 'aws_secret_key',
    needs: (text) => text.hasFolded('secret'),
    pattern: pattern(
      String.raw`${startsAfter('A-Za-z0-9_')}((?:aws_?)?secret_?(?:access_?)?key(?:\\?["'])?[ \t]{0,8}[:=][ \t]{0,8}(?:\\?["'])?)[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])`,
      'gi',
    ),
    replace: (_match, [label]) => `${label ?? ''}[REDACTED:aws_secret_key]`,
  },
  {
    kind: 'github_token',
    needs: (text) => text.has('gh') || text.has('github_pat_'),
    pattern: pattern(
      String.raw`${startsAfter('A-Za-z0-9_')}(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})`,
    ),
  },
  {
    kind: 'slack_token',
    needs: (text) => text.has('xox') || text.has('xapp-'),
    pattern: pattern(String.raw`${startsAfter('A-Za-z0-9-')}(?:xox[abposr]|xapp)-[A-Za-z0-9-]{10,}`),
  },
  {
    kind: 'stripe_key',
    needs: (text) => text.has('k_live_') || text.has('k_test_'),
    pattern: pattern(String.raw`${startsAfter('A-Za-z0-9_')}[sr]k_(?:live|test)_[A-Za-z0-9]{10,}`),
  },
  {
    kind: 'gitlab_token',
    needs: (text) => text.has('glpat-'),
    pattern: pattern(String.raw`${startsAfter('A-Za-z0-9_-')}glpat-[A-Za-z0-9_-]{20,}`),
  },
  {
    kind: 'google_api_key',
    needs: (text) => text.has('AIza'),
    pattern: pattern(String.raw`${startsAfter('A-Za-z0-9_-')}AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])`),
  },
  {
    kind: 'huggingface_token',
    needs: (text) => text.has('hf_'),
    pattern: pattern(String.raw`${startsAfter('A-Za-z0-9_')}hf_[A-Za-z0-9]{30,}`),
  },
  {
    kind: 'npm_token',
    needs: (text) => text.has('npm_'),
    pattern: pattern(String.raw`${startsAfter('A-Za-z0-9_')}npm_[A-Za-z0-9]{36,}`),
  },
  {
    kind: 'sendgrid_key',
    needs: (text) => text.has('SG.'),
    pattern: pattern(
      String.raw`${startsAfter('A-Za-z0-9_.-')}SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])`,
    ),
  },
  {
    // Square's OAuth application secret (`sq0csp-`, 43 characters) and access token (`sq0atp-`,
    // 22).
    kind: 'square_token',
    needs: (text) => text.has('sq0'),
    pattern: pattern(
      String.raw`${startsAfter('A-Za-z0-9_-')}(?:sq0csp-[A-Za-z0-9_-]{43,}|sq0atp-[A-Za-z0-9_-]{22,})(?![A-Za-z0-9_-])`,
    ),
  },
  {
    // A Square access token of today's shape: `EAAA` and 60 or more base64url characters. Base64
    // of bytes with zeros holds `EAAA` too, so the token starts and ends outside any run of
    // base64 characters (`+`, `/`, `=` included) and mixes digits, lower and upper case, which
    // an upper-case hex digest does not.
    kind: 'square_token',
    needs: (text) => text.has('EAAA'),
    pattern: pattern(
      String.raw`${startsAfter('A-Za-z0-9_+/-')}EAAA(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[a-z])(?=[A-Za-z0-9_-]*[A-Z])[A-Za-z0-9_-]{60,}(?![A-Za-z0-9_+/=-])`,
    ),
  },
  // A webhook URL is its own credential: whoever holds it posts to the channel. The host and
  // path stay; slashes may be escaped (`\/`), as some JSON encoders write them.
  {
    kind: 'slack_webhook',
    needs: (text) => text.hasFolded('hooks.slack.com'),
    pattern: pattern(
      String.raw`(hooks\.slack\.com\\?\/(?:services|workflows|triggers)\\?\/)(?!\[REDACTED:)(?:[A-Za-z0-9_-]|\\?\/){16,512}`,
      'gi',
    ),
    replace: (_match, [prefix]) => `${prefix ?? ''}${placeholder('slack_webhook')}`,
  },
  {
    kind: 'discord_webhook',
    needs: (text) => text.hasFolded('discord') && text.hasFolded('webhooks'),
    pattern: pattern(
      String.raw`(discord(?:app)?\.com\\?\/api\\?\/(?:v\d{1,2}\\?\/)?webhooks\\?\/)(?!\[REDACTED:)\d{5,30}\\?\/[A-Za-z0-9_-]{20,200}`,
      'gi',
    ),
    replace: (_match, [prefix]) => `${prefix ?? ''}${placeholder('discord_webhook')}`,
  },
  {
    // `scheme://user:password@host`: the password goes, the rest of the URL stays; a password
    // holding a raw `@` (`p@ssw0rd`) goes to the last `@` before the host. Every part is
    // bounded and the match cannot start inside a scheme-like run, which keeps it linear. A
    // user name a rule before redacted (`https://ghp_…@github.com`) is taken whole or not at
    // all, and no part of a placeholder is ever taken for a password.
    kind: 'url_password',
    needs: (text) => text.has('://'),
    pattern: pattern(
      String.raw`${startsAfter('A-Za-z0-9+.-')}([A-Za-z][A-Za-z0-9+.\-]{0,30}:\/\/(?:\[REDACTED:[a-z_]{1,40}\]|[^\s:/?#@"'<>\\[]{0,256})):(?!\[REDACTED:)(?:[^\s/?#"'<>\\[]|\[(?!REDACTED:)){1,256}@`,
    ),
    replace: (_match, [prefix]) => `${prefix ?? ''}:[REDACTED:url_password]@`,
  },
  {
    // `?password=…`, `&pwd=…` in a query string, or `;Password=…` in a connection string: up
    // to the `&` or `;` that starts the next `name=` (a password may hold either).
    kind: 'url_password',
    needs: (text) => text.hasFolded('pass') || text.hasFolded('pwd'),
    // The separators may be percent-encoded too, as in a link inside another link's query.
    pattern:
      /((?:[?&;]|%3[Ff]|%26|%3[Bb])(?:password|passwd|pwd|pass)(?:=|%3[Dd]))(?!\[REDACTED:)(?:[^&;#\s"'<>\\%]|%(?!(?:26|3[Bb])[A-Za-z_][\w.-]{0,40}(?:=|%3[Dd]))|[&;](?![A-Za-z_][\w. -]{0,40}=))+/gi,
    replace: (_match, [name]) => `${name ?? ''}[REDACTED:url_password]`,
  },
  {
    // The signature of a signed URL (Azure SAS `sig=`, S3 and GCS `X-Amz-Signature=`,
    // `X-Goog-Signature=`): anyone holding the URL has its access until it expires. Only as a
    // query parameter (`design=`, `?signal=` stay), up to the `&` of the next one.
    kind: 'url_signature',
    needs: (text) => text.hasFolded('sig') && (text.has('=') || text.has('%3')),
    pattern:
      /((?:[?&;]|%3F|%26|%3B)(?:sig|x-amz-signature|x-goog-signature)(?:=|%3D))(?!\[REDACTED:)(?:[A-Za-z0-9+/=_.~-]|%(?!26|3B)[0-9A-F]{2}){16,1024}/gi,
    replace: (_match, [name]) => `${name ?? ''}${placeholder('url_signature')}`,
  },
  {
    kind: 'bearer_token',
    needs: (text) => text.hasFolded('bearer'),
    // A token (8 or more characters) holds a digit, or mixes cases: a capital after its first
    // character and a small letter (`abcdEFGH`) but not a CamelCase word (`JavaScript`,
    // `getToken`, `MacArthur`), or, when long, any capital. That keeps prose such as "Bearer
    // authentication" and "Bearer Authentication" intact.
    pattern: pattern(
      String.raw`${startsAfter('A-Za-z0-9_')}([Bb][Ee][Aa][Rr][Ee][Rr])([ \t]+|%20)(?:(?=[A-Za-z0-9._~+/=-]*\d)|(?![A-Z]?[a-z]{2,}(?:[A-Z][a-z]{2,})+(?![A-Za-z0-9._~+/=-]))(?=[A-Za-z0-9._~+/=-]*[a-z])(?=[A-Za-z0-9._~+/=-]+[A-Z])|(?=[A-Za-z0-9._~+/=-]{20})(?=[a-z0-9._~+/=-]*[A-Z])(?=[A-Z0-9._~+/=-]*[a-z]))[A-Za-z0-9._~+/=-]{8,}`,
    ),
    // A URL-encoded space stays encoded (`authorization=Bearer%20…` in a link).
    replace: (_match, [word, space]) => `${word ?? 'Bearer'}${space === '%20' ? space : ' '}[REDACTED:bearer_token]`,
  },
  {
    // `Authorization: Basic …` / `Token …` / `Digest …`, and a Bearer token of any shape (the
    // rule above takes only those that look like one): the scheme stays. URL-encoded too
    // (`?authorization=Basic%20…`, `+` for the space in a form), up to the `&` of a next `name=`.
    kind: 'auth_header',
    needs: (text) => text.hasFolded('authorization'),
    pattern: pattern(
      String.raw`${startsAfter('A-Za-z0-9_')}(authorization(?:\\?["'])?[ \t]{0,8}(?:[:=]|%3[AaDd])[ \t]{0,8}(?:\\?["'])?(?:basic|bearer|token|digest|apikey)(?:[ \t]+|%20|\+))(?!\[REDACTED:)(?:[^\s"'\\&]|&(?![A-Za-z_][\w.-]{0,40}=)){4,512}`,
      'gi',
    ),
    replace: (_match, [label]) => `${label ?? ''}[REDACTED:auth_header]`,
  },
  {
    // A `Cookie:` or `Set-Cookie:` header (or curl's `--cookie`): a session cookie's value is a
    // login. The rest of the line is the header, up to a quote, a backslash (an escape in JSON
    // text) or where this rule could match again (so a second pass finds each header as the
    // first did; only `c`, `s` and `-` are looked at for that, the rest read fast); its values are redacted pair by pair (see `redactCookies`), the names and a
    // `Set-Cookie`'s attributes kept. Prose about cookies holds no `name=value` pair and stays.
    kind: 'session_cookie',
    needs: (text) => text.hasFolded('cookie'),
    pattern: pattern(
      String.raw`${COOKIE_START}((set-)?cookie(?:\\?["'])?[ \t]{0,8}:[ \t]{0,8}(?:\\?["'])?|--cookie(?:[ \t]{1,8}|=)(?:\\?["'])?)((?:[^\r\n"'\\cs-]|(?!${COOKIE_START}(?:(?:set-)?cookie|--cookie))[cs-])+)`,
      'gi',
    ),
    replace: (match, [label, set, header]) => {
      const redacted = redactCookies(header ?? '', set !== '');
      return redacted === header ? match : `${label ?? ''}${redacted}`;
    },
  },
  {
    // A password given on a command line (`mysql -pS3cret`, `sshpass -p …`, `docker login -p
    // …`, `redis-cli -a …`), tied to the command that reads it so: `-p` is a port, a path or
    // an option of its own to most others (`ssh -p 22`, `mkdir -p`, "use -p to print").
    kind: 'cli_password',
    // One scan for all the names: cheaper than an `includes` for each.
    needs: (text) => text.matches(CLI_COMMAND_NAME),
    pattern: pattern(String.raw`${startsAfter('A-Za-z0-9_.-')}(${CLI_PASSWORD_FLAG})(${CLI_VALUE})`),
    replace: (match, [flag, value]) => cliPassword(match, flag ?? '', value ?? ''),
  },
  {
    // An environment-style assignment (`DB_PASSWORD=…`, `export API_TOKEN=…`, `SMTP_PASS=…`,
    // `APP_KEY=…`): what follows is the secret itself, letters only or holding any
    // punctuation, up to the end of the word. The short words `PASS` and `PWD` are a name's
    // own word (not `BYPASS`), and their bare value needs a digit or a symbol (`FIRST_PASS=
    // enabled` stays).
    kind: 'labelled_secret',
    needs: (text) =>
      (text.has('=') || text.has('%3')) &&
      (text.has('PASS') || text.has('SECRET') || text.has('KEY') || text.has('TOKEN') || text.has('PWD')),
    pattern: pattern(
      String.raw`(?=[A-Z0-9_])${startsAfter('A-Za-z0-9_.-')}((?:[A-Z0-9_]{0,40}(?:PASSWORD|PASSWD|PASSPHRASE|SECRET(?:_?KEY)?|API_?KEY|ACCOUNT_?KEY|PRIVATE_?KEY|TOKEN)(?:_(?:${SECRET_NAME_ENDS}))?|(?:[A-Z0-9_]{0,40}_)?(?:(PASS|PWD)|(?:ENCRYPTION|SIGNING|MASTER|APP)_KEY))[ \t]{0,8}(?:=|%3[Dd])[ \t]{0,8})(${LABELLED_VALUE})`,
    ),
    replace: (match, [label, short, value]) =>
      labelledValue(match, label ?? '', value ?? '', short ? 'short' : 'assigned'),
  },
  {
    // A value labelled as a secret (`DB_PASSWORD=…`, `"api_key": "…"`, `client_secret: …`,
    // `pwd: …`): the label stays. Only values that look like one are taken (see
    // `labelledValue`), so `apiKey = process.env.API_KEY` and `password: required` stay as
    // they are. A bare value that is itself a label with blanks after it (`password: \t
    // password: …`, a form's label written twice) is no value: the second label's is.
    kind: 'labelled_secret',
    // Every label word holds one of these (`api-key`, `passwd`, `clientSecret`).
    needs: (text) =>
      (text.has(':') || text.has('=') || text.has('%3')) &&
      (text.hasFolded('pass') ||
        text.hasFolded('secret') ||
        text.hasFolded('key') ||
        text.hasFolded('token') ||
        text.hasFolded('pwd')),
    // A JSON array's first string is taken as the value (`"password":["…"]`), so the text
    // stays JSON.
    pattern: pattern(
      String.raw`(?=[A-Za-z0-9_.-])${startsAfter('A-Za-z0-9_.-')}([A-Za-z0-9_.-]{0,40}?(?:${LABEL_WORDS}|(pwd))(?:\\?["'])?[ \t]{0,8}${LABEL_END}[ \t]{0,8}(?:\[[ \t]{0,8}(?=\\?["']))?)(?![A-Za-z0-9_.-]{0,40}?(?:${LABEL_WORDS}|pwd)(?:\\?["'])?[ \t]{0,8}${LABEL_END}[ \t])(${LABELLED_VALUE})`,
      'gi',
    ),
    replace: (match, [label, pwd, value]) =>
      pwd && (WORKING_DIRECTORY.test(value ?? '') || PATH_SEPARATOR.test(value ?? ''))
        ? match
        : labelledValue(match, label ?? '', value ?? '', HEADER_LABEL.test(label ?? '') ? 'header' : 'labelled'),
  },
  {
    // A PHP constant: `define('DB_PASSWORD', '…')`.
    kind: 'labelled_secret',
    needs: (text) => text.hasFolded('define'),
    pattern: pattern(
      String.raw`${startsAfter('A-Za-z0-9_$')}(define[ \t]{0,8}\([ \t]{0,8}(["'])[A-Za-z0-9_.-]{0,40}?(?:${LABEL_WORDS})\2[ \t]{0,8},[ \t]{0,8})(${QUOTED_VALUE})`,
      'gi',
    ),
    replace: (match, [label, _quote, value]) => labelledValue(match, label ?? '', value ?? '', 'labelled'),
  },
  {
    // An XML element (`<password>…</password>`, `<apiKey>…</apiKey>`): one word (prose in a
    // `<secret>` tag has spaces), the element's spaces kept.
    kind: 'labelled_secret',
    needs: (text) =>
      text.has('</') &&
      (text.hasFolded('pass') || text.hasFolded('secret') || text.hasFolded('key') || text.hasFolded('token')),
    pattern: pattern(
      String.raw`(<([A-Za-z0-9_.-]{0,40}?(?:${LABEL_WORDS}))>[ \t]{0,8})([^<\s]{1,1024})(?=[ \t]{0,8}<\/\2>)`,
      'gi',
    ),
    replace: (match, [open, _name, value]) =>
      isSecretValue(value ?? '', 6) ? `${open ?? ''}${placeholder('labelled_secret')}` : match,
  },
  {
    // A name/value pair whose name labels the value a secret: `{"name": "DB_PASSWORD",
    // "value": "…"}` (Kubernetes, AWS parameters).
    kind: 'labelled_secret',
    needs: (text) => text.hasFolded('value') && (text.hasFolded('name') || text.hasFolded('key')),
    pattern: pattern(
      String.raw`((\\?["'])(?:parameter)?(?:name|key)\2[ \t]{0,8}:[ \t]{0,8}(\\?["'])[A-Za-z0-9_.-]{0,40}?(?:${LABEL_WORDS})\3[ \t]{0,8},[ \t]{0,8}(\\?["'])(?:parameter)?value\4[ \t]{0,8}:[ \t]{0,8})(${QUOTED_VALUE})`,
      'gi',
    ),
    replace: (match, [label, _name, _quote, _value, value]) =>
      labelledValue(match, label ?? '', value ?? '', 'labelled'),
  },
  {
    // Said in a sentence: `my password is Hunter2024`, `the API key is …`. A bare value needs
    // a digit or a symbol (`the token is expired`, `password is required` stay). The match
    // starts at the label word (what is before it stays as it is), so the engine looks for
    // those words only; a placeholder's kind (`[REDACTED:github_token] is …`) ends in `]`.
    kind: 'labelled_secret',
    needs: (text) => text.hasFolded(' is ') && SAID_LABEL_ENDS.some((end) => text.hasFolded(end)),
    pattern: pattern(
      String.raw`((?:password|passwd|passphrase|secret|token|(?:api|access|account|private|secret)[ _-]?key) is[ \t]{1,8})(${LABELLED_VALUE})`,
      'gi',
    ),
    replace: (match, [label, value]) => labelledValue(match, label ?? '', value ?? '', 'labelled'),
  },
  // An email address names a person (the catalogue's canaries include one). `git@host:repo`
  // is an SSH remote and `https://user@host` a URL's user, not a person's address: both stay;
  // `pkg@1.2.3` has no domain and never matches. Never from the letter of an escape (`\n`) in
  // JSON text: the address starts after it, and the escape stays whole. Addresses run
  // together (`a@b.coc@d.org`) are taken as one, so no part is left to a second pass.
  {
    kind: 'email_address',
    needs: (text) => text.has('@'),
    pattern: pattern(
      String.raw`${startsAfter(String.raw`\p{L}\p{N}._%+-`)}(?<!\\|\\u[0-9A-Fa-f]{0,3}|\/\/)(?![Gg][Ii][Tt]@)[\p{L}\p{N}._%+-]{1,256}@(?:[\p{L}\p{N}-]{1,63}\.){1,16}\p{L}{2,63}(?:[\p{L}\p{N}._%+-]{0,256}@[\p{L}\p{N}._%+@-]{0,256}[\p{L}\p{N}])?(?![\p{L}\p{N}-])`,
      'gu',
    ),
  },
  // Digit groups joined by single spaces or dashes, not inside a word such as a hex hash; the
  // window search is in `redactCardRun`.
  {
    kind: 'card_number',
    // A run is replaced only where a window of at least 13 digits passes Luhn.
    needs: (text) => text.digits() >= MIN_CARD_DIGITS,
    pattern: pattern(String.raw`${startsAfter('A-Za-z0-9_')}\d+(?:[ -]\d+)*(?!\w)`),
    replace: (match) => redactCardRun(match),
  },
];

/**
 * Replaces private keys (PEM, PGP, PuTTY's private lines), JWTs, bearer tokens, Anthropic and
 * OpenAI keys, AWS access key ids and (labelled) secret keys, GitHub, Slack, Stripe, GitLab,
 * Google API, Hugging Face, npm and SendGrid tokens, Square credentials (`sq0csp-`, `sq0atp-`,
 * `EAAA…`), Slack and Discord webhook URLs, passwords in
 * URLs (`scheme://user:pw@host`, `?password=`), signed-URL signatures (`sig=`,
 * `X-Amz-Signature=`), `Authorization` header credentials (URL-encoded too), cookie values of a
 * `Cookie` or `Set-Cookie` header, passwords on command lines (`mysql -p…`, `sshpass -p`,
 * `docker login -p`, `redis-cli -a`), values labelled as secrets (`DB_PASSWORD=…`, `"api_key":
 * "…"`, `SMTP_PASS=…`, `pwd: …`, `"password" => "…"`, `define('DB_PASSWORD', '…')`,
 * `<password>…</password>`, a name/value pair, `my password is …`, `x-api-key: …`), email
 * addresses and Luhn-valid card numbers with
 * `[REDACTED:<kind>]`; a private key's END line with the key lines before it, when its BEGIN
 * line came in an earlier piece. Idempotent: the rules run again until they change nothing, so
 * redacting the result again changes nothing. Linear in the length of the text.
 */
export function redactSecrets(text: string): RedactionResult {
  const counts: Partial<Record<SecretKind, number>> = {};
  let result = text;
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const redacted = redactPass(result, counts);
    if (redacted === result) break;
    result = redacted;
  }
  return { text: result, counts };
}

// A pass that took a secret can open the way to one it had to leave: a rule that refuses a
// match next to a name character takes it once a later rule made that neighbour a placeholder
// (`AIza…` right before a card number or an npm token), and a later rule that takes the start
// of a long run of name characters (an email address running into a token) leaves the rest
// short enough to read as a label. Text is redacted once before it is stored, so passes repeat
// until one changes nothing; text without a secret takes one pass. Secrets that each wait for
// the one after them take a pass each: no such chain of more than three is known, and the
// bound keeps the work linear on a contrived longer one.
const MAX_PASSES = 8;

/** `text` with every rule applied once, in order, what each took added to `counts`. */
function redactPass(text: string, counts: Partial<Record<SecretKind, number>>): string {
  let result = text;
  let haystack = new Haystack(text);
  for (const rule of RULES) {
    if (!rule.needs(haystack)) continue;
    if (rule.redactIn) {
      const redacted = rule.redactIn(result);
      if (redacted.count === 0) continue;
      counts[rule.kind] = (counts[rule.kind] ?? 0) + redacted.count;
      result = redacted.text;
      haystack = new Haystack(result);
      continue;
    }
    const before = result;
    result = result.replace(rule.pattern, (match: string, ...rest: unknown[]) => {
      // The capture groups come first, then the match offset (a number).
      const groups: string[] = [];
      for (const item of rest) {
        if (typeof item === 'number') break;
        groups.push(typeof item === 'string' ? item : '');
      }
      const replaced = rule.replace ? rule.replace(match, groups) : placeholder(rule.kind);
      // A match kept as it is (a placeholder a rule before this one wrote) adds nothing.
      const added = replaced === match ? 0 : countOf(replaced, rule.kind);
      if (added > 0) counts[rule.kind] = (counts[rule.kind] ?? 0) + added;
      return replaced;
    });
    if (result !== before) haystack = new Haystack(result);
  }
  return result;
}

/** The text a rule's `needs` looks in: as it is, lower-cased, and its count of ASCII digits, each made once. */
class Haystack {
  readonly #text: string;
  #folded: string | undefined;
  #digits = -1;

  constructor(text: string) {
    this.#text = text;
  }

  has(literal: string): boolean {
    return this.#text.includes(literal);
  }

  /** For a need of many literals, one pattern of them all (not global, so it keeps no state). */
  matches(literals: RegExp): boolean {
    return literals.test(this.#text);
  }

  /**
   * For a pattern with the `i` flag (not `u`): such a pattern matches a letter only in its ASCII
   * cases, and lower-casing turns those into the literal's (it may also turn other letters
   * into ASCII ones: a rule then runs and finds nothing, never the other way round).
   */
  hasFolded(lowerCaseLiteral: string): boolean {
    this.#folded ??= this.#text.toLowerCase();
    return this.#folded.includes(lowerCaseLiteral);
  }

  digits(): number {
    if (this.#digits < 0) {
      let count = 0;
      for (let index = 0; index < this.#text.length; index++) {
        const code = this.#text.charCodeAt(index);
        if (code >= 48 && code <= 57) count++;
      }
      this.#digits = count;
    }
    return this.#digits;
  }
}

// Further than any bounded rule reaches (a bare labelled value: 4,096 units of up to two
// characters), so text past `max` plus this changes nothing of what is kept. A private key cut
// short is redacted to the end, a token cut short is still a token.
const CUT_MARGIN = 16_384;

/**
 * `text` redacted, then cut to at most `max` characters, `ending` added when it was cut. Cutting
 * first could leave the start of a secret that no rule matches any more (`aws_secret_access_key=`
 * and 38 of its 40 characters). The cut never splits a `[REDACTED:kind]` placeholder (it goes
 * before it) nor a surrogate pair.
 */
export function redactAndCut(text: string, max: number, ending = ''): string {
  const redacted = redactSecrets(cutText(text, max + CUT_MARGIN)).text;
  const shortened = text.length > max + CUT_MARGIN;
  if (redacted.length <= max) return shortened ? `${redacted}${ending}` : redacted;
  let end = max;
  const open = redacted.lastIndexOf('[REDACTED:', max - 1);
  if (open !== -1 && redacted.indexOf(']', open) >= max) end = open;
  return `${cutText(redacted, end)}${ending}`;
}

// Values that name a secret rather than hold one: code and template references (a value that
// is wholly a call, such as `getPassword()`, not any value holding a parenthesis: passwords
// do), placeholders, values masked already (`****cret`).
const REFERENCE_VALUE =
  /^(?:process\.env|os\.environ|import\.meta|env\.|\$\{|\$[A-Za-z_]|\{\{|%\(|<|\*{3})|^[A-Za-z_$][\w$]{0,80}(?:(?:\.|::)[A-Za-z_$][\w$]{0,80}){0,8}\([^()]{0,200}\)[;,)?]*$|^(?:x+|\.+|-+)$/i;

// Words a labelled value is in documentation, schemas and forms rather than a secret.
const PLACEHOLDER_WORDS = new Set(
  (
    'required optional string number boolean object array null none nil undefined empty unset missing hidden ' +
    'masked redacted secret password token invalid expired provided default example placeholder true false yes no'
  ).split(' '),
);

// An HTTP header's name with its colon (`X-Api-Key: `, `PRIVATE-TOKEN: `): the label word
// joined to the words before it by `-`. Only the name's end is read, which JSON text (where a
// name may start after an escape, `\nX-Api-Key`) writes as the text itself does.
const HEADER_LABEL = /-(?:password|passwd|passphrase|secret|key|token|apikey)(?:\\?["'])?[ \t]*:[ \t]*$/i;

/**
 * The match with its value redacted when the value looks like a secret. An environment-style
 * assignment's value (4+ characters) and a quoted value (6+) are secrets unless they are a
 * reference or a placeholder word; an unquoted one in prose or code, or after a `short` name
 * (`SMTP_PASS=`), also needs a digit or a symbol, so `password: required` and `token =
 * response` stay. After a `header` name (`x-api-key: sk-abcdefghij`) the value is the
 * credential itself: a dash or another character not a letter will do, or mixed case, but a
 * word (`x-api-key: header`) stays. A quote the value opens and never closes (a value cut
 * short) stays, so JSON text stays JSON.
 */
function labelledValue(
  match: string,
  label: string,
  value: string,
  style: 'assigned' | 'short' | 'labelled' | 'header',
): string {
  const quote = /^(?:\\"|"|')/.exec(value)?.[0] ?? '';
  const closed = quote !== '' && value.length > 2 * quote.length && value.endsWith(quote);
  const inner = value.slice(quote.length, closed ? value.length - quote.length : value.length);
  let looksSecret: boolean;
  if (style === 'header') {
    // Read without backslashes, and a quote is no sign: JSON text escapes a quote that ends
    // the value (`-p\"` is `-p\\\"` there). A value redacted already is no secret.
    const bare = inner.replaceAll('\\', '');
    looksSecret =
      isSecretValue(bare, 6) && !bare.includes('[REDACTED:') && (closed || /[^A-Za-z"]|[A-Za-z][A-Z]/.test(bare));
  } else if (style === 'labelled') looksSecret = isSecretValue(inner, 6, !closed);
  else looksSecret = isSecretValue(inner, 4, style === 'short' && !closed);
  return looksSecret ? `${label}${quote}${placeholder('labelled_secret')}${closed ? quote : ''}` : match;
}

// A cookie's `name=` (RFC 6265's token) and its value (cookie octets; the header ends at a quote).
const COOKIE_PAIR = /^([ \t]*[!#$%&*+.^_`|~0-9A-Za-z-]{1,256}=)([^\s,;]{1,4096})/;

/**
 * A `Cookie` header's value with each cookie value of 8 or more characters that is no
 * placeholder replaced (`theme=dark` stays); of a `Set-Cookie` header only the first pair's,
 * the cookie (its attributes, `Path=/`, `Expires=…`, stay).
 */
function redactCookies(header: string, setCookie: boolean): string {
  const pairs = header.split(';');
  let changed = false;
  for (let index = 0; index < (setCookie ? 1 : pairs.length); index++) {
    const pair = pairs[index] ?? '';
    const [, name = '', value = ''] = COOKIE_PAIR.exec(pair) ?? [];
    if (!isSecretValue(value, 8) || value.includes('[REDACTED:')) continue;
    pairs[index] = `${name}${placeholder('session_cookie')}${pair.slice(name.length + value.length)}`;
    changed = true;
  }
  return changed ? pairs.join(';') : header;
}

// Values after a password flag that are not a password: a variable or a command's output
// (`$PASS`, `"$(cat f)"`, `%PASS%`), a placeholder (`<password>`), another flag.
const CLI_REFERENCE = /^(?:\$|%[A-Za-z_]\w*%$|-)/;

/**
 * The match with its password redacted: any value stuck to its flag (`-pS3cret`) or quoted,
 * a bare one after a space of 4 or more characters ("sshpass -p to …" stays), never a
 * reference or a placeholder word.
 */
function cliPassword(match: string, flag: string, value: string): string {
  const quote = /^(?:\\"|"|')/.exec(value)?.[0] ?? '';
  const inner = quote === '' ? value : value.slice(quote.length, value.length - quote.length);
  const minLength = quote === '' && /[ \t]$/.test(flag) ? 4 : 1;
  const secret =
    inner.length >= minLength &&
    !inner.startsWith('[REDACTED:') &&
    !CLI_REFERENCE.test(inner) &&
    !REFERENCE_VALUE.test(inner) &&
    !PLACEHOLDER_WORDS.has(inner.toLowerCase());
  return secret ? `${flag}${quote}${placeholder('cli_password')}${quote}` : match;
}

/**
 * Whether `value`, labelled a secret, is one: at least `minLength` characters, neither a
 * reference, a placeholder word, a short number nor redacted already; a bare value in prose or
 * code (`bare`) also holds a digit or a symbol.
 */
function isSecretValue(value: string, minLength: number, bare = false): boolean {
  return (
    value.length >= minLength &&
    !value.startsWith('[REDACTED:') &&
    !REFERENCE_VALUE.test(value) &&
    !PLACEHOLDER_WORDS.has(value.toLowerCase()) &&
    !/^\d{1,11}$/.test(value) &&
    (!bare || /[\d!#$%^&*+=~?|@]/.test(value))
  );
}

// A key that labels its value a secret: its last run of name characters ends with a label word
// and is short enough for the labelled rule to take whole (40 characters before the word).
const KEY_LABEL = new RegExp(String.raw`^[A-Za-z0-9_.-]{0,40}?(?:${LABEL_WORDS})$`, 'i');
const KEY_LABEL_MAX = 56;

/**
 * Whether the string `value` of an object's `key` is a secret its key labels (`{"db_password":
 * "…"}`, `{"secretKey": "…"}`), decided on the value as it is, however JSON would escape it, of
 * any length: the value `"key": "value"` would be redacted to `[REDACTED:labelled_secret]`.
 */
export function isLabelledSecret(key: string, value: string): boolean {
  return labelsSecret(key) && isSecretValue(value, 6);
}

/**
 * Whether `key` labels its value a secret (`db_password`, `secretKey`, `x-api-key`): its last
 * run of name characters ends with a label word, as {@link isLabelledSecret} reads it.
 */
export function labelsSecret(key: string): boolean {
  let start = key.length;
  while (start > 0 && key.length - start <= KEY_LABEL_MAX && isNameCharacter(key.charCodeAt(start - 1))) start--;
  return KEY_LABEL.test(key.slice(start));
}

/** `[A-Za-z0-9_.-]`. */
function isNameCharacter(code: number): boolean {
  return (
    (code >= 97 && code <= 122) ||
    (code >= 65 && code <= 90) ||
    (code >= 48 && code <= 57) ||
    code === 95 ||
    code === 46 ||
    code === 45
  );
}

function placeholder(kind: SecretKind): string {
  return `[REDACTED:${kind}]`;
}

function countOf(replacement: string, kind: SecretKind): number {
  return replacement.split(placeholder(kind)).length - 1;
}

/**
 * `text` with each line that ends a private key (`end`: PEM's END line, PuTTY's MAC line), and
 * the key's lines before it, replaced.
 */
function redactKeyTails(text: string, end: RegExp): { text: string; count: number } {
  let out = '';
  let copied = 0;
  let count = 0;
  for (const match of text.matchAll(end)) {
    out += `${text.slice(copied, keyTailStart(text, match.index, copied))}${placeholder('private_key')}`;
    copied = match.index + match[0].length;
    count++;
  }
  return count === 0 ? { text, count } : { text: out + text.slice(copied), count };
}

// A key's lines are long but for its last one and PGP's checksum (`=x2Yz`, the line before the
// END line, after the last one): shorter lines further up are words, not a key.
const MIN_KEY_LINE = 16;

/**
 * Where the key whose END line starts at `end` starts, looking back no further than `floor`:
 * the run of lines holding only base64 (indented or not) right before the END line, line
 * breaks raw or escaped as in JSON text (`\n`), and the base64 that ends the line above them
 * (a piece cut inside a line: `"text":"…`). Each character is looked at once: linear.
 */
function keyTailStart(text: string, end: number, floor: number): number {
  let start = end;
  let position = skipBack(text, end, floor, isBlank);
  position -= lineBreakBefore(text, position, floor);
  let checksum = false;
  for (let line = 0; ; line++) {
    const lineEnd = skipBack(text, position, floor, isBlank);
    const run = skipBack(text, lineEnd, floor, isBase64);
    const lineStart = skipBack(text, run, floor, isBlank);
    const length = lineEnd - run;
    const whole = lineStart === 0 || lineBreakBefore(text, lineStart, floor) > 0;
    const long = length >= MIN_KEY_LINE;
    if (!whole || length === 0 || !(long || line === 0 || (line === 1 && checksum))) {
      return long ? run : start;
    }
    checksum = line === 0 && text[run] === '=';
    start = lineStart;
    if (lineStart === 0) return start;
    position = lineStart - lineBreakBefore(text, lineStart, floor);
  }
}

/** The start of the run of characters `test` accepts that ends at `end`, not before `floor`. */
function skipBack(text: string, end: number, floor: number, test: (text: string, index: number) => boolean): number {
  let index = end;
  while (index > floor && test(text, index - 1)) index--;
  return index;
}

function isBlank(text: string, index: number): boolean {
  const code = text.charCodeAt(index);
  return code === 32 || code === 9;
}

/** A base64 character, but not the letter of an escaped line break (`\n` in JSON text). */
function isBase64(text: string, index: number): boolean {
  const code = text.charCodeAt(index);
  const letter = (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
  if (!letter && !(code >= 48 && code <= 57) && code !== 43 && code !== 47 && code !== 61) return false;
  return !((code === 110 || code === 114) && text[index - 1] === '\\');
}

/** The length of the line break (raw or escaped, `\r\n` too) that ends right before `end`, or 0. */
function lineBreakBefore(text: string, end: number, floor: number): number {
  const at = (offset: number): string => (end - offset >= floor ? (text[end - offset] ?? '') : '');
  if (at(1) === '\n') return at(2) === '\r' ? 2 : 1;
  if (at(1) === '\r') return 1;
  if (at(2) !== '\\' || (at(1) !== 'n' && at(1) !== 'r')) return 0;
  return at(1) === 'n' && at(3) === 'r' && at(4) === '\\' ? 4 : 2;
}

const MIN_CARD_DIGITS = 13;
const MAX_CARD_DIGITS = 19;

/**
 * Redacts card numbers within a run of digit groups. A card is a window of whole groups with
 * 13–19 digits that passes Luhn, so `4111 1111 1111 1111 123` (card + CVV) is still caught.
 */
function redactCardRun(run: string): string {
  const groups = scanDigitGroups(run);
  let out = '';
  let copiedTo = 0;
  let index = 0;
  while (index < groups.count) {
    const end = longestCardWindow(groups, index);
    if (end === null) {
      index++;
      continue;
    }
    out += `${run.slice(copiedTo, groups.starts[index])}${placeholder('card_number')}`;
    copiedTo = groups.ends[end - 1] ?? run.length;
    index = end;
  }
  return out === '' ? run : out + run.slice(copiedTo);
}

/** The digit groups of a run, with prefix sums that make each Luhn window check O(1). */
interface DigitGroups {
  readonly count: number;
  /** Group i spans run[starts[i], ends[i]). */
  readonly starts: Int32Array;
  readonly ends: Int32Array;
  /** Index among the run's digits where group i starts; entry `count` is the digit total. */
  readonly offsets: Int32Array;
  /** Prefix sums of Luhn values with the digits at even (or odd) digit indexes doubled. */
  readonly evenDoubled: Int32Array;
  readonly oddDoubled: Int32Array;
}

// Typed arrays and a plain loop: a megabyte of `1 1 1 …` must stay in the tens of milliseconds.
function scanDigitGroups(run: string): DigitGroups {
  const size = run.length + 1;
  const starts = new Int32Array(size);
  const ends = new Int32Array(size);
  const offsets = new Int32Array(size + 1);
  const evenDoubled = new Int32Array(size);
  const oddDoubled = new Int32Array(size);
  let count = 0;
  let digits = 0;
  let inGroup = false;
  for (let position = 0; position <= run.length; position++) {
    const digit = run.charCodeAt(position) - 48; // NaN past the end, which closes the last group
    if (digit >= 0 && digit <= 9) {
      if (!inGroup) {
        starts[count] = position;
        offsets[count] = digits;
        inGroup = true;
      }
      const doubled = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
      const even = digits % 2 === 0;
      evenDoubled[digits + 1] = (evenDoubled[digits] ?? 0) + (even ? doubled : digit);
      oddDoubled[digits + 1] = (oddDoubled[digits] ?? 0) + (even ? digit : doubled);
      digits++;
    } else if (inGroup) {
      ends[count++] = position;
      inGroup = false;
    }
  }
  offsets[count] = digits;
  return { count, starts, ends, offsets, evenDoubled, oddDoubled };
}

/** The exclusive end of the longest Luhn-valid window of groups starting at `start`, or null. */
function longestCardWindow(groups: DigitGroups, start: number): number | null {
  const from = groups.offsets[start] ?? 0;
  let best: number | null = null;
  for (let end = start + 1; end <= groups.count; end++) {
    const to = groups.offsets[end] ?? 0;
    if (to - from > MAX_CARD_DIGITS) break;
    if (to - from >= MIN_CARD_DIGITS && luhnValid(groups, from, to)) best = end;
  }
  return best;
}

/** Luhn check of digits [from, to): every second digit counting left from the last is doubled. */
function luhnValid(groups: DigitGroups, from: number, to: number): boolean {
  const table = (to - 1) % 2 === 0 ? groups.oddDoubled : groups.evenDoubled;
  return ((table[to] ?? 0) - (table[from] ?? 0)) % 10 === 0;
}
