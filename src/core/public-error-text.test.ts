import { describe, expect, it } from 'vitest';
import { HarnessMemoryError, ModelCallError } from './errors.js';
import { publicErrorText } from './public-error-text.js';

describe('publicErrorText', () => {
  it('names the model server instead of showing its URL, host or IP address', () => {
    const url = 'http://llm.internal.corp:8000/v1/chat/completions';
    expect(
      publicErrorText(new ModelCallError({ message: `HTTP 500 from ${url}: upstream failed.`, url, statusCode: 500 })),
    ).toBe('HTTP 500 from the model server: upstream failed.');
    expect(
      publicErrorText(
        new ModelCallError({
          message: `Could not reach ${url} (connect ECONNREFUSED 10.2.3.4:8000; getaddrinfo llm.internal.corp).`,
          url,
        }),
      ),
    ).toBe(
      "Could not reach the model server (connect ECONNREFUSED the server's address; getaddrinfo the server's address).",
    );
  });

  it('leaves other errors as they are, without our prefix', () => {
    const error = new HarnessMemoryError({
      code: 'STORE_FAILED',
      component: 'store',
      message: 'disk full at 10.0.0.1',
    });
    expect(publicErrorText(error)).toBe('disk full at 10.0.0.1');
    expect(publicErrorText(new Error('plain'))).toBe('plain');
  });
});
