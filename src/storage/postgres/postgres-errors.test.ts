import { describe, expect, it } from 'vitest';
import { isConnectionLost, pgCodeOf, toStoreError } from './postgres-errors.js';

/** An error as pg's DatabaseError carries it: a SQLSTATE and the server's severity. */
const serverError = (code: string, severity: string, message = 'from the server') =>
  Object.assign(new Error(message), { code, severity });

describe('isConnectionLost', () => {
  it('counts the server ending the connection, and socket errors, as a lost connection', () => {
    expect(isConnectionLost(serverError('57P01', 'FATAL', 'terminating connection due to administrator command'))).toBe(
      true,
    );
    expect(isConnectionLost(serverError('08006', 'FATAL'))).toBe(true);
    expect(isConnectionLost(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' }))).toBe(
      true,
    );
    expect(isConnectionLost(new Error('Connection terminated unexpectedly'))).toBe(true);
  });

  it("does not count a statement's own class-08 error, sent at severity ERROR on a live connection", () => {
    const bind = serverError(
      '08P01',
      'ERROR',
      'bind message supplies 1 parameters, but prepared statement "" requires 2',
    );
    expect(isConnectionLost(bind)).toBe(false);
    expect(toStoreError(bind, 'postgres', 's').message).toContain('Postgres failed (schema s): bind message');
    expect(isConnectionLost(serverError('23505', 'ERROR'))).toBe(false);
  });

  it('never reads a socket error code as a SQLSTATE', () => {
    expect(pgCodeOf(Object.assign(new Error('write EPIPE'), { code: 'EPIPE', syscall: 'write' }))).toBeUndefined();
    expect(pgCodeOf(serverError('40P01', 'ERROR'))).toBe('40P01');
  });
});
