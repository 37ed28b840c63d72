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

describe('agent runner: a cancel while the run waits for its memory work', () => {
  it('ends the run cancelled at once, without waiting for the observation', async () => {
    let observing: () => void = () => {};
    const observerCalled = new Promise<void>((resolve) => (observing = resolve));
    const store = createInMemoryStore();
    const runStore = createInMemoryRunStore();
    const memory = createObservationalMemory({
      store,
      // The observation never ends: only a cancel can end the wait after the answer.
      observer: scriptedObserver(() => {
        observing();
        return new Promise<string>(() => {});
      }),
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    const runner = createAgentRunner({
      model: createMockLanguageModel('the answer'),
      observationalMemory: memory,
      workingMemory: createWorkingMemory({ store }),
      runStore,
      memoryTools: [],
      tools: [],
      workspace: WORKSPACE,
      settleTimeoutMs: 600_000,
    });
    const run = await runner.start({ ...scope, prompt: 'Remember that I like tea.' });
    await observerCalled;
    const cancelled = await runner.cancel(run.runId);
    expect(cancelled).toMatchObject({ status: 'cancelled', output: 'the answer' });
    const types = (await runStore.listEvents(run.runId, -1)).map((event) => event.type);
    expect(types).toContain('assistant.message');
    expect(types.at(-1)).toBe('run.cancelled');
  });
});
