import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { HarnessMemoryError } from '../core/errors.js';
import type { HarnessMemoryErrorCode } from '../core/errors.js';
import { tenantErrorText } from '../core/public-error-text.js';

/** The JSON error body: `{error: {code, message}}`. */
export interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string };
}

const STATUS_BY_CODE: Readonly<Record<HarnessMemoryErrorCode, ContentfulStatusCode>> = {
  SCOPE_INVALID: 400,
  CONFIG_INVALID: 400,
  TOOL_INPUT_INVALID: 400,
  REQUEST_INVALID: 400,
  WORKING_MEMORY_INVALID: 400,
  WORKING_MEMORY_LIMIT: 413,
  OBSERVE_INPUT_INVALID: 400,
  EXPORT_INVALID: 400,
  MEMORY_DISABLED: 409,
  RUN_NOT_FOUND: 404,
  RUN_NOT_COMPLETED: 409,
  MODEL_NOT_CONFIGURED: 503,
  MODEL_OUTPUT_INVALID: 502,
  MODEL_CALL_FAILED: 502,
  STORE_CONFLICT: 409,
  STORE_FAILED: 500,
  STORE_DISPOSED: 503,
  OPERATION_LEASE_LOST: 409,
  EVAL_DATASET_INVALID: 400,
  EVAL_RESULTS_INVALID: 500,
  SCOPE_FORGOTTEN: 409,
  OPTION_INVALID: 500,
  OPERATION_DEAD: 502,
  OPERATION_NOT_FOUND: 404,
  OPERATION_NOT_DEAD: 409,
  USAGE_INVALID: 400,
  OBSERVATION_NOT_FOUND: 404,
  OBSERVATION_INVALID: 400,
  DRAIN_TIMEOUT: 503,
  ACCESS_DENIED: 403,
  CANCELLED: 503,
};

/** An HTTP error with our JSON body (and any extra headers, such as `retry-after`). */
export function httpError(
  status: ContentfulStatusCode,
  code: string,
  message: string,
  headers?: Readonly<Record<string, string>>,
): HTTPException {
  return new HTTPException(status, { res: jsonError(status, code, message, headers) });
}

/** A JSON error response. */
export function jsonError(
  status: ContentfulStatusCode,
  code: string,
  message: string,
  headers?: Readonly<Record<string, string>>,
): Response {
  const body: ErrorBody = { error: { code, message } };
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  });
}

// A malformed run or API request is the reference's `invalid_request`, whether the body's
// shape (checked at the route) or a value inside it (checked by the runner) is wrong.
const WIRE_CODE: Partial<Record<HarnessMemoryErrorCode, string>> = {
  REQUEST_INVALID: 'invalid_request',
  ACCESS_DENIED: 'insufficient_scope',
};

const INTERNAL_MESSAGE = 'internal error; see the server log';

/** Maps any thrown value to a JSON error response; the one place errors become responses. */
export function errorResponse(error: unknown): Response {
  if (error instanceof HTTPException) return error.getResponse();
  if (HarnessMemoryError.isInstance(error)) {
    const status = STATUS_BY_CODE[error.code] ?? 500;
    // A 500's detail is the server's (a database's message, a schema name): it goes to the log only.
    const code = WIRE_CODE[error.code] ?? error.code.toLowerCase();
    return jsonError(status, code, status === 500 ? INTERNAL_MESSAGE : tenantErrorText(error));
  }
  return jsonError(500, 'internal', INTERNAL_MESSAGE);
}
