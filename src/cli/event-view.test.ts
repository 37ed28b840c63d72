import { describe, expect, it } from 'vitest';
import type { CliContext } from './context.js';
import { createEventView } from './event-view.js';

function context(): { context: CliContext; stderr: () => string; stdout: () => string } {
  let stderr = '';
  let stdout = '';
  const value: CliContext = {
    env: {},
    cwd: '/',
    stdout: { write: (chunk: string) => (stdout += chunk) },
    stderr: { write: (chunk: string) => (stderr += chunk) },
    signal: undefined,
    config: () => {
      throw new Error('not needed');
    },
    color: false,
  };
  return { context: value, stderr: () => stderr, stdout: () => stdout };
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

  it("keeps a model's terminal escape sequences off the terminal, in the answer and in the notes", () => {
    const { context: cli, stderr, stdout } = context();
    const view = createEventView(cli, { json: false });
    const hostile = 'ok \u001b[2J\u001b]0;pwned\u0007\u001b]52;c;ZXZpbA==\u0007 done';
    const event = (seq: number, type: string, payload: Record<string, unknown>) =>
      view.show({ id: `r:${seq}`, runId: 'r', seq, type, timestamp: '', payload });
    event(1, 'assistant.message', { content: hostile, final: true });
    event(2, 'memory.observe.failed', { step: 1, error: hostile });
    event(3, 'memory.message.skipped', { error: `skipped message 1 (id:m): ${hostile}` });
    view.close();
    expect(stdout()).toBe('ok [2J]0;pwned]52;c;ZXZpbA== done\n');
    expect(stderr()).not.toContain('\u001b');
    expect(stderr()).toContain('· memory: skipped message 1 (id:m): ok [2J]');
  });
});
