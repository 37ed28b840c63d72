import { describe, expect, it } from 'vitest';
import { createObservationalMemory } from '../memory/observational-memory.js';
import { createWorkingMemory } from '../memory/working-memory.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createMemoryTools } from './memory-tools.js';

const scope = { tenantId: 'acme', conversationId: 'chat-1', agentId: 'helper' };
type Execute = (input: unknown, options: unknown) => Promise<unknown>;

describe('AI SDK memory tools: arguments padded with null', () => {
  it('take optional arguments sent as null as left out, as providers in strict mode send them', async () => {
    const store = createInMemoryStore();
    const workingMemory = createWorkingMemory({ store });
    const tools = createMemoryTools({ memory: createObservationalMemory({ store }), workingMemory, scope });
    const workingMemoryTool = tools.working_memory.execute as Execute;
    const observationalTool = tools.observational_memory.execute as Execute;
    const call = { toolCallId: 'c1', messages: [] };
    expect(
      await workingMemoryTool({ action: 'set', key: 'plan', value: { step: 1 }, ttl_seconds: null }, call),
    ).toEqual({ ok: true, key: 'plan' });
    expect(await workingMemoryTool({ action: 'list', key: null, value: null, ttl_seconds: null }, call)).toEqual({
      entries: { plan: '{"step":1}' },
    });
    expect(await observationalTool({ action: 'status', config: null, format: null, path: null }, call)).toMatchObject({
      status: { enabled: false },
    });
  });
});

describe('AI SDK memory tools: a refused call', () => {
  it("answers the model as the harness's tools do: the code, the problem, no library prefix", async () => {
    const store = createInMemoryStore();
    const tools = createMemoryTools({ workingMemory: createWorkingMemory({ store }), scope });
    const answer = (await (tools.working_memory.execute as Execute)(
      { action: 'set', key: '', value: 1 },
      { toolCallId: 'c1', messages: [] },
    )) as { error: { code: string; message: string } };
    expect(answer.error.code).toBe('TOOL_INPUT_INVALID');
    expect(answer.error.message).not.toContain('[harness-memory]');
    expect(answer.error.message).toMatch(/key/);
  });
});
