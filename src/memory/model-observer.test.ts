import { describe, expect, it } from 'vitest';
import { HarnessMemoryError } from '../core/errors.js';
import { acceptOutput } from './model-observer.js';

const CAP = 64 * 1024;

function refusalOf(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('model output: a degenerate reflection', () => {
  it('refuses a reflection that is one line repeated, as invalid model output', () => {
    const text = `SUMMARY:\n${'The user likes tabs.\n'.repeat(3000)}`;
    expect(text.length).toBeLessThan(CAP);
    const error = refusalOf(() => acceptOutput('reflector', { text, finishReason: 'stop' } as never, CAP));
    expect(HarnessMemoryError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'MODEL_OUTPUT_INVALID', data: { role: 'reflector', reason: 'repetitive' } });
  });

  it('refuses a few lines cycled many times', () => {
    const text = `SUMMARY:\n${'- tabs\n- spaces\n- Go 1.22\n'.repeat(40)}SUPERSESSIONS:\nCONTRADICTIONS:\n`;
    expect(() => acceptOutput('reflector', { text, finishReason: 'stop' } as never, CAP)).toThrow(/repeat/);
  });

  it('accepts a reflection with some repeated lines, and a short one', () => {
    const lines = Array.from({ length: 30 }, (_, index) => `- fact ${index}`);
    const text = `SUMMARY:\n${lines.join('\n')}\n- none\n- none\n- none\nSUPERSESSIONS:\n- none\nCONTRADICTIONS:\n- none`;
    expect(acceptOutput('reflector', { text, finishReason: 'stop' } as never, CAP)).toBe(text);
    const short = 'SUMMARY:\n- none\n- none\n- none\n- none';
    expect(acceptOutput('reflector', { text: short, finishReason: 'stop' } as never, CAP)).toBe(short);
  });
});
