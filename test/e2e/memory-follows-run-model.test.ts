import { afterEach, describe, expect, it } from 'vitest';
import { roleOf, startE2E, typesOf } from './e2e-harness.js';
import type { E2E } from './e2e-harness.js';
import type { ScriptedRequest } from '../support/scripted-openai-server.js';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.close();
  e2e = undefined;
});

const modelOf = (request: ScriptedRequest): unknown => (request.body as { model?: unknown }).model;

/** Runs one prompt to its end and returns the model named by each memory request it made, by role. */
async function memoryModelsOfRun(harness: E2E, body: Record<string, unknown>): Promise<Record<string, unknown[]>> {
  const before = harness.model.requests.length;
  const runId = await harness.startRun({ prompt: 'I deploy on Fridays.', ...body });
  const types = typesOf(await harness.events(runId));
  expect(types.at(-1)).toBe('run.completed');
  expect(types).toContain('memory.observe.completed');
  const byRole: Record<string, unknown[]> = {};
  for (const request of harness.model.requests.slice(before)) (byRole[roleOf(request)] ??= []).push(modelOf(request));
  return byRole;
}

describe('e2e: the inherit memory mode follows each run’s model', () => {
  it('asks the run’s model for its observation and reflection, and the default model for runs that name none', async () => {
    e2e = await startE2E({
      env: { HARNESS_MEMORY_LLM_MODE: 'inherit', HARNESS_MEMORY_REFLECT_THRESHOLD_TOKENS: '1' },
    });
    const chosen = await memoryModelsOfRun(e2e, { conversation_id: 'c1', model: 'run-model-x' });
    expect(chosen['agent']).toEqual(['run-model-x']);
    expect(chosen['observer']).toEqual(['run-model-x']);
    expect(chosen['reflector']).toEqual(['run-model-x']);

    const plain = await memoryModelsOfRun(e2e, { conversation_id: 'c2' });
    expect(plain['agent']).toEqual(['gpt-4.1-mini']);
    expect(plain['observer']).toEqual(['gpt-4.1-mini']);
  });

  it('keeps a memory model of its own: the openai mode, and inherit with HARNESS_MEMORY_LLM_MODEL', async () => {
    e2e = await startE2E();
    const openai = await memoryModelsOfRun(e2e, { conversation_id: 'c1', model: 'run-model-x' });
    expect(openai['agent']).toEqual(['run-model-x']);
    expect(openai['observer']).toEqual(['gpt-5-nano']);
    await e2e.close();

    e2e = await startE2E({ env: { HARNESS_MEMORY_LLM_MODE: 'inherit', HARNESS_MEMORY_LLM_MODEL: 'memory-model' } });
    const named = await memoryModelsOfRun(e2e, { conversation_id: 'c1', model: 'run-model-x' });
    expect(named['observer']).toEqual(['memory-model']);
  });
});
