/**
 * The error of an observe or reflect_now call its caller's signal aborted, and how the worker
 * tells it apart.
 * @module
 */
import { HarnessMemoryError } from '../core/errors.js';

/**
 * The reason the memory model's call is aborted with when the caller's signal fires: an
 * `AbortError`, never the caller's own reason, which may be a `TimeoutError`
 * (`AbortSignal.timeout`) that the model adapters and the circuit breaker would take for a slow
 * provider, a failure they count. The caller's own reason is the thrown error's `cause`.
 */
export function cancelReason(): DOMException {
  return new DOMException('the observe call was cancelled by its caller', 'AbortError');
}

/** `CANCELLED`: the caller's signal aborted the call; `reason` is the signal's. */
export function observeCancelled(reason: unknown, operationId?: string): HarnessMemoryError {
  return new HarnessMemoryError({
    code: 'CANCELLED',
    component: 'observe',
    message:
      operationId === undefined
        ? 'the observe call was cancelled by its signal before it stored anything.'
        : `the observe call was cancelled by its signal; the messages it stored stay stored, and its operation ` +
          `${operationId} stays queued for the scope's next observe or the background worker.`,
    data: operationId === undefined ? {} : { operationId },
    cause: reason,
  });
}

/** `CANCELLED` for `reflectNow`: the caller's signal aborted it; `reason` is the signal's. */
export function reflectCancelled(reason: unknown, operationId?: string): HarnessMemoryError {
  return new HarnessMemoryError({
    code: 'CANCELLED',
    component: 'reflect',
    message:
      operationId === undefined
        ? 'the reflect_now call was cancelled by its signal before it stored anything.'
        : `the reflect_now call was cancelled by its signal; its operation ${operationId} stays queued for the ` +
          "scope's next observe or the background worker.",
    data: operationId === undefined ? {} : { operationId },
    cause: reason,
  });
}

/** True for the {@link observeCancelled} error (from any copy of the package). */
export function isCancelled(error: unknown): error is HarnessMemoryError {
  return HarnessMemoryError.isInstance(error) && error.code === 'CANCELLED';
}
