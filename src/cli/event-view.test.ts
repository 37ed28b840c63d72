import { describe, expect, it } from 'vitest';
import type { RunEventPayloads, RunEventType } from '../agent/run-event-types.js';
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

  it('shows every event type a run emits in words, none by its bare type name', () => {
    const base = { schema_version: '1', conversation_id: 'c', step: 1 } as const;
    // Typed by the event types: a type added there must be given a payload here.
    const payloads: { [T in RunEventType]: RunEventPayloads[T] } = {
      'run.started': { ...base, step: 0, prompt: 'hi', model: '', tenant_id: 't', agent_id: 'a' },
      'llm.request.snapshot': { ...base, prompt_hash: 'ab'.repeat(32), tool_names: ['working_memory'] },
      'assistant.message': { ...base, content: 'thinking', final: false, tool_calls: [] },
      'tool.call.started': { ...base, tool_call_id: 'call-1', name: 'working_memory' },
      'tool.call.completed': { ...base, tool_call_id: 'call-1', name: 'working_memory', ok: true },
      'memory.observe.started': base,
      'memory.observe.completed': { ...base, observed: true, reflected: false, observation: 3 },
      'memory.observe.failed': { ...base, error: 'the model server failed' },
      'memory.snippet.failed': { ...base, source: 'working_memory', error: 'store failed' },
      'memory.reflection.completed': { ...base, trigger: 'auto', operation_id: 'op-2' },
      'memory.operation.dead': {
        ...base,
        operation_id: 'op-1',
        operation_type: 'observe',
        error: 'the model server failed',
        attempts: 5,
      },
      'memory.working_memory.set': { ...base, key: 'plan', bytes: 12, expires_at: '2026-12-08T00:00:00.000Z' },
      'memory.working_memory.deleted': { ...base, key: 'plan' },
      'memory.message.skipped': {
        ...base,
        operation_id: 'op-3',
        message_seq: 4,
        message_key: 'id:m',
        error: 'refused',
      },
      'run.step.completed': base,
      'run.completed': { ...base, output: 'done', steps: 1, usage: { input_tokens: 5, output_tokens: 2 } },
      'run.failed': { ...base, error: { code: 'MAX_STEPS', message: 'too many steps' } },
      'run.cancelled': base,
    };
    for (const [type, payload] of Object.entries(payloads)) {
      const { context: cli, stderr, stdout } = context();
      const view = createEventView(cli, { json: false });
      view.show({ id: 'r:1', runId: 'r', seq: 1, type, timestamp: '', payload: { ...payload } });
      view.close();
      expect(`${stdout()}${stderr()}`, type).not.toContain(`· ${type}`);
    }
    const { context: cli, stderr } = context();
    const view = createEventView(cli, { json: false });
    const show = (type: RunEventType) =>
      view.show({ id: 'r:1', runId: 'r', seq: 1, type, timestamp: '', payload: { ...payloads[type] } });
    show('memory.operation.dead');
    show('memory.working_memory.set');
    show('memory.working_memory.deleted');
    view.close();
    expect(stderr()).toContain(
      '· memory: the observe operation op-1 is dead after 5 attempts: the model server failed ' +
        '(harness memory retry runs it again)',
    );
    expect(stderr()).toContain('· working memory: set plan (12 bytes, expires 2026-12-08T00:00:00.000Z)');
    expect(stderr()).toContain('· working memory: deleted plan');
  });
});
