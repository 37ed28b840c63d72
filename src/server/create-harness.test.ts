/**
 * createHarness as a library starts it: a memory model whose settings are wrong stops it only
 * when memory is on (its model would be asked); with memory off it is never asked.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { loadConfig } from '../config/load-config.js';
import { createHarness } from './create-harness.js';
import type { Harness } from './create-harness.js';

const roots: string[] = [];
const harnesses: Harness[] = [];

afterEach(async () => {
  for (const harness of harnesses.splice(0)) await harness.dispose();
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function open(env: Record<string, string>): Promise<Harness> {
  const root = mkdtempSync(join(tmpdir(), 'hm-create-harness-'));
  roots.push(root);
  const fullEnv = { HARNESS_WORKSPACE: root, HARNESS_MEMORY_LLM_PROVIDER: 'nope', ...env };
  const config = loadConfig({ env: fullEnv, cwd: root, homeDir: join(root, 'home') });
  return createHarness({
    config,
    env: fullEnv,
    agentModel: createMockLanguageModel({ text: 'the answer' }),
    startWorker: false,
  }).then((harness) => {
    harnesses.push(harness);
    return harness;
  });
}

describe('createHarness: a memory model whose settings are wrong', () => {
  it.each<Record<string, string>>([{ HARNESS_MEMORY_ENABLED: 'false' }, { HARNESS_MEMORY_MODE: 'off' }])(
    'starts with memory off (%j) and answers runs; the memory model is shown unconfigured',
    async (off) => {
      const harness = await open(off);
      expect(harness.memoryModel).toMatchObject({ mode: 'unconfigured', modelId: '(not configured)' });
      expect(harness.memoryModel.source).toContain('unknown provider');
      const { runId } = await harness.runner.start({ prompt: 'Say something', conversationId: 'c1' });
      expect(await harness.runner.wait(runId)).toMatchObject({ status: 'completed', output: 'the answer' });
    },
  );

  it('refuses to start with memory on, naming the setting', async () => {
    await expect(open({})).rejects.toMatchObject({ code: 'CONFIG_INVALID', key: 'memory.llm_provider' });
  });
});
