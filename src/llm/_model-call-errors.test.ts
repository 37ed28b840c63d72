import { APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { toModelCallError } from './_model-call-errors.js';

const AWS_SECRET = `wJalrXUtnFEMIK7MDENG${'bPxRfiCYEXAMPLEKEY12'}`;
const CONTEXT = { url: 'https://models.example/v1', timeoutMs: 1000, aborted: false, timedOut: false };

describe('model call errors: the first line of a server message', () => {
  it('is redacted before it is cut, so no part of a secret is left', () => {
    const said = `${'x'.repeat(250)} aws_secret_access_key=${AWS_SECRET}`;
    const error = toModelCallError(new APIError(400, { message: said }, undefined, new Headers()), CONTEXT);
    expect(error.message).not.toContain('wJalrXUtn');
    expect(error.message).toContain('HTTP 400 from https://models.example/v1');
  });
});

describe('model call errors: the response body kept', () => {
  it('has secrets redacted before it is cut to 2 KiB', () => {
    const body = `${'y'.repeat(1990)} aws_secret_access_key=${AWS_SECRET} ${'z'.repeat(5000)}`;
    const error = toModelCallError(new APIError(502, { message: 'upstream failed' }, undefined, new Headers()), {
      ...CONTEXT,
      responseBody: body,
    });
    expect(error.responseBody).toBeDefined();
    expect(Buffer.byteLength(error.responseBody ?? '')).toBeLessThanOrEqual(2048 + 3);
    expect(error.responseBody).not.toContain('wJal');
  });

  it('keeps a short body without a secret as it was', () => {
    const body = '{"error":{"message":"model \\"m\\" does not exist"}}';
    const error = toModelCallError(new APIError(400, { message: 'no model' }, undefined, new Headers()), {
      ...CONTEXT,
      responseBody: body,
    });
    expect(error.responseBody).toBe(body);
  });
});
