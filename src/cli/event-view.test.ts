import { describe, expect, it } from 'vitest';
import type { CliContext } from './context.js';
import { createEventView } from './event-view.js';

function context(): { context: CliContext; stderr: () => string } {
  let stderr = '';
  const value: CliContext = {
    env: {},
    cwd: '/',
    stdout: { write: () => true },
    stderr: { write: (chunk: string) => (stderr += chunk) },
    signal: undefined,
    config: () => {
      throw new Error('not needed');
    },
    color: false,
  };
  return { context: value, stderr: () => stderr };
}

describe('cli: event view', () => {
  it('says when a turn went on without a memory snippet (issue 12)', () => {
    const { context: cli, stderr } = context();
    const view = createEventView(cli, { json: false });
    view.show({
      id: 'r:3',
      runId: 'r',
      seq: 3,
      type: 'memory.snippet.failed',
      timestamp: '',
      payload: { step: 2, source: 'observational_memory', error: 'store failed' },
    });
    view.close();
    expect(stderr()).toContain('· memory: step 2 went on without the observational memory snippet: store failed');
  });
});
