/**
 * The spec's TestCrossRunObservationalMemoryRecall: what run 1 observed through one service
 * instance is recalled, in the `<observational-memory>` snippet, by a second instance
 * opened later on the same SQLite file for run 2.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createModelObserver } from '../../src/memory/model-observer.js';
import { createObservationalMemory } from '../../src/memory/observational-memory.js';
import type { ObservationalMemoryOptions } from '../../src/memory/observational-memory.js';
import { createSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import type { MemoryStore } from '../../src/storage/store.js';
import { createMockLanguageModel } from '../support/mock-language-model.js';

const SENTINEL = 'SENTINEL_RECALL_user_prefers_tabs_over_spaces_42';
const SCOPE = { tenantId: 'tenant-a', conversationId: 'conv-recall-1', agentId: 'agent-x' };

describe('durability: cross-run observational memory recall (TestCrossRunObservationalMemoryRecall)', () => {
  let directory: string;
  let path: string;
  const stores: MemoryStore[] = [];
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'harness-memory-recall-'));
    path = join(directory, 'state.db');
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.dispose();
    rmSync(directory, { recursive: true, force: true });
  });

  const service = (model: ReturnType<typeof createMockLanguageModel>) => {
    const store = createSqliteStore({ path });
    stores.push(store);
    // An observer from the stub model and no reflector, as in the spec.
    const options: ObservationalMemoryOptions = {
      store,
      observer: createModelObserver(model),
      defaultEnabled: true,
      defaults: { observeMinTokens: 1, snippetMaxTokens: 900, reflectThresholdTokens: 2 ** 30 },
    };
    return { store, memory: createObservationalMemory(options) };
  };

  it('recalls in run 2, through a second instance, the sentinel observed in run 1', async () => {
    const model1 = createMockLanguageModel(`IMPORTANCE:0.9\n${SENTINEL}`);
    const run1 = service(model1);
    const observed = await run1.memory.observe({
      scope: SCOPE,
      runId: 'run-1',
      messages: [{ id: 'u1', role: 'user', content: 'Please always indent with tabs; I do not like spaces.' }],
    });
    expect(observed).toMatchObject({ status: 'applied', observed: true, observationCount: 1 });
    expect(model1.calls.length).toBeGreaterThan(0);
    const first = await run1.memory.snippet({ ...SCOPE, runId: 'run-1' });
    expect(first.length).toBeGreaterThan(0);
    expect(first).toContain(SENTINEL);
    await run1.store.dispose();

    // A later process: a new store and service on the same file, with a model that must not be needed.
    const model2 = createMockLanguageModel(new Error('run 2 must not call the observer to recall'));
    const run2 = service(model2);
    const snippet = await run2.memory.snippet({ ...SCOPE, runId: 'run-2' });
    expect(snippet).toContain('<observational-memory>');
    expect(snippet).toContain(SENTINEL);
    expect(model2.calls).toHaveLength(0);
    expect((await run2.memory.status(SCOPE)).observationCount).toBe(1);
  });
});
