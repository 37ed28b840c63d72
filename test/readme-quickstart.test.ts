/** The README's library quickstart, run as written (with a scripted model). */
import { describe, expect, it } from 'vitest';
import { createInMemoryStore, createObservationalMemory, createWorkingMemory } from '../src/index.js';
import { createMockLanguageModel } from './support/mock-language-model.js';

describe('readme: library quickstart', () => {
  it('observes, stores working memory and builds both snippets', async () => {
    const model = createMockLanguageModel('IMPORTANCE:0.9\nThe user wants tabs in this repo.');
    const store = createInMemoryStore();
    const memory = createObservationalMemory({ store, model, defaultEnabled: true, defaults: { observeMinTokens: 1 } });
    const workingMemory = createWorkingMemory({ store });
    const scope = { tenantId: 'acme', conversationId: 'conv-42', agentId: 'coder' };

    await memory.observe({
      scope,
      runId: 'run-1',
      messages: [{ id: 'msg-1', role: 'user', content: 'Please always use tabs in this repo.' }],
    });
    await workingMemory.set(scope, 'plan', { step: 1, target: 'auth.go' });
    const system = [await workingMemory.snippet(scope), await memory.snippet(scope)].filter(Boolean);

    expect(system[0]).toBe('<working-memory>\nplan: {"step":1,"target":"auth.go"}\n</working-memory>');
    expect(system[1]).toContain('- [1] The user wants tabs in this repo.');
  });
});
