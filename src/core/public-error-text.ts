/**
 * Error text fit to show the tenant whose request failed.
 * @module
 */
import { HarnessMemoryError, ModelCallError } from './errors.js';
import type { HarnessMemoryErrorCode } from './errors.js';
import { redactSecrets } from './redact-secrets.js';
import { stripInvisible } from './sanitize-text.js';

// The codes of failures that are the server's, not the request's: its store failed (the
// message names the database file, the Postgres schema, the address it could not reach), a
// factory was misused, an eval results file is broken. The HTTP API answers these, and anything
// that is not a HarnessMemoryError, with 500 and `internal error; see the server log`
// (server/http-error.ts; a test holds the two equal).
const SERVER_FAILURE_CODES: ReadonlySet<HarnessMemoryErrorCode> = new Set<HarnessMemoryErrorCode>([
  'STORE_FAILED',
  'OPTION_INVALID',
  'EVAL_RESULTS_INVALID',
]);

/**
 * Whether `error` is the server's own failure rather than one the tenant's request or data
 * caused: a store's (`STORE_FAILED`), a bug (`INTERNAL`: anything not a `HarnessMemoryError`),
 * or another code the HTTP API answers with 500. Its detail is the operator's business.
 */
export function isServerFailure(error: unknown): boolean {
  return !HarnessMemoryError.isInstance(error) || SERVER_FAILURE_CODES.has(error.code);
}

/** What a tenant is told of a server failure with `code`: the code, and where its detail is. */
export function serverFailureText(code: string): string {
  return `internal error (${code}); see the server log`;
}

/** The code `error` is known by: ours, else `INTERNAL`. */
export function failureCode(error: unknown): string {
  return HarnessMemoryError.isInstance(error) ? error.code : 'INTERNAL';
}

/**
 * What a tenant is told of `error` where server failures are hidden: the
 * {@link serverFailureText} of a server failure ({@link isServerFailure}), else undefined (the
 * caller shows the error as it would anyway).
 */
export function hiddenFailureText(error: unknown, hide: boolean): string | undefined {
  return hide && isServerFailure(error) ? serverFailureText(failureCode(error)) : undefined;
}

// An IPv4 address, with its port if any, as connection errors print it.
const IP_ADDRESS = /\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b/g;

/**
 * The message of `error` as a run's error and the run's events show it: ours without its
 * `[harness-memory]` prefix, a model call's naming the model server instead of showing its
 * address ({@link hideServerAddress}), without control characters (a terminal's escape
 * sequence in a model server's message) or lone surrogates.
 */
export function publicErrorText(error: unknown): string {
  if (!(error instanceof Error)) return stripInvisible(String(error));
  return stripInvisible(hideServerAddress(HarnessMemoryError.isInstance(error) ? error.detail : error.message, error));
}

/**
 * {@link publicErrorText} with secrets redacted: what an HTTP or MCP answer says of `error`
 * to the tenant whose request failed. A model provider's error may quote a key or an internal
 * address back.
 */
export function tenantErrorText(error: unknown): string {
  return redactSecrets(publicErrorText(error)).text;
}

/**
 * The data of `error` as the tenant may see it: a model call's `url` (where the operator's
 * models run) left out.
 */
export function tenantErrorData(error: HarnessMemoryError): Record<string, unknown> {
  const { url: _url, ...data } = error.data;
  return data;
}

/**
 * `text` (about `error`) with the model server named instead of its address shown (its URL,
 * host and IP addresses) when `error` is a model call's. Such text goes to the tenant that
 * started the run, who has no business learning where the operator's models run; the error
 * object itself keeps `url` for the operator's logs.
 */
export function hideServerAddress(text: string, error: unknown): string {
  if (!ModelCallError.isInstance(error)) return text;
  let shown = text;
  const { url } = error;
  if (url) {
    shown = shown.split(url).join('the model server');
    try {
      const { host, hostname } = new URL(url);
      for (const part of [host, hostname]) if (part !== '') shown = shown.split(part).join("the server's address");
    } catch {
      // Not a URL: only the text as given is named.
    }
  }
  return shown.replace(IP_ADDRESS, "the server's address");
}
