/**
 * Checks of the merged configuration that one file or variable cannot make alone: the base
 * URLs (one of them env-only) and the Postgres DSN, which depends on `db_driver`.
 * @module
 */
import { ConfigError } from '../core/errors.js';
import type { HarnessConfig } from './schema.js';

// In angle brackets, so that masking passwords leaves the hint as it is.
const DSN_FORM = 'postgres://<user>:<password>@<host>:5432/<database>';

const URL_HINT = 'it must be an absolute http:// or https:// URL with a host, such as https://api.openai.com/v1';

/**
 * Throws a {@link ConfigError} naming the key and its source for the first bad setting. Messages
 * never quote the value: a URL or a DSN may hold a password.
 */
export function validateConfig(config: HarnessConfig): void {
  const urls: Array<[string, string]> = [
    ['openai.base_url', config.openai.baseUrl],
    ['memory.llm_base_url', config.memory.llmBaseUrl],
    ['model.base_url', config.model.baseUrl],
    ...Object.entries(config.providers).map(([name, provider]): [string, string] => [
      `providers.${name}.base_url`,
      provider.baseUrl,
    ]),
  ];
  for (const [key, value] of urls) {
    // Blank means unset, except where the key is required.
    const problem = value.trim() === '' ? (key.startsWith('providers.') ? 'is blank' : undefined) : urlProblem(value);
    if (problem !== undefined) throw invalid(config, key, `${problem}; ${URL_HINT}`);
  }
  if (config.memory.dbDriver === 'postgres') checkDsn(config);
}

function urlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `uses ${url.protocol}, not http: or https:`;
  if (url.hostname === '') return 'has no host';
  // Requests would go without them: fetch refuses credentials in a URL, the client appends its paths.
  if (url.username !== '' || url.password !== '')
    return 'holds a user name or password, which no request would carry (give the key as the api key)';
  if (url.search !== '' || url.hash !== '') return 'holds a query string or fragment, which no request would carry';
  return undefined;
}

function checkDsn(config: HarnessConfig): void {
  const dsn = config.memory.dbDsn;
  if (dsn === '') {
    throw invalid(
      config,
      'memory.db_dsn',
      'is required when db_driver is "postgres"; set [memory] db_dsn or HARNESS_MEMORY_DB_DSN',
    );
  }
  if (!/^postgres(?:ql)?:\/\//i.test(dsn)) {
    throw invalid(
      config,
      'memory.db_dsn',
      `is not a postgres:// URL, which db_driver = "postgres" needs; write it as ${DSN_FORM}`,
    );
  }
  if (!readsAsPgUrl(dsn)) {
    throw invalid(
      config,
      'memory.db_dsn',
      `is not a URL pg can read: write it as ${DSN_FORM}, with a numeric port or none, and ` +
        'percent-encode a / ? # or % in the user name or password (/ as %2F, % as %25)',
    );
  }
}

/**
 * Whether pg's connection-string parser (pg-connection-string 2.x `parse`) can read `dsn`,
 * done as it does: spaces and stray `%` encoded, then a WHATWG URL, or one with a dummy host
 * for the Unix-socket form with credentials and no host
 * (postgres://user:pw@/db?host=/var/run/postgresql), which a WHATWG URL refuses.
 */
function readsAsPgUrl(dsn: string): boolean {
  try {
    const encoded = / |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(dsn) ? encodeURI(dsn).replace(/%25(\d\d)/g, '%$1') : dsn;
    const url = URL.canParse(encoded, PG_BASE)
      ? new URL(encoded, PG_BASE)
      : new URL(encoded.replace('@/', '@___DUMMY___/'), PG_BASE);
    // pg decodes these too: `%9F` alone is no UTF-8, and pg throws "URI malformed" at the first connection.
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
    decodeURI(url.pathname);
    return true;
  } catch {
    // A URL neither form parses, a bad percent-encoding, or a lone surrogate (encodeURI refuses it): pg would fail too.
    return false;
  }
}

const PG_BASE = 'postgres://base';

function invalid(config: HarnessConfig, key: string, message: string): ConfigError {
  return new ConfigError({ key, source: config.sources[key] ?? 'default', message });
}
