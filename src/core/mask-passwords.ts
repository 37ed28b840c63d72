/**
 * Masking of secrets in settings and in text that may quote them (a DSN, a base URL, a TOML line).
 * @module
 */

/** `****` plus the last 4 characters; short secrets show no characters at all; empty shows `(unset)`. */
export function maskSecret(secret: string): string {
  if (secret === '') return '(unset)';
  return secret.length >= 12 ? `****${secret.slice(-4)}` : '****';
}

// The password runs to the last "@" of the URL (a run of characters up to a space or the next
// "scheme://"): an unencoded "/" or "@" in a password then masks too much rather than too little.
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)((?:(?![a-z][a-z0-9+.-]{0,31}:\/\/)\S)*)@/gi;
// The placeholder of a hint (`postgres://<user>:<password>@<host>/<database>`) is no secret.
const PLACEHOLDER = '<password>';
const KEYWORD_PASSWORD = /(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&"]+)/gi;

/**
 * Masks every URL password (`scheme://user:pw@host` → `scheme://user:****@host`) and every keyword
 * password (`password=pw`) in `text` with {@link maskSecret}.
 * @example maskPasswords('https://bot:hunter2@llm.example/v1') // 'https://bot:****@llm.example/v1'
 */
export function maskPasswords(text: string): string {
  return text
    .replace(URL_PASSWORD, (_, head: string, password: string) => `${head}${hide(password)}@`)
    .replace(KEYWORD_PASSWORD, (_, head: string, password: string) => `${head}${hide(password.replace(/^'|'$/g, ''))}`);
}

// One whole URL: its password runs to the value's last "@", spaces and all (pg encodes them).
const WHOLE_URL_PASSWORD = /^(\s*[a-z][a-z0-9+.-]*:\/\/[^:/@]*:)(.*)@/is;

/**
 * Masks the password of `url`, a setting that holds one URL (a DSN), as {@link maskPasswords}
 * does, except that the password may hold spaces: in a setting it runs to the last `@`, where in
 * free text a space ends it. Keyword passwords are masked too.
 * @example maskUrlPassword('postgres://app:correct horse@db/x') // 'postgres://app:****@db/x'
 */
export function maskUrlPassword(url: string): string {
  return maskPasswords(
    url.replace(WHOLE_URL_PASSWORD, (_, head: string, password: string) => `${head}${hide(password)}@`),
  );
}

// A password masked once already stays as it is, so masking twice shows the same text.
function hide(password: string): string {
  if (password === '' || password === PLACEHOLDER || /^\*{4}[^*]{0,4}$/.test(password)) return password;
  return maskSecret(password);
}
