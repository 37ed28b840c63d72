import { describe, expect, it } from 'vitest';
import { createFaultLog, createJsonLogger } from './fault-log.js';

const OPENAI = `sk-proj-${'Ab3_'.repeat(8)}`;

describe('fault log', () => {
  it('writes one JSON line per fault, secrets redacted, and counts faults per component', () => {
    const lines: string[] = [];
    const faults = createFaultLog(createJsonLogger({ write: (chunk: string) => lines.push(chunk) }));
    faults.report({
      component: 'runner',
      message: `run ended with ${OPENAI}`,
      runId: 'run_1',
      error: Object.assign(new Error(`store said ${OPENAI}`), { code: 'STORE_FAILED' }),
    });
    faults.report({ component: 'sse', message: 'stream failed' });
    expect(faults.count()).toBe(2);
    expect(faults.countsByComponent()).toEqual({ runner: 1, sse: 1 });
    expect(lines).toHaveLength(2);
    expect(lines.every((line) => line.endsWith('\n') && !line.slice(0, -1).includes('\n'))).toBe(true);
    const first = JSON.parse(lines[0]!) as Record<string, any>;
    expect(first).toMatchObject({
      level: 'error',
      event: 'fault',
      component: 'runner',
      message: 'run ended with [REDACTED:openai_key]',
      run_id: 'run_1',
      error: { name: 'Error', code: 'STORE_FAILED' },
    });
    expect(first['error'].message).toBe('store said [REDACTED:openai_key]');
    expect(Date.parse(first['time'])).not.toBeNaN();
    expect(lines.join('')).not.toContain(OPENAI);
  });

  it('never throws, even when its stream does', () => {
    const faults = createFaultLog(
      createJsonLogger({
        write: () => {
          throw new Error('stderr closed');
        },
      }),
    );
    expect(() => faults.report({ component: 'process', message: 'x' })).not.toThrow();
    expect(faults.count()).toBe(1);
  });
});
