/**
 * What a Postgres failure means to the caller: whether the connection, not the statement,
 * failed, what the call did then, and the harness-memory error it becomes. Pure of I/O.
 * @module
 */
import { HarnessMemoryError, StoreError } from '../../core/errors.js';

/**
 * SQLSTATEs of a connection lost under a statement: class 08 (connection exception),
 * admin_shutdown (`pg_terminate_backend`, a server shutdown), crash_shutdown,
 * cannot_connect_now (a server starting or in recovery) and idle_session_timeout.
 */
const LOST_CONNECTION_SQLSTATE = /^(08[0-9A-Z]{3}|57P0[1235])$/;
// The socket's own errors: the peer reset or closed it, or keepalive found it dead.
const LOST_CONNECTION_ERRNO = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT']);
// pg's words for a socket that closed under a query, and for a client it already knows is lost.
const LOST_CONNECTION_MESSAGES = new Set([
  'Connection terminated unexpectedly',
  'Client has encountered a connection error and is not queryable',
]);

/**
 * Whether `error` says the connection was lost before the statement's answer came, not that the
 * statement failed: nothing is known of what the server did with it (a read may be made again).
 */
export function isConnectionLost(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = pgCodeOf(error);
  // A statement's own error of class 08 (08P01, a bind with the wrong parameter count) comes at
  // severity ERROR on a connection still up; the server ends a connection with FATAL or PANIC.
  if (code !== undefined) return LOST_CONNECTION_SQLSTATE.test(code) && !isStatementSeverity(error);
  const errno = systemCodeOf(error);
  if (errno !== undefined) return LOST_CONNECTION_ERRNO.has(errno);
  return error instanceof Error && LOST_CONNECTION_MESSAGES.has(error.message);
}

/** Whether the server sent `error` at a severity that leaves the connection up (ERROR). */
function isStatementSeverity(error: object): boolean {
  const severity = (error as { severity?: unknown }).severity;
  return severity === 'ERROR';
}

/** What a call whose connection was lost did: read (and read again), rolled back, or maybe wrote. */
export type LostConnectionOutcome = 'read' | 'rolled-back' | 'unknown';

const lostConnectionOutcomes = new WeakMap<object, LostConnectionOutcome>();

/** Records, for {@link toStoreError}, what the call `error` ended did, when it lost its connection. */
export function noteLostConnection(error: unknown, outcome: LostConnectionOutcome): void {
  if (isConnectionLost(error) && !lostConnectionOutcomes.has(error as object))
    lostConnectionOutcomes.set(error as object, outcome);
}

const LOST_CONNECTION_REMEDY: Readonly<Record<LostConnectionOutcome | 'statement', string>> = {
  read: 'The read was made again on a new connection, which failed too: check that the server is up and reachable.',
  'rolled-back':
    'It was lost before the transaction committed, so the server rolled it back: nothing of this call was ' +
    'stored, and it is safe to make again.',
  unknown:
    'Whether the write was applied is unknown (the answer was lost, perhaps after the commit): read back what ' +
    'it writes before making it again.',
  statement: 'If this call writes, whether it was applied is unknown: read back what it writes before making it again.',
};

/** The SQLSTATE of a pg error, if any (never the code of a socket error, such as `EPIPE`). */
export function pgCodeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || systemCodeOf(error) !== undefined) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** The code of a Node.js system error (`ECONNRESET`, `EPIPE`), which has a `syscall` or a numeric `errno`. */
function systemCodeOf(error: object): string | undefined {
  const { code, syscall, errno } = error as { code?: unknown; syscall?: unknown; errno?: unknown };
  if (typeof code !== 'string' || (typeof syscall !== 'string' && typeof errno !== 'number')) return undefined;
  return code;
}

/** Maps anything thrown to a harness-memory error; ours pass through unchanged. */
export function toStoreError(error: unknown, store: string, schema: string): HarnessMemoryError {
  if (HarnessMemoryError.isInstance(error)) return error;
  const code = pgCodeOf(error);
  const reason = error instanceof Error ? error.message : String(error);
  const sqlState = code === undefined ? '' : ` (SQLSTATE ${code})`;
  if (isConnectionLost(error)) {
    const outcome = lostConnectionOutcomes.get(error as object);
    return new StoreError({
      store,
      message:
        `The connection to Postgres was lost (schema ${schema}): ${reason}${sqlState}. ` +
        LOST_CONNECTION_REMEDY[outcome ?? 'statement'],
      data: {
        schema,
        ...(code === undefined ? {} : { sqlState: code }),
        connectionLost: true,
        outcome: outcome === 'rolled-back' ? 'not-applied' : outcome === 'read' ? 'read-failed' : 'unknown',
      },
      cause: error,
    });
  }
  return new StoreError({
    store,
    message: `Postgres failed (schema ${schema}): ${reason}${sqlState}.`,
    data: { schema, ...(code === undefined ? {} : { sqlState: code }) },
    cause: error,
  });
}
