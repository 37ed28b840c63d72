import { describe, expect, it } from 'vitest';
import { HARNESS_MEMORY_ERROR_CODES, HarnessMemoryError, ModelCallError, StoreError } from '../core/errors.js';
import { errorResponse } from '../server/http-error.js';
import { isServerFailure } from '../core/public-error-text.js';
import { errorJson, isServerFailureOfTool, shownErrorJson } from './_run-errors.js';

describe('run errors: what the tenant is shown', () => {
  it('calls a failure the server\'s exactly when the HTTP API answers it with "internal error; see the server log"', async () => {
    for (const code of HARNESS_MEMORY_ERROR_CODES) {
      const error = new HarnessMemoryError({ code, component: 'test', message: 'detail at /srv/acme-prod/x.db.' });
      const body = (await errorResponse(error).json()) as { error: { message: string } };
      expect([code, isServerFailure(error)]).toEqual([
        code,
        body.error.message === 'internal error; see the server log',
      ]);
    }
    const bug = new TypeError("Cannot read properties of undefined (reading 'seq')");
    expect(isServerFailure(bug)).toBe(true);
    expect(errorResponse(bug).status).toBe(500);
  });

  it('names a server failure by its code only when told to hide them, keeping the code', () => {
    const store = new StoreError({
      store: 'sqlite',
      message: 'The database /srv/acme-prod/.harness/state.db is locked by another process (SQLITE_BUSY).',
      data: { path: '/srv/acme-prod/.harness/state.db' },
    });
    expect(shownErrorJson(store, true)).toEqual({
      code: 'STORE_FAILED',
      message: 'internal error (STORE_FAILED); see the server log',
    });
    expect(shownErrorJson(new Error('ENOENT: /srv/acme-prod/tools.json'), true)).toEqual({
      code: 'INTERNAL',
      message: 'internal error (INTERNAL); see the server log',
    });
    expect(shownErrorJson('a thrown string', true)).toEqual({
      code: 'INTERNAL',
      message: 'internal error (INTERNAL); see the server log',
    });
    // In the caller's own process (the default), the detail stays.
    expect(shownErrorJson(store, false).message).toContain('/srv/acme-prod/.harness/state.db');
    expect(errorJson(store)).toEqual(shownErrorJson(store, false));
    // A tool's plain Error is its answer to the model; a store's failure in a tool is hidden.
    expect(isServerFailureOfTool(new Error('no such city'))).toBe(false);
    expect(isServerFailureOfTool(store)).toBe(true);
  });

  it('hands the failure it hides, and only that one, to report', () => {
    const reported: unknown[] = [];
    const report = (error: unknown): void => {
      reported.push(error);
    };
    const store = new StoreError({ store: 'sqlite', message: 'The database /srv/acme-prod/x.db is locked.' });
    const forgotten = new HarnessMemoryError({ code: 'SCOPE_FORGOTTEN', component: 'turn', message: 'gone.' });
    expect(shownErrorJson(store, true, report).message).toBe('internal error (STORE_FAILED); see the server log');
    expect(shownErrorJson(store, false, report)).toEqual(errorJson(store));
    expect(shownErrorJson(forgotten, true, report)).toEqual(errorJson(forgotten));
    expect(reported).toEqual([store]);
  });

  it("keeps the text of the tenant's own failures, a model call's without the server's address", () => {
    const forgotten = new HarnessMemoryError({
      code: 'SCOPE_FORGOTTEN',
      component: 'turn',
      message: 'conversation c1 was forgotten while this work was under way.',
    });
    expect(errorJson(forgotten)).toEqual({
      code: 'SCOPE_FORGOTTEN',
      message: 'conversation c1 was forgotten while this work was under way.',
    });
    const model = new ModelCallError({
      message: 'HTTP 503 from http://10.0.3.9:8000/v1/chat/completions',
      url: 'http://10.0.3.9:8000/v1/chat/completions',
      statusCode: 503,
    });
    expect(errorJson(model)).toEqual({ code: 'MODEL_CALL_FAILED', message: 'HTTP 503 from the model server' });
  });
});
