import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { scriptedObserver } from '../../test/support/scripted-models.js';
import { createObservationalMemory } from '../memory/observational-memory.js';
import { createWorkingMemory } from '../memory/working-memory.js';
import { createInMemoryRunStore } from '../storage/in-memory-run-store.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createAgentRunner } from './agent-runner.js';

const WORKSPACE = mkdtempSync(join(tmpdir(), 'hm-runner-cancel-'));
afterAll(() => rmSync(WORKSPACE, { recursive: true, force: true }));
const scope = { tenantId: 'tenant-c', conversationId: 'conv-cancel', agentId: 'agent-c' };

/**
 * A runner whose model answers at once and whose observation never ends: after the answer, only
 * a cancel or a shutdown can end the run's wait. `observing` settles once the observer is called.
 */
function runnerWaitingForMemory() {
  let called: () => void = () => {};
  const observing = new Promise<void>((resolve) => (called = resolve));
  const store = createInMemoryStore();
  const runStore = createInMemoryRunStore();
  const runner = createAgentRunner({
    model: createMockLanguageModel('the answer'),
    observationalMemory: createObservationalMemory({
      store,
      observer: scriptedObserver(() => {
        called();
        return new Promise<string>(() => {});
      }),
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    }),
    workingMemory: createWorkingMemory({ store }),
    runStore,
    memoryTools: [],
    tools: [],
    workspace: WORKSPACE,
    settleTimeoutMs: 600_000,
  });
  const typesOf = async (runId: string) => (await runStore.listEvents(runId, -1)).map((event) => event.type);
  return { runner, observing, typesOf };
}

describe('agent runner: a cancel while the run waits for its memory work', () => {
  it('ends the run cancelled at once, without waiting for the observation', async () => {
    const { runner, observing, typesOf } = runnerWaitingForMemory();
    const run = await runner.start({ ...scope, prompt: 'Remember that I like tea.' });
    await observing;
    expect(await runner.cancel(run.runId)).toMatchObject({ status: 'cancelled', output: 'the answer' });
    const types = await typesOf(run.runId);
    expect(types).toContain('assistant.message');
    expect(types.at(-1)).toBe('run.cancelled');
  });

  // A shutdown (dispose, SIGTERM) once ended such a run cancelled, its answer given.
  it("completes, at a timed settle's deadline, a run whose answer is in and that waits for its observation", async () => {
    const { runner, observing, typesOf } = runnerWaitingForMemory();
    const run = await runner.start({ ...scope, prompt: 'Remember that I like tea.' });
    await observing;
    await runner.settle({ timeoutMs: 0 });
    expect(await runner.wait(run.runId)).toMatchObject({ status: 'completed', output: 'the answer' });
    expect((await typesOf(run.runId)).at(-1)).toBe('run.completed');
  });

  it('ends the run cancelled at once while a model that ignores the signal is still answering', async () => {
    let called: () => void = () => {};
    const modelCalled = new Promise<void>((resolve) => (called = resolve));
    const model = createMockLanguageModel(() => {
      called();
      return new Promise<string>(() => {});
    });
    const store = createInMemoryStore();
    const runStore = createInMemoryRunStore();
    const runner = createAgentRunner({
      model,
      observationalMemory: createObservationalMemory({ store }),
      workingMemory: createWorkingMemory({ store }),
      runStore,
      memoryTools: [],
      tools: [],
      workspace: WORKSPACE,
    });
    const run = await runner.start({ ...scope, conversationId: 'conv-deaf-model', prompt: 'Hello?' });
    await modelCalled;
    expect(await runner.cancel(run.runId)).toMatchObject({ status: 'cancelled', output: null });
    const types = (await runStore.listEvents(run.runId, -1)).map((event) => event.type);
    expect(types).not.toContain('assistant.message');
    expect(types.at(-1)).toBe('run.cancelled');
  });
});
