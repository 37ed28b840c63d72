/** The README's library quickstart, run as written (with a scripted model). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load-config.js';
import { createHarness, startServer } from '../src/server/index.js';
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

describe('readme: serving the harness from your own process', () => {
  it('builds the harness from a configuration, serves it and stops it', async () => {
    const root = mkdtempSync(join(tmpdir(), 'hm-readme-embed-'));
    try {
      // A loopback model server needs no key; nothing is asked of it here.
      const config = loadConfig({ workspace: root, env: { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' }, homeDir: root });
      const harness = await createHarness({ config, tools: [] });
      const server = await startServer(harness, { port: 0 });
      try {
        const health = await fetch(`${server.url}/healthz`);
        expect(health.status).toBe(200);
        expect(await health.json()).toMatchObject({ status: 'ok' });
      } finally {
        await server.close();
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
