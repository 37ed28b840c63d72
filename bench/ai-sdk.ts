import { wrapLanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { createMemoryMiddleware } from '../src/ai-sdk/index.js';
import { createObservationalMemory } from '../src/memory/observational-memory.js';
import { createWorkingMemory } from '../src/memory/working-memory.js';
import { createSqliteStore } from '../src/storage/sqlite/index.js';
import { createMockLanguageModel } from '../test/support/mock-language-model.js';
import { measure, report } from './measure.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const usage = {
  inputTokens: { total: 3, noCache: 3, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 2, text: 2, reasoning: 0 },
};

/**
 * The AI SDK middleware's cost on the caller's path: a model call (an instant mock) through
 * `wrapLanguageModel` with memory on SQLite, against the same call unwrapped, side by side.
 * Observation runs in the background and is drained outside the timed part.
 */
export async function benchAiSdk(): Promise<void> {
  console.log('\n## AI SDK middleware: one doGenerate, wrapped vs unwrapped (SQLite, warm caches)');
  const dir = mkdtempSync(join(tmpdir(), 'bench-ai-sdk-'));
  const store = createSqliteStore({ path: join(dir, 'memory.db') });
  try {
    const memory = createObservationalMemory({
      store,
      model: createMockLanguageModel('IMPORTANCE: 0.5\nThe user said hi.'),
      defaultEnabled: true,
    });
    const workingMemory = createWorkingMemory({ store });
    const scope = { tenantId: 'bench', conversationId: 'c1', agentId: 'a1' };
    await workingMemory.set(scope, 'plan', { step: 1 });
    const inner = new MockLanguageModelV3({
      doGenerate: async () => ({
        content: [{ type: 'text', text: 'ok' }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage,
        warnings: [],
      }),
    });
    const middleware = createMemoryMiddleware({ memory, workingMemory, scope });
    const wrapped = wrapLanguageModel({ model: inner, middleware });
    let turn = 0;
    const params = () => ({
      prompt: [{ role: 'user' as const, content: [{ type: 'text' as const, text: `message ${turn++}` }] }],
    });
    const bare = await measure('doGenerate, unwrapped', () => inner.doGenerate(params()), { samples: 500, warmup: 50 });
    const withMemory = await measure('doGenerate, with memory middleware', () => wrapped.doGenerate(params()), {
      samples: 500,
      warmup: 50,
      before: () => middleware.flush(),
    });
    report(bare);
    report(withMemory);
    console.log(
      `  middleware overhead: ${(withMemory.medianMs - bare.medianMs).toFixed(3)} ms median, ` +
        `${(withMemory.p99Ms - bare.p99Ms).toFixed(3)} ms p99`,
    );
    await middleware.flush();
    await memory.drain();
  } finally {
    await store.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}
