import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod/v4';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { createAgentRunner } from '../agent/agent-runner.js';
import { HarnessMemoryError } from '../core/errors.js';
import { memoryIdOf } from '../core/scope.js';
import { createModelObserver } from '../memory/model-observer.js';
import { createObservationalMemory } from '../memory/observational-memory.js';
import { createWorkingMemory } from '../memory/working-memory.js';
import { createInMemoryRunStore } from '../storage/in-memory-run-store.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createRedactingRunStore } from '../storage/redacting-run-store.js';
import { actionSchema, defineTool } from './tool.js';
import { createWorkingMemoryTool } from './working-memory-tool.js';

const WORKSPACE = mkdtempSync(join(tmpdir(), 'hm-tool-'));
afterAll(() => rmSync(WORKSPACE, { recursive: true, force: true }));

const AWS_SECRET = `wJalrXUtnFEMIK7MDENG${'bPxRfiCYEXAMPLEKEY12'}`;

const echo = defineTool({
  name: 'echo',
  description: 'Echoes.',
  inputSchema: z.object({ action: actionSchema(['get', 'set']) }),
  execute: async ({ action }) => ({ action }),
});

async function toolError(promise: Promise<unknown>): Promise<HarnessMemoryError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!HarnessMemoryError.isInstance(error)) throw new Error(`expected a HarnessMemoryError, got ${String(error)}`);
  return error;
}

describe('tool: an unsupported action in the error', () => {
  it('redacts the action before cutting it, so no part of a secret is shown', async () => {
    expect(AWS_SECRET).toHaveLength(40);
    const error = await toolError(echo.execute({ action: `aws_secret_access_key=${AWS_SECRET}` }, { workspace: '/' }));
    expect(error.code).toBe('TOOL_INPUT_INVALID');
    expect(error.message).toContain('aws_secret_access_key=[REDACTED:aws_secret_key]');
    expect(error.message.toLowerCase()).not.toContain('wjalrxutnfemik7');
  });

  it('never cuts through a redaction marker', async () => {
    const marked = await toolError(
      echo.execute({ action: `${'x'.repeat(40)} sk-${'Ab3_'.repeat(8)} tail` }, { workspace: '/' }),
    );
    expect(marked.message).toContain(`unsupported action "${'x'.repeat(40)} …`);
  });

  it('shows an action nested too deeply to write out as such, with the validation error', async () => {
    const deep = JSON.parse(`${'['.repeat(8000)}1${']'.repeat(8000)}`) as unknown;
    const error = await toolError(echo.execute({ action: deep }, { workspace: '/' }));
    expect(error.code).toBe('TOOL_INPUT_INVALID');
    expect(error.message).toContain('unsupported action');
  });
});

describe('tool: calls through the agent runner over a redacting run store', () => {
  function harness() {
    const store = createInMemoryStore();
    const workingMemory = createWorkingMemory({ store });
    const model = createMockLanguageModel('done');
    const runStore = createRedactingRunStore(createInMemoryRunStore());
    const observationalMemory = createObservationalMemory({ store, observer: createModelObserver(model) });
    const runner = createAgentRunner({
      model,
      observationalMemory,
      workingMemory,
      runStore,
      memoryTools: [createWorkingMemoryTool(workingMemory)],
      workspace: WORKSPACE,
    });
    return { model, runStore, runner };
  }
  const ids = { tenantId: 't', conversationId: 'conv-tool', agentId: 'a' };

  it('stores no part of a secret sent as an unsupported action (security review F9)', async () => {
    const { model, runStore, runner } = harness();
    model.enqueue(
      {
        toolCalls: [
          {
            id: 'c1',
            name: 'working_memory',
            arguments: JSON.stringify({ action: `aws_secret_access_key=${AWS_SECRET}` }),
          },
        ],
      },
      'done',
    );
    const run = await runner.start({ ...ids, prompt: 'go' });
    expect((await runner.wait(run.runId)).status).toBe('completed');
    const stored = JSON.stringify(await runStore.recentMessages(memoryIdOf(run.scope), 1e6)).toLowerCase();
    expect(stored).toContain('unsupported action');
    expect(stored).not.toContain('wjalrxutnfemik7mdengbpxrficyexample');
  });

  it("answers deeply nested arguments with the tool's own error, and the run goes on (security review F7)", async () => {
    const { model, runStore, runner } = harness();
    const nested = `${'['.repeat(6000)}1${']'.repeat(6000)}`;
    model.enqueue(
      {
        toolCalls: [
          { id: 'c1', name: 'working_memory', arguments: `{"action":"set","key":"k","value":${nested}}` },
          { id: 'c2', name: 'working_memory', arguments: `{"action":${nested}}` },
        ],
      },
      'done',
    );
    const run = await runner.start({ ...ids, conversationId: 'conv-deep', prompt: 'go' });
    const ended = await runner.wait(run.runId);
    expect(ended.status).toBe('completed');
    const messages = await runStore.recentMessages(memoryIdOf(run.scope), 1e6);
    const results = messages.filter((message) => message.role === 'tool').map((message) => message.content);
    expect(results).toHaveLength(2);
    for (const result of results) expect(result).not.toContain('Maximum call stack size exceeded');
    expect(JSON.parse(results[0] ?? '')).toEqual({
      error: { code: 'WORKING_MEMORY_INVALID', message: 'value is nested deeper than 32 levels.' },
    });
    expect(results[1]).toContain('TOOL_INPUT_INVALID');
    expect(results[1]).toContain('(an array nested too deeply to show)');
    expect(JSON.stringify(ended)).not.toContain('Maximum call stack size exceeded');
  });
});
