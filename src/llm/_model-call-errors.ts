/**
 * Turns whatever the openai SDK or the network threw into a {@link ModelCallError}.
 * Private to `src/llm/`.
 */
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { HarnessMemoryError, ModelCallError } from '../core/errors.js';
import { redactAndCut } from '../core/redact-secrets.js';
import { tlsFailureOf } from './tls-failure.js';

/** Longest response body kept on an error. */
export const MAX_ERROR_BODY_BYTES = 2048;

/** Where the failed call went and why it may have stopped. */
export interface CallContext {
  readonly url: string;
  readonly timeoutMs: number;
  /** The caller's signal fired. */
  readonly aborted: boolean;
  /**
   * The caller's signal's reason: a `TimeoutError` (the operation worker's cut-off at 80% of its
   * lease, `AbortSignal.timeout`) marks a deadline, a timeout worth retrying, not a cancellation.
   */
  readonly abortReason?: unknown;
  /** Our own whole-call deadline fired. */
  readonly timedOut: boolean;
  /** The raw body of a non-2xx response, when the fetch wrapper captured it. */
  readonly responseBody?: string | undefined;
  /** The placeholder the request carried because no API key was given. */
  readonly placeholderKey?: string | undefined;
  /** The API key the request carried: taken out wherever the server quotes it back. */
  readonly apiKey?: string | undefined;
}

interface HeaderSource {
  get(name: string): string | null;
}

/**
 * Milliseconds the server asked us to wait: `retry-after-ms`, else `Retry-After` in
 * seconds or as an HTTP date. `undefined` when neither is present or parseable.
 */
export function parseRetryAfter(headers: HeaderSource | undefined, now: number = Date.now()): number | undefined {
  const milliseconds = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds;
  const value = headers?.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Number.parseFloat(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * A model server's error body as an error keeps it: secrets redacted (a provider may quote the
 * key it refused back), then cut to at most {@link MAX_ERROR_BODY_BYTES} UTF-8 bytes. Redacted
 * first: cut first, a secret could be left too short for any rule to find.
 */
export function truncateBody(text: string): string {
  const redacted = redactAndCut(text, MAX_ERROR_BODY_BYTES, '…');
  const bytes = Buffer.from(redacted, 'utf8');
  if (bytes.length <= MAX_ERROR_BODY_BYTES) return redacted;
  // NOTE: decoding a cut buffer may end in U+FFFD; acceptable for a diagnostic.
  return `${bytes.subarray(0, MAX_ERROR_BODY_BYTES).toString('utf8')}…`;
}

/** Maps any thrown value of one call to a {@link ModelCallError}. */
export function toModelCallError(error: unknown, context: CallContext): ModelCallError {
  if (isModelCallError(error)) return error;
  const { url } = context;
  if (context.aborted && isTimeoutReason(context.abortReason)) {
    return new ModelCallError({
      message: `The call to ${url} ran past the caller's deadline: ${reasonText(context.abortReason)}`,
      url,
      retryable: true,
      cause: error,
    });
  }
  if (context.aborted) {
    return new ModelCallError({
      message: `The call to ${url} was aborted by the caller.`,
      url,
      retryable: false,
      cause: error,
    });
  }
  if (context.timedOut || error instanceof APIConnectionTimeoutError) {
    return new ModelCallError({
      message:
        `The call to ${url} timed out after ${context.timeoutMs} ms. Retry later, or raise the ` +
        `timeout if the model is slow.`,
      url,
      retryable: true,
      cause: error,
    });
  }
  if (error instanceof APIUserAbortError) {
    return new ModelCallError({ message: `The call to ${url} was aborted.`, url, retryable: false, cause: error });
  }
  if (error instanceof APIConnectionError) {
    const tls = tlsFailureOf(error);
    if (tls !== undefined)
      return new ModelCallError({
        message: `TLS with ${url} failed (${tls.code}: ${describeCause(error)}). ${tls.remedy}`,
        url,
        retryable: false,
        cause: error,
      });
    return new ModelCallError({
      message: `Could not reach ${url} (${describeCause(error)}). Check the base URL and that the server is running.`,
      url,
      retryable: true,
      cause: error,
    });
  }
  if (error instanceof APIError) return fromStatusError(error, context);
  // A body cut mid-way surfaces as a fetch "terminated" TypeError or a JSON SyntaxError.
  return new ModelCallError({
    message: `The connection to ${url} failed or the answer was cut off (${describeCause(error)}); nothing was used.`,
    url,
    retryable: true,
    cause: error,
  });
}

function fromStatusError(error: APIError, context: CallContext): ModelCallError {
  const { url } = context;
  const status = typeof error.status === 'number' ? error.status : undefined;
  const quoted = withoutKey(context.apiKey);
  const given =
    context.responseBody ?? (error.error === undefined ? undefined : JSON.stringify({ error: error.error }));
  const body = given === undefined ? undefined : quoted(given);
  const quota =
    error.code === 'insufficient_quota' ||
    error.type === 'insufficient_quota' ||
    (body ?? '').includes('insufficient_quota');
  const retryAfterMs = parseRetryAfter(error.headers);
  const retryable = status === undefined ? true : !quota && (status === 408 || status === 429 || status >= 500);
  return new ModelCallError({
    message:
      `${status === undefined ? 'The stream from' : `HTTP ${status} from`} ${url}: ` +
      `${firstLine(quoted(error.message))}.${remedy(status, quota, context.placeholderKey)}`,
    url,
    ...(status === undefined ? {} : { statusCode: status }),
    ...(body === undefined ? {} : { responseBody: truncateBody(body) }),
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    retryable,
    cause: error,
  });
}

function remedy(status: number | undefined, quota: boolean, placeholderKey: string | undefined): string {
  if (quota) return ' The account is out of quota; retrying will not help.';
  if ((status === 401 || status === 403) && placeholderKey !== undefined)
    return (
      ` No API key was given (apiKey is unset, so the request carried the placeholder "${placeholderKey}"): ` +
      "pass the server's key as apiKey."
    );
  if (status === 401 || status === 403) return ' Check the API key.';
  if (status === 404) return ' Check the base URL and the model name.';
  if (status === 429) return ' Rate limited; retry later.';
  return '';
}

/** Shortest key taken out by value: a shorter one would match ordinary text. */
const MIN_QUOTED_KEY_LENGTH = 8;

/**
 * Takes `apiKey` out of text a server wrote: a provider that quotes the key it refused
 * ("Incorrect API key provided: …") would put the operator's key, whatever its shape, in the
 * error a tenant reads and the run store keeps.
 */
function withoutKey(apiKey: string | undefined): (text: string) => string {
  if (apiKey === undefined || apiKey.length < MIN_QUOTED_KEY_LENGTH) return (text) => text;
  return (text) => text.split(apiKey).join('[REDACTED:api_key]');
}

function describeCause(error: unknown): string {
  const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error instanceof Error ? error.message : String(error)}${cause}`;
}

function firstLine(text: string): string {
  // The SDK prefixes the status, which our message already gives.
  const line = (text.split('\n')[0] ?? '').replace(/^\d{3} /, '').replace(/\.$/, '');
  // Redacted, then cut: cut first, a secret the server echoed could be left too short to find.
  return redactAndCut(line, 300, '…');
}

/**
 * Whether `signal` fired for a deadline (its reason a `TimeoutError`: the operation worker's
 * cut-off at 80% of its lease, `AbortSignal.timeout`) rather than a cancellation. A call stopped
 * by a deadline timed out: retryable, and counted by the circuit breaker.
 */
export function isDeadlineAbort(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true && isTimeoutReason(signal.reason);
}

function isTimeoutReason(reason: unknown): boolean {
  return typeof reason === 'object' && reason !== null && (reason as { name?: unknown }).name === 'TimeoutError';
}

function reasonText(reason: unknown): string {
  const message = (reason as { message?: unknown }).message;
  return typeof message === 'string' && message !== '' ? message : 'the call timed out.';
}

/** True for a {@link ModelCallError} from any copy of the package. */
export function isModelCallError(error: unknown): error is ModelCallError {
  return HarnessMemoryError.isInstance(error) && error.code === 'MODEL_CALL_FAILED';
}
