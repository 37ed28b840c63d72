/**
 * Errors of the SQLite store: every failure leaves as a `StoreError` with its cause.
 * @module
 */
import { HarnessMemoryError, StoreError } from '../../core/errors.js';
import { disposedError as sharedDisposedError } from '../_store-guard.js';

/** Name of this adapter. */
export const STORE_NAME = 'sqlite';

/** Where an error happened, for its message. */
export interface SqliteErrorContext {
  readonly path: string;
  readonly busyTimeoutMs: number;
}

/**
 * Maps anything thrown by better-sqlite3 (or by a bug) to a `StoreError`; harness-memory
 * errors (lease lost, limits, conflicts) pass through unchanged.
 */
export function toStoreError(error: unknown, context: SqliteErrorContext): HarnessMemoryError {
  if (HarnessMemoryError.isInstance(error)) return error;
  const code = sqliteCodeOf(error);
  if (code !== undefined && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'))) {
    return new StoreError({
      store: STORE_NAME,
      message:
        `The database ${context.path} is locked by another process (${code}, still locked after ` +
        `waiting ${context.busyTimeoutMs} ms). Retry later, or stop the process that holds it.`,
      data: { path: context.path, sqliteCode: code },
      cause: error,
    });
  }
  const reason = error instanceof Error ? error.message : String(error);
  return new StoreError({
    store: STORE_NAME,
    message: `SQLite failed on ${context.path}: ${reason}${code === undefined ? '' : ` (${code})`}.`,
    data: { path: context.path, ...(code === undefined ? {} : { sqliteCode: code }) },
    cause: error,
  });
}

/** The error for a lease that lapsed or belongs to another worker. */
export function leaseLostError(operationId: string, leaseOwner: string): StoreError {
  return new StoreError({
    store: STORE_NAME,
    code: 'OPERATION_LEASE_LOST',
    message: `Operation ${operationId} is no longer leased to ${leaseOwner}; its result is discarded.`,
    data: { operationId },
  });
}

/** The error for a record changed by someone else between read and write. */
export function conflictError(memoryId: string): StoreError {
  return new StoreError({
    store: STORE_NAME,
    code: 'STORE_CONFLICT',
    message: `The record of scope ${memoryId} changed during the update; retry the operation.`,
    data: { memoryId },
  });
}

/** The error for a scope that has no record where one is required. */
export function missingRecordError(memoryId: string): StoreError {
  return new StoreError({ store: STORE_NAME, message: `No record exists for scope ${memoryId}.`, data: { memoryId } });
}

/** The error for any use after `dispose()`. */
export function disposedError(): StoreError {
  return sharedDisposedError(STORE_NAME);
}

function sqliteCodeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : undefined;
}
