import { describe, expect, it } from 'vitest';
import { HarnessMemoryError, StoreError } from '../core/errors.js';
import { errorResponse } from './http-error.js';

describe('error responses', () => {
  it("answers a 500 with its code and a generic message, never the server's detail", async () => {
    const response = errorResponse(
      new StoreError({
        store: 'postgres',
        message: 'Postgres failed (schema hm_x): invalid byte sequence (SQLSTATE 22021)',
      }),
    );
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({
      error: { code: 'store_failed', message: 'internal error; see the server log' },
    });
  });

  it('answers a client error with what was wrong', async () => {
    const response = errorResponse(
      new HarnessMemoryError({ code: 'REQUEST_INVALID', component: 'server', message: 'prompt must be a string' }),
    );
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain(
      'prompt must be a string',
    );
  });
});
