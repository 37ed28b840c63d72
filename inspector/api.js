// @ts-check
// Calls to the harness HTTP API, with the key the user typed once (kept in this tab's
// session storage, never in the URL or in local storage).

const KEY_STORAGE = 'harness-memory.inspector.api-key';

/** The API key for this tab, or '' when none was given. */
export function storedKey() {
  try {
    return sessionStorage.getItem(KEY_STORAGE) ?? '';
  } catch {
    return '';
  }
}

/**
 * Why `key` cannot be an API key, or `undefined` when it can. Keys travel in an HTTP header,
 * which carries visible ASCII only (the server refuses other keys at start-up too).
 * @param {string} key
 */
export function keyProblem(key) {
  const bad = /[^\x21-\x7e]/u.exec(key);
  if (bad === null) return undefined;
  const shown = /\s/u.test(bad[0]) ? 'a space' : `“${bad[0]}”`;
  return `An API key holds only letters, digits and ASCII punctuation; this one has ${shown}, which an HTTP header cannot carry. Check the key and enter it again.`;
}

/**
 * Keeps the key for this tab ('' forgets it).
 * @param {string} key
 */
export function storeKey(key) {
  if (key === '') sessionStorage.removeItem(KEY_STORAGE);
  else sessionStorage.setItem(KEY_STORAGE, key);
}

/** An API answer that was not a success: HTTP status plus the server's `{error: {code, message}}`. */
export class ApiError extends Error {
  /**
   * @param {number} status 0 when the server could not be reached
   * @param {string} code
   * @param {string} message
   */
  constructor(status, code, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

/**
 * The URL of an API path. The page lives at `<base>/inspector/`, the API at `<base>/v1/`.
 * @param {string} path starting with `/`, after `/v1`
 * @param {Record<string, string | number | boolean | undefined | null>} [query]
 */
export function apiUrl(path, query = {}) {
  const url = new URL(`../v1${path}`, document.baseURI);
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(name, String(value));
  }
  return url;
}

/**
 * One path segment, encoded (ids may hold any character).
 * @param {string} value
 */
export function segment(value) {
  return encodeURIComponent(value);
}

/**
 * Headers for a call: the key, when one is stored; an {@link ApiError} `key_invalid` when
 * the stored key cannot travel in a header.
 * @param {Record<string, string>} [extra]
 * @returns {Record<string, string>}
 */
export function authHeaders(extra = {}) {
  const key = storedKey();
  // fetch would refuse such a header with a TypeError, which reads as "server unreachable".
  const problem = keyProblem(key);
  if (problem !== undefined) throw new ApiError(0, 'key_invalid', problem);
  return key === '' ? { ...extra } : { ...extra, authorization: `Bearer ${key}` };
}

/** How long an API call may take before it fails (the event stream, open for a run's life, has none). */
export const REQUEST_TIMEOUT_MS = 15_000;

/**
 * @typedef {{ method?: string, json?: unknown, query?: Parameters<typeof apiUrl>[1], signal?: AbortSignal }} CallOptions
 */

/**
 * Calls the API and returns the parsed JSON body, or throws an {@link ApiError}.
 * @param {string} path
 * @param {CallOptions} [options]
 * @returns {Promise<any>}
 */
export function api(path, options = {}) {
  return call(path, options, async (response) => {
    const text = await response.text();
    return text === '' ? {} : JSON.parse(text);
  });
}

/**
 * Calls the API and returns the body as a Blob (a download), or throws an {@link ApiError}.
 * @param {string} path
 * @param {CallOptions} [options]
 * @returns {Promise<Blob>}
 */
export function apiBlob(path, options = {}) {
  return call(path, options, (response) => response.blob());
}

/**
 * A call and the reading of its answer, both within {@link REQUEST_TIMEOUT_MS}: a server
 * that takes the request and never answers would otherwise stop a view's polling for good.
 * @template R
 * @param {string} path
 * @param {CallOptions} options
 * @param {(response: Response) => Promise<R>} read
 * @returns {Promise<R>}
 */
async function call(path, options, read) {
  const headers = authHeaders(options.json === undefined ? {} : { 'content-type': 'application/json' });
  const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  /** The error to throw for one a fetch or a read threw, when it was the timeout or the caller's abort. */
  const aborted = (/** @type {unknown} */ error) => {
    if (options.signal?.aborted) return error;
    if (timeout.aborted) {
      return new ApiError(0, 'timeout', `the harness server did not answer within ${REQUEST_TIMEOUT_MS / 1000} s`);
    }
    return undefined;
  };
  /** @type {Response} */
  let response;
  try {
    response = await fetch(apiUrl(path, options.query), {
      method: options.method ?? 'GET',
      headers,
      cache: 'no-store',
      signal,
      ...(options.json === undefined ? {} : { body: JSON.stringify(options.json) }),
    });
  } catch (error) {
    throw aborted(error) ?? new ApiError(0, 'unreachable', 'the harness server could not be reached');
  }
  try {
    if (!response.ok) throw await errorOf(response);
    return await read(response);
  } catch (error) {
    throw aborted(error) ?? error;
  }
}

/**
 * The {@link ApiError} of a failed response.
 * @param {Response} response
 */
export async function errorOf(response) {
  let code = `http_${response.status}`;
  let message = response.statusText || 'the request failed';
  try {
    const body = JSON.parse(await response.text());
    if (body && typeof body.error === 'object' && body.error !== null) {
      code = String(body.error.code ?? code);
      message = String(body.error.message ?? message);
    }
  } catch {
    // Not our JSON error body (a proxy's page, say): keep the status text.
  }
  return new ApiError(response.status, code, message);
}

/**
 * What to tell the user about a failure, in one sentence with the remedy.
 * @param {unknown} error
 */
export function describeError(error) {
  if (!(error instanceof ApiError)) return `Something went wrong: ${String(error)}`;
  if (error.code === 'key_invalid') return error.message;
  if (error.code === 'timeout') {
    return `The harness server did not answer within ${REQUEST_TIMEOUT_MS / 1000} s: it may be overloaded, or something between holds the request. Try again.`;
  }
  const detail = `${error.message} (HTTP ${error.status}, ${error.code})`;
  switch (error.status) {
    case 0:
      return 'The harness server could not be reached. Is `harness serve` still running?';
    case 401:
      return storedKey() === ''
        ? `This server needs an API key: enter it above. ${detail}`
        : `The server refused the API key: check it and enter it again above. ${detail}`;
    case 403:
      return `Access refused. ${detail}`;
    case 404:
      return `Not found: it does not exist, or this key's tenant cannot see it. ${detail}`;
    default:
      return `The request failed: ${detail}`;
  }
}

/**
 * Whether an error means "no access": the view must then show no data at all.
 * @param {unknown} error
 */
export function isAccessError(error) {
  if (!(error instanceof ApiError)) return false;
  // A row that is gone (`observation_not_found`, `operation_not_found`) is not the view's access,
  // nor a write a read-only key may not make (`insufficient_scope`): the key still reads the view.
  return (
    error.code === 'key_invalid' ||
    error.status === 401 ||
    (error.status === 403 && error.code !== 'insufficient_scope') ||
    (error.status === 404 && !isGoneRow(error))
  );
}

/**
 * Whether the error says one row of a table no longer exists (deleted meanwhile elsewhere).
 * @param {unknown} error
 */
export function isGoneRow(error) {
  return error instanceof ApiError && (error.code === 'observation_not_found' || error.code === 'operation_not_found');
}
