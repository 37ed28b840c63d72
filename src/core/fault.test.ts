import { describe, expect, it } from 'vitest';
import { describeError } from './fault.js';

const AWS_SECRET = `wJalrXUtnFEMIK7MDENG${'bPxRfiCYEXAMPLEKEY12'}`;

describe('fault: describeError', () => {
  it('redacts the message and stack before cutting them, so no part of a secret is left', () => {
    const error = new Error(`${'x'.repeat(1960)} aws_secret_access_key=${AWS_SECRET}`);
    error.stack = `Error: ${'y'.repeat(3950)} aws_secret_access_key=${AWS_SECRET}\n    at f (file.ts:1:1)`;
    const described = describeError(error);
    expect(described.message.length).toBeLessThanOrEqual(2000);
    expect(described.stack?.length).toBeLessThanOrEqual(4000);
    expect(described.message).not.toContain('wJalrXUtn');
    expect(described.stack).not.toContain('wJalrXUtn');
    expect(describeError(`thrown ${'z'.repeat(1960)} aws_secret_access_key=${AWS_SECRET}`).message).not.toContain(
      'wJalrXUtn',
    );
  });

  it('keeps a short message as it is', () => {
    expect(describeError(new TypeError('boom'))).toMatchObject({ name: 'TypeError', message: 'boom' });
  });
});
