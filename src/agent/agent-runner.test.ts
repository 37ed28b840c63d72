import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { ModelCallError } from '../core/errors.js';
import type { MockLanguageModel } from '../../test/support/mock-language-model.js';
import { createModelObserver, createModelReflector } from '../memory/model-observer.js';
import { createObservationalMemory } from '../memory/observational-memory.js';
import type { ObservationalMemoryOptions } from '../memory/observational-memory.js';
import { createWorkingMemory } from '../memory/working-memory.js';
import type { WorkingMemoryEvent } from '../memory/working-memory.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createObservationalMemoryTool } from '../tools/observational-memory-tool.js';
import { createWorkingMemoryTool } from '../tools/working-memory-tool.js';
import { createAgentRunner } from './agent-runner.js';
import { forgetConversation } from './forget-conversation.js';
import type { AgentRunnerOptions } from './agent-runner.js';
import { createInMemoryRunStore } from '../storage/in-memory-run-store.js';
import { createRedactingRunStore } from '../storage/redacting-run-store.js';
import { defineTool, type Tool } from '../tools/tool.js';
import type { RunEvent, RunStore } from '../storage/run-store.js';
import { newRun } from '../storage/run-store.suite.js';
import { z } from 'zod/v4';

// One workspace for the file's exports, removed afterwards.
const WORKSPACE = mkdtempSync(join(tmpdir(), 'hm-runner-'));
afterAll(() => rmSync(WORKSPACE, { recursive: true, force: true }));

const SENTINEL = 'SENTINEL_RECALL_user_prefers_tabs_over_spaces_42';

function harness(
  options: {
    memory?: Partial<ObservationalMemoryOptions>;
    runner?: Partial<AgentRunnerOptions>;
    memoryModel?: MockLanguageModel;
  } = {},
) {
  const store = createInMemoryStore();
  const agentModel = createMockLanguageModel('done');
  const memoryModel = options.memoryModel ?? createMockLanguageModel(`IMPORTANCE:0.9\n${SENTINEL}`);
  const observationalMemory = createObservationalMemory({
    store,
    observer: createModelObserver(memoryModel),
    reflector: createModelReflector(memoryModel),
    defaultEnabled: true,
    defaults: { observeMinTokens: 1, reflectThresholdTokens: 2 ** 30 },
    ...options.memory,
  });
  const workingMemory = createWorkingMemory({ store });
  const runStore = createInMemoryRunStore();
  const runner = createAgentRunner({
    model: agentModel,
    observationalMemory,
    workingMemory,
    runStore,
    memoryTools: [
      createWorkingMemoryTool(workingMemory),
      createObservationalMemoryTool({ memory: observationalMemory }),
    ],
    workspace: WORKSPACE,
    ...options.runner,
  });
  return { store, agentModel, memoryModel, observationalMemory, workingMemory, runStore, runner };
}

const ids = { tenantId: 'tenant-a', conversationId: 'conv-recall-1', agentId: 'agent-x' };

describe('agent runner: memory across runs', () => {
  it(
    'injects the system prompt, then working memory, then observational memory into the next run (cross-run ' +
      'recall)',
    async () => {
      const { runner, agentModel, memoryModel } = harness();
      agentModel.enqueue(
        {
          toolCalls: [
            {
              id: 'call-1',
              name: 'working_memory',
              arguments: JSON.stringify({ action: 'set', key: 'plan', value: { step: 1, target: 'auth.go' } }),
            },
          ],
        },
        'I will remember that you prefer tabs.',
      );
      const first = await runner.start({
        ...ids,
        prompt: 'I prefer tabs over spaces.',
        systemPrompt: 'You are a coder.',
      });
      expect((await runner.wait(first.runId)).status).toBe('completed');
      expect(memoryModel.calls.length).toBeGreaterThan(0);

      agentModel.calls.length = 0;
      const second = await runner.start({
        ...ids,
        prompt: 'Which indentation do I like?',
        systemPrompt: 'You are a coder.',
      });
      await runner.wait(second.runId);
      const request = agentModel.calls[0]?.messages ?? [];
      expect(request[0]).toEqual({ role: 'system', content: 'You are a coder.' });
      expect(request[1]).toMatchObject({ role: 'system' });
      expect(request[1]?.content).toBe('<working-memory>\nplan: {"step":1,"target":"auth.go"}\n</working-memory>');
      expect(request[2]?.role).toBe('system');
      expect(request[2]?.content).toContain('<observational-memory>');
      expect(request[2]?.content).toContain(SENTINEL);
      // Run 1's conversation is replayed after the system messages.
      expect(request.slice(3).map((message) => message.role)).toEqual([
        'user',
        'assistant',
        'tool',
        'assistant',
        'user',
      ]);
    },
  );

  it('adds no memory system messages when memory is empty or mode is off', async () => {
    const { runner, agentModel } = harness({ memory: { mode: 'off' } });
    const run = await runner.start({ ...ids, prompt: 'hi', systemPrompt: 'sys' });
    await runner.wait(run.runId);
    expect(agentModel.calls[0]?.messages[0]).toEqual({ role: 'system', content: 'sys' });
  });
});

describe('agent runner: events', () => {
  it('emits memory events after the assistant message and ends the stream with run.completed', async () => {
    const { runner, runStore } = harness();
    const run = await runner.start({ ...ids, prompt: 'remember tabs' });
    await runner.wait(run.runId);
    const types = (await runStore.listEvents(run.runId, -1)).map((event) => event.type);
    expect(types[0]).toBe('run.started');
    expect(types.at(-1)).toBe('run.completed');
    const index = (type: string) => types.indexOf(type);
    expect(index('assistant.message')).toBeLessThan(index('memory.observe.started'));
    expect(index('memory.observe.started')).toBeLessThan(index('memory.observe.completed'));
    expect(index('memory.observe.completed')).toBeLessThan(index('run.completed'));
    expect(index('run.step.completed')).toBeLessThan(index('run.completed'));
    const events = await runStore.listEvents(run.runId, -1);
    const completed = events.find((event) => event.type === 'memory.observe.completed');
    expect(completed?.payload).toMatchObject({
      step: 1,
      observed: true,
      reflected: false,
      observation: 1,
      schema_version: '1',
      conversation_id: 'conv-recall-1',
    });
    expect(events.map((event) => event.seq)).toEqual(events.map((_, position) => position));
    expect(events[0]?.id).toBe(`${run.runId}:0`);
  });

  it('makes no memory events for a disabled scope', async () => {
    const { runner, runStore } = harness({ memory: { defaultEnabled: false } });
    const run = await runner.start({ ...ids, prompt: 'hi' });
    await runner.wait(run.runId);
    const types = (await runStore.listEvents(run.runId, -1)).map((event) => event.type);
    expect(types.filter((type) => type.startsWith('memory.'))).toEqual([]);
  });

  it('emits memory.reflection.completed for reflect_now called as a tool', async () => {
    const memoryModel = createMockLanguageModel((options) =>
      options.messages[0]?.content.includes('structured reflection')
        ? 'SUMMARY:\nTabs.'
        : `IMPORTANCE:0.9\n${SENTINEL}`,
    );
    const { runner, runStore, agentModel } = harness({ memoryModel });
    agentModel.enqueue('first');
    await runner.wait((await runner.start({ ...ids, prompt: 'I like tabs' })).runId);
    agentModel.enqueue(
      { toolCalls: [{ id: 'c1', name: 'observational_memory', arguments: '{"action":"reflect_now"}' }] },
      'reflected',
    );
    const run = await runner.start({ ...ids, prompt: 'reflect please' });
    await runner.wait(run.runId);
    const types = (await runStore.listEvents(run.runId, -1)).map((event) => event.type);
    expect(types).toContain('memory.reflection.completed');
  });

  it("puts an observation's reflection after its memory.observe.completed, with the observed step", async () => {
    let openGate = (): void => undefined;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    let observes = 0;
    const memoryModel = createMockLanguageModel(async (options) => {
      if (options.messages[0]?.content.includes('structured reflection')) return 'SUMMARY:\nTabs.';
      // Step 1's observation waits for step 2's turn, so it finishes while the run is on step 2.
      if (++observes === 1) await gate;
      return `IMPORTANCE:0.9\n${SENTINEL}`;
    });
    const { runner, runStore, agentModel } = harness({
      memoryModel,
      memory: { defaults: { observeMinTokens: 1, reflectThresholdTokens: 1 } },
    });
    agentModel.enqueue(
      {
        toolCalls: [
          { id: 'c1', name: 'working_memory', arguments: JSON.stringify({ action: 'set', key: 'k', value: 1 }) },
        ],
      },
      () => {
        openGate();
        return 'done';
      },
    );
    const run = await runner.start({ ...ids, prompt: 'I like tabs' });
    expect((await runner.wait(run.runId)).status).toBe('completed');
    const memoryEvents = (await runStore.listEvents(run.runId, -1))
      .filter((event) => event.type.startsWith('memory.'))
      .map((event) => `${event.type}@${String(event.payload['step'])}`);
    expect(memoryEvents).toEqual([
      'memory.working_memory.set@1',
      'memory.observe.started@1',
      'memory.observe.completed@1',
      'memory.reflection.completed@1',
      'memory.observe.started@2',
      'memory.observe.completed@2',
      'memory.reflection.completed@2',
    ]);
  });

  it('reports a failed observation as memory.observe.failed and still completes the run', async () => {
    const memoryModel = createMockLanguageModel(new Error('observer down'));
    const { runner, runStore } = harness({ memoryModel, memory: { maxOperationAttempts: 1 } });
    const run = await runner.start({ ...ids, prompt: 'hello' });
    expect((await runner.wait(run.runId)).status).toBe('completed');
    const failed = (await runStore.listEvents(run.runId, -1)).find((event) => event.type === 'memory.observe.failed');
    expect(failed?.payload['error']).toMatch(/observer down/);
  });

  it('puts memory.operation.dead on the stream of the run whose operation used up its attempts', async () => {
    const memoryModel = createMockLanguageModel(new Error('observer keeps crashing'));
    const { runner, runStore, observationalMemory } = harness({ memoryModel, memory: { maxOperationAttempts: 1 } });
    const run = await runner.start({ ...ids, prompt: 'hello' });
    expect((await runner.wait(run.runId)).status).toBe('completed');
    const dead = (await runStore.listEvents(run.runId, -1)).find((event) => event.type === 'memory.operation.dead');
    expect(dead?.payload).toMatchObject({
      operation_type: 'observe',
      attempts: 1,
      error: expect.stringMatching(/^gave up after 1 attempts: .*observer keeps crashing/),
      conversation_id: ids.conversationId,
    });
    const operationId = String(dead?.payload['operation_id']);
    expect(
      (await observationalMemory.inspect(ids)).operations.find((operation) => operation.operationId === operationId)
        ?.status,
    ).toBe('dead');
    expect((await observationalMemory.status(ids)).deadOperations).toBe(1);
  });

  it('puts memory.message.skipped on the stream of the run whose message the model refused', async () => {
    const memoryModel = createMockLanguageModel(
      new ModelCallError({
        message: 'Invalid prompt: your prompt was flagged as potentially violating our usage policy.',
        statusCode: 400,
      }),
    );
    const { runner, runStore, observationalMemory } = harness({ memoryModel });
    const run = await runner.start({ ...ids, prompt: 'something flagged' });
    expect((await runner.wait(run.runId)).status).toBe('completed');
    const skipped = (await runStore.listEvents(run.runId, -1)).find((event) => event.type === 'memory.message.skipped');
    expect(skipped?.payload).toMatchObject({
      message_seq: 1,
      message_key: `id:${run.runId}:user`,
      error: expect.stringMatching(/^skipped message 1 .*the model refused it.*usage policy/),
      conversation_id: ids.conversationId,
    });
    const status = await observationalMemory.status(ids);
    expect(status).toMatchObject({ deadOperations: 0, observationCount: 0 });
  });

  it('captures request snapshots, with the memory snippet only when opted in', async () => {
    for (const snapshotMemorySnippet of [false, true]) {
      const { runner, runStore } = harness({
        runner: { forensics: { captureRequestEnvelope: true, snapshotMemorySnippet } },
      });
      await runner.wait((await runner.start({ ...ids, prompt: 'I like tabs' })).runId);
      const run = await runner.start({ ...ids, prompt: 'again' });
      await runner.wait(run.runId);
      const snapshot = (await runStore.listEvents(run.runId, -1)).find(
        (event) => event.type === 'llm.request.snapshot',
      );
      expect(snapshot?.payload).toMatchObject({ step: 1, tool_names: ['working_memory', 'observational_memory'] });
      expect(snapshot?.payload['prompt_hash']).toMatch(/^[0-9a-f]{64}$/);
      if (snapshotMemorySnippet) expect(String(snapshot?.payload['memory_snippet'])).toContain(SENTINEL);
      else expect(snapshot?.payload['memory_snippet']).toBeUndefined();
    }
  });
});

describe('agent runner: loop', () => {
  it('publishes the final answer before the slow observation settles, then completes', async () => {
    // The observation is held until the test lets it go, so "before it settles" does not
    // depend on how fast the machine is.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const memoryModel = createMockLanguageModel(async () => {
      await held;
      return { text: `IMPORTANCE:0.9\n${SENTINEL}` };
    });
    const { runner, runStore } = harness({ memoryModel });
    const run = await runner.start({ ...ids, prompt: 'hello' });
    let seen = await runStore.getRun(run.runId);
    while (seen?.output === null) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      seen = await runStore.getRun(run.runId);
    }
    expect(seen?.output).toBe('done');
    expect(seen?.status).toBe('running');
    release();
    expect((await runner.wait(run.runId)).status).toBe('completed');
  });

  it('feeds tool errors back to the model and goes on', async () => {
    const { runner, agentModel, runStore } = harness();
    agentModel.enqueue(
      {
        toolCalls: [
          { id: 'c1', name: 'no_such_tool', arguments: '{}' },
          { id: 'c2', name: 'working_memory', arguments: '{"action":"explode"}' },
        ],
      },
      'recovered',
    );
    const run = await runner.start({ ...ids, prompt: 'go' });
    const done = await runner.wait(run.runId);
    expect(done).toMatchObject({ status: 'completed', output: 'recovered', steps: 2 });
    const toolMessages = agentModel.calls[1]?.messages.filter((message) => message.role === 'tool') ?? [];
    expect(JSON.parse(toolMessages[0]?.content ?? '{}').error.message).toContain('unknown tool "no_such_tool"');
    expect(JSON.parse(toolMessages[1]?.content ?? '{}').error.message).toContain('unsupported action');
    const completed = (await runStore.listEvents(run.runId, -1)).filter(
      (event) => event.type === 'tool.call.completed',
    );
    expect(completed.map((event) => event.payload['ok'])).toEqual([false, false]);
  });

  it('answers malformed tool arguments with TOOL_INPUT_INVALID, and a tool returning nothing with null', async () => {
    const notify = defineTool({
      name: 'notify',
      description: 'Notifies someone.',
      inputSchema: z.object({}),
      execute: async () => undefined,
    });
    const { runner, agentModel } = harness({ runner: { tools: [notify] } });
    agentModel.enqueue(
      {
        toolCalls: [
          // Cut at the model's token limit.
          { id: 'c1', name: 'working_memory', arguments: '{"action":"set","key":"plan","value":{"step":1}' },
          { id: 'c2', name: 'notify', arguments: '{}' },
        ],
      },
      'noted',
    );
    const done = await runner.wait((await runner.start({ ...ids, prompt: 'go' })).runId);
    expect(done).toMatchObject({ status: 'completed', output: 'noted' });
    const [cut, nothing] = agentModel.calls[1]?.messages.filter((message) => message.role === 'tool') ?? [];
    expect(JSON.parse(cut?.content ?? '{}').error).toMatchObject({
      code: 'TOOL_INPUT_INVALID',
      message: expect.stringContaining('the arguments of tool "working_memory" are not valid JSON'),
    });
    expect(nothing?.content).toBe('null');
  });

  it('stores a tool value labelled as a secret by its key redacted (arguments and results)', async () => {
    const aws = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
    const creds = defineTool({
      name: 'aws_creds',
      description: 'Reads credentials.',
      inputSchema: z.object({}),
      execute: async () => ({ AccessKeyId: 'x', SecretAccessKey: aws }),
    });
    const { runner, agentModel, workingMemory } = harness({
      runner: { tools: [creds], runStore: createRedactingRunStore(createInMemoryRunStore()) },
    });
    agentModel.enqueue(
      {
        toolCalls: [
          {
            id: 'c1',
            name: 'working_memory',
            arguments: JSON.stringify({ action: 'set', key: 'cfg', value: { api_key: 'k3y-value!' } }),
          },
          { id: 'c2', name: 'aws_creds', arguments: '{}' },
        ],
      },
      'done',
    );
    const run = await runner.start({ ...ids, conversationId: 'conv-labelled', prompt: 'go' });
    await runner.wait(run.runId);
    const stored = JSON.stringify(await runner.continue(run.runId, 'again').then((next) => runner.wait(next.runId)));
    const replayed = JSON.stringify(agentModel.calls.at(-1)?.messages);
    for (const text of [stored, replayed, await workingMemory.snippet(run.scope)]) {
      expect(text).not.toContain('k3y-value!');
      expect(text).not.toContain(aws);
    }
    expect(replayed).toContain('[REDACTED:aws_secret_key]');
  });

  it('offers both memory tools when memoryTools is left out, and none with []', async () => {
    const offered = async (memoryTools?: []) => {
      // `memoryTools: undefined` leaves the runner its default tools.
      const { runner, agentModel } = harness({ runner: { memoryTools } });
      await runner.wait((await runner.start({ ...ids, prompt: 'hi' })).runId);
      return (agentModel.calls[0]?.tools ?? []).map((tool) => tool.name);
    };
    expect(await offered()).toEqual(['working_memory', 'observational_memory']);
    expect(await offered([])).toEqual([]);
  });

  it("reviews memory with the agent's own model through the default observational_memory tool", async () => {
    const { runner, agentModel: model, observationalMemory } = harness({ runner: { memoryTools: undefined } });
    await observationalMemory.importObservations({ ...ids, conversationId: 'conv-review' }, [
      { content: 'The user deploys on Fridays.' },
    ]);
    model.enqueue(
      { toolCalls: [{ id: 'c1', name: 'observational_memory', arguments: '{"action":"review"}' }] },
      'Nothing contradicts.',
      'Reviewed.',
    );
    const done = await runner.wait(
      (await runner.start({ ...ids, conversationId: 'conv-review', prompt: 'review' })).runId,
    );
    expect(done).toMatchObject({ status: 'completed', output: 'Reviewed.' });
    expect(model.calls[1]?.messages.map((message) => message.role)).toEqual(['system', 'user']);
    expect(model.calls[1]?.messages[0]?.content).toContain('Review the observational memory');
    expect(model.calls[1]?.messages[1]?.content).toContain('The user deploys on Fridays.');
    const tool = model.calls[2]?.messages.find((message) => message.role === 'tool');
    expect(JSON.parse(tool?.content ?? '{}').review).toMatchObject({
      analysis: 'Nothing contradicts.',
      model: 'delegated-agent',
    });
  });

  it('fails a run that reaches max_steps without a final answer', async () => {
    const { runner, agentModel } = harness();
    agentModel.enqueue(
      ...Array.from({ length: 5 }, (_, index) => ({
        toolCalls: [{ id: `c${index}`, name: 'working_memory', arguments: '{"action":"list"}' }],
      })),
    );
    const run = await runner.start({ ...ids, prompt: 'loop', maxSteps: 3 });
    const done = await runner.wait(run.runId);
    expect(done.status).toBe('failed');
    expect(done.error?.code).toBe('MAX_STEPS');
    expect(done.steps).toBe(3);
  });

  it('fails a run whose final answer was cut at the output limit or stopped by a filter, keeping what came', async () => {
    const { runner, agentModel, runStore } = harness();
    agentModel.enqueue(
      { text: 'The plan has three parts: first', finishReason: 'length' },
      { text: '', finishReason: 'content-filter' },
      { text: 'I cannot help with that.', finishReason: 'refusal' },
    );
    const cut = await runner.wait((await runner.start({ ...ids, prompt: 'plan' })).runId);
    expect(cut).toMatchObject({ status: 'failed', output: 'The plan has three parts: first' });
    expect(cut.error).toMatchObject({ code: 'OUTPUT_TRUNCATED', message: expect.stringContaining('output limit') });
    const events = await runStore.listEvents(cut.runId, -1);
    expect(events.at(-1)).toMatchObject({ type: 'run.failed', payload: { error: { code: 'OUTPUT_TRUNCATED' } } });
    const filtered = await runner.wait((await runner.start({ ...ids, prompt: 'x' })).runId);
    expect(filtered).toMatchObject({ status: 'failed', error: { code: 'OUTPUT_FILTERED' } });
    const refused = await runner.wait((await runner.start({ ...ids, prompt: 'y' })).runId);
    expect(refused).toMatchObject({ status: 'completed', output: 'I cannot help with that.' });
  });

  it("puts the run's working-memory sets and deletes on its stream, between its tool events, never the value", async () => {
    const { runner, agentModel, runStore, workingMemory } = harness();
    const seen: WorkingMemoryEvent[] = [];
    workingMemory.subscribe((event) => seen.push(event));
    const call = (id: string, args: Record<string, unknown>) => ({
      toolCalls: [{ id, name: 'working_memory', arguments: JSON.stringify(args) }],
    });
    agentModel.enqueue(
      call('c1', { action: 'set', key: 'plan', value: 'SECRET-VALUE-42' }),
      call('c2', { action: 'delete', key: 'plan' }),
      call('c3', { action: 'delete', key: 'plan' }),
      'done',
    );
    const run = await runner.wait((await runner.start({ ...ids, prompt: 'plan' })).runId);
    const events = await runStore.listEvents(run.runId, -1);
    const types = events
      .map((event) => event.type)
      .filter((type) => type.startsWith('tool.') || type.includes('working'));
    expect(types).toEqual([
      'tool.call.started',
      'memory.working_memory.set',
      'tool.call.completed',
      'tool.call.started',
      'memory.working_memory.deleted',
      'tool.call.completed',
      'tool.call.started',
      'tool.call.completed',
    ]);
    expect(events.find((event) => event.type === 'memory.working_memory.set')?.payload).toMatchObject({
      key: 'plan',
      bytes: '"SECRET-VALUE-42"'.length,
      step: 1,
    });
    expect(JSON.stringify(events)).not.toContain('SECRET-VALUE-42');
    // Subscribers hear of every change, also those made outside a run (no runId then).
    await workingMemory.set(ids, 'note', 1);
    expect(seen.map((event) => [event.type, event.key, event.runId])).toEqual([
      ['memory.working_memory.set', 'plan', run.runId],
      ['memory.working_memory.deleted', 'plan', run.runId],
      ['memory.working_memory.set', 'note', undefined],
    ]);
  });

  it("gives a working-memory set with ttl_seconds its expires_at on the run's stream", async () => {
    const { runner, agentModel, runStore } = harness();
    agentModel.enqueue(
      {
        toolCalls: [
          {
            id: 'c1',
            name: 'working_memory',
            arguments: JSON.stringify({ action: 'set', key: 'draft', value: 1, ttl_seconds: 120 }),
          },
        ],
      },
      'done',
    );
    const run = await runner.wait((await runner.start({ ...ids, prompt: 'draft' })).runId);
    const events = await runStore.listEvents(run.runId, -1);
    const set = events.find((event) => event.type === 'memory.working_memory.set');
    const expiresAt = (set?.payload as { expires_at?: string } | undefined)?.expires_at;
    expect(Date.parse(expiresAt!)).toBeGreaterThan(Date.now() + 60_000);
    expect(Date.parse(expiresAt!)).toBeLessThanOrEqual(Date.now() + 120_000);
  });

  it('cancels a running run', async () => {
    const { runner, agentModel, runStore } = harness();
    let calling = (): void => undefined;
    const called = new Promise<void>((resolve) => (calling = resolve));
    agentModel.enqueue((options) => {
      calling();
      return new Promise<never>((_, reject) =>
        options.abortSignal?.addEventListener('abort', () => reject(new Error('aborted'))),
      );
    });
    const run = await runner.start({ ...ids, prompt: 'slow' });
    // Cancelled while the model call is under way.
    await called;
    const cancelled = await runner.cancel(run.runId);
    expect(cancelled.status).toBe('cancelled');
    expect((await runStore.listEvents(run.runId, -1)).at(-1)?.type).toBe('run.cancelled');
  });

  it('runs a hand-written tool that returns a plain value, not a promise', async () => {
    const plain: Tool = {
      name: 'plain',
      description: 'Answers at once.',
      inputSchema: z.object({}),
      parameters: { type: 'object' },
      execute: (() => ({ v: 1 })) as unknown as Tool['execute'],
    };
    const { runner, agentModel } = harness({ runner: { tools: [plain] } });
    agentModel.enqueue({ toolCalls: [{ id: 'c1', name: 'plain', arguments: '{}' }] }, 'done');
    await runner.wait((await runner.start({ ...ids, conversationId: 'conv-plain', prompt: 'go' })).runId);
    expect(agentModel.calls[1]?.messages.find((message) => message.role === 'tool')?.content).toBe('{"v":1}');
  });

  it('cancels a run while a tool runs, without waiting for the tool, and hands the tool the signal', async () => {
    let release = (): void => undefined;
    const never = new Promise<void>((resolve) => (release = resolve));
    let started = (): void => undefined;
    const running = new Promise<void>((resolve) => (started = resolve));
    let signalled: AbortSignal | undefined;
    const slow = defineTool({
      name: 'slow',
      description: 'Takes its time.',
      inputSchema: z.object({}),
      execute: async (_args, context) => {
        signalled = context.signal;
        started();
        await never; // ignores the signal, as a careless tool does
        return { ok: true };
      },
    });
    const { runner, agentModel, runStore } = harness({ runner: { tools: [slow] } });
    agentModel.enqueue({ toolCalls: [{ id: 'c1', name: 'slow', arguments: '{}' }] }, 'unreached');
    const run = await runner.start({ ...ids, conversationId: 'conv-slow-tool', prompt: 'go' });
    await running;
    const cancelled = await runner.cancel(run.runId);
    release();
    expect(cancelled.status).toBe('cancelled');
    expect(signalled?.aborted).toBe(true);
    expect((await runStore.listEvents(run.runId, -1)).at(-1)?.type).toBe('run.cancelled');
    expect(agentModel.calls).toHaveLength(1);
  });

  it('falls back to the run id for the conversation and validates ids', async () => {
    const { runner } = harness();
    const run = await runner.start({ prompt: 'hi' });
    expect(run.scope).toEqual({ tenantId: 'default', conversationId: run.runId, agentId: 'default' });
    expect(run.runId).toMatch(/^run_[0-9a-f-]{36}$/);
    await expect(runner.start({ prompt: 'hi', tenantId: '../etc' })).rejects.toThrow(/tenant_id/);
    await expect(runner.start({ prompt: '  ' })).rejects.toThrow(/prompt is required/);
    await runner.settle();
  });

  it('refuses a model outside allowedModels, storing no run, and takes one inside it or none', async () => {
    const { runner, runStore } = harness({ runner: { allowedModels: ['gpt-5-mini', 'llama3.1'] } });
    await expect(runner.start({ ...ids, prompt: 'hi', model: 'o1-pro' })).rejects.toMatchObject({
      code: 'REQUEST_INVALID',
      message: expect.stringContaining('model "o1-pro" is not allowed on this server; allowed: gpt-5-mini, llama3.1'),
    });
    expect(await runStore.listRuns({ tenantId: ids.tenantId, limit: 10 })).toEqual([]);
    expect((await runner.start({ ...ids, prompt: 'hi', model: ' llama3.1 ' })).model).toBe('llama3.1');
    expect((await runner.start({ ...ids, prompt: 'hi' })).model).toBe('');
    expect(() => harness({ runner: { allowedModels: [''] } })).toThrow(
      expect.objectContaining({
        code: 'OPTION_INVALID',
        data: { factory: 'createAgentRunner', option: 'allowedModels' },
      }),
    );
    await runner.settle();
  });

  it('refuses a model id that looks like a secret, is too long or holds control characters, storing no run', async () => {
    const { runner, runStore } = harness();
    await expect(runner.start({ ...ids, prompt: 'hi', model: 'sk-proj-abcdefghijklmnopqrstuvwx' })).rejects.toThrow(
      'model looks like a secret (openai_key)',
    );
    await expect(runner.start({ ...ids, prompt: 'hi', model: 'm'.repeat(201) })).rejects.toThrow(
      'model is 201 characters long; at most 200 are allowed',
    );
    await expect(runner.start({ ...ids, prompt: 'hi', model: 'gpt\u0000x' })).rejects.toThrow(/control characters/);
    await expect(runner.start({ ...ids, prompt: 'hi', model: 7 as unknown as string })).rejects.toThrow(
      'model must be a string',
    );
    expect(await runStore.listRuns({ tenantId: ids.tenantId, limit: 10 })).toEqual([]);
    const trimmed = await runner.start({ ...ids, prompt: 'hi', model: '  gpt-4.1-mini \n' });
    expect(trimmed.model).toBe('gpt-4.1-mini');
    const blank = await runner.start({ ...ids, prompt: 'hi', model: '   ' });
    expect(blank.model).toBe('');
    await runner.settle();
  });

  it('continues with the system prompt as given, not as the redacting run store keeps it', async () => {
    const runStore = createRedactingRunStore(createInMemoryRunStore());
    const { runner, agentModel } = harness({ runner: { runStore } });
    agentModel.enqueue('first', 'second', 'third');
    const systemPrompt = 'You are the support agent of ACME. Escalate to support@acme.example.';
    const first = await runner.start({ ...ids, conversationId: 'conv-system', prompt: 'hi', systemPrompt });
    await runner.wait(first.runId);
    expect((await runStore.getRun(first.runId))?.systemPrompt).toContain('[REDACTED:email_address]');
    const second = await runner.continue(first.runId, 'again');
    await runner.wait(second.runId);
    const third = await runner.continue(second.runId, 'and again');
    await runner.wait(third.runId);
    for (const call of agentModel.calls) expect(call.messages[0]).toEqual({ role: 'system', content: systemPrompt });
  });

  it('continues a run whose answer is in while its memory work goes on, and refuses one still working', async () => {
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const memoryModel = createMockLanguageModel(async () => {
      await held;
      return `IMPORTANCE:0.9\n${SENTINEL}`;
    });
    const { runner, agentModel, runStore } = harness({ memoryModel });
    let answer = (): void => undefined;
    const answering = new Promise<void>((resolve) => (answer = resolve));
    agentModel.enqueue(async () => {
      await answering;
      return 'first answer';
    }, 'second answer');
    const first = await runner.start({ ...ids, conversationId: 'conv-settling', prompt: 'one' });
    await vi.waitFor(async () => expect((await runStore.getRun(first.runId))?.status).toBe('running'));
    await expect(runner.continue(first.runId, 'too early')).rejects.toMatchObject({ code: 'RUN_NOT_COMPLETED' });
    answer();
    // The answer is stored; the observer has not answered yet.
    await vi.waitFor(async () => expect((await runStore.getRun(first.runId))?.output).toBe('first answer'));
    expect((await runStore.getRun(first.runId))?.status).toBe('running');
    const next = await runner.continue(first.runId, 'two');
    expect(next.parentRunId).toBe(first.runId);
    release();
    expect(await runner.wait(first.runId)).toMatchObject({ status: 'completed', output: 'first answer' });
    expect(await runner.wait(next.runId)).toMatchObject({ status: 'completed', output: 'second answer' });
    // The next turn saw the first run's answer in its history.
    expect(JSON.stringify(agentModel.calls.at(-1)?.messages)).toContain('first answer');
  });

  it('continues a finished run in the same scope', async () => {
    const { runner } = harness();
    const first = await runner.start({ ...ids, prompt: 'one' });
    await runner.wait(first.runId);
    const next = await runner.continue(first.runId, 'two');
    expect(next.scope).toEqual(first.scope);
    expect(next.parentRunId).toBe(first.runId);
    await runner.wait(next.runId);
  });
});

/** A run left `running` by a process that crashed. */
function orphanRun(): Parameters<RunStore['createRun']>[0] {
  return {
    ...newRun('run_orphan'),
    scope: { tenantId: 't', conversationId: 'c', agentId: 'a' },
    status: 'running',
    maxSteps: 3,
    steps: 1,
  };
}

describe('agent runner: abandoned runs', () => {
  it('fails a run whose process stopped heartbeating, ending its stream, and leaves live runs alone', async () => {
    let clock = Date.parse('2026-12-02T10:00:00.000Z');
    const runStore = createInMemoryRunStore({ now: () => new Date(clock) });
    const { runner, agentModel } = harness({ runner: { runStore } });
    // A run left `running` by a process that crashed.
    await runStore.createRun(orphanRun());
    // A live run of this process, slow to answer.
    agentModel.enqueue({ text: 'slow', delayMs: 300 });
    const live = await runner.start({ ...ids, prompt: 'live' });
    clock += 10 * 60 * 1000;
    const maintenance = runner.startMaintenance({ abandonAfterSeconds: 300, sweepMs: 20, heartbeatMs: 20 });
    // Polled until the sweep ran; the test's own timeout bounds it.
    while ((await runStore.getRun('run_orphan'))?.status === 'running')
      await new Promise((resolve) => setTimeout(resolve, 10));
    const orphan = await runStore.getRun('run_orphan');
    expect(orphan?.status).toBe('failed');
    expect(orphan?.error?.code).toBe('RUN_ABANDONED');
    expect((await runStore.listEvents('run_orphan', -1)).at(-1)?.type).toBe('run.failed');
    expect((await runner.wait(live.runId)).status).toBe('completed');
    await maintenance.stop();
  });
});

describe('agent runner: run retention', () => {
  it('deletes runs that ended before the retention age, in batches, and keeps the rest', async () => {
    let clock = Date.parse('2026-12-02T10:00:00.000Z');
    const runStore = createInMemoryRunStore({ now: () => new Date(clock) });
    const { runner } = harness({ runner: { runStore } });
    // More old runs than one delete takes, so the sweep works in several.
    for (let index = 0; index < 1_200; index++) {
      await runStore.createRun({ ...newRun(`old_${index}`), status: 'completed' });
      await runStore.appendEvent(`old_${index}`, 'run.completed', {});
    }
    await runStore.createRun(orphanRun());
    clock += 2 * 86_400_000;
    await runStore.createRun({ ...newRun('recent'), status: 'failed' });
    const maintenance = runner.startMaintenance({
      runRetentionSeconds: 86_400,
      abandonAfterSeconds: 10 * 86_400,
      sweepMs: 60_000,
      heartbeatMs: 60_000,
    });
    // The first sweep runs at the start, one delete of 500 after another.
    while (await runStore.getRun('old_1199')) await new Promise((resolve) => setTimeout(resolve, 5));
    await maintenance.stop();
    expect(await runStore.getRun('old_0')).toBeUndefined();
    expect(await runStore.getRun('old_1199')).toBeUndefined();
    expect(await runStore.listEvents('old_1199', -1)).toEqual([]);
    expect((await runStore.getRun('recent'))?.status).toBe('failed');
    // Running, though old: only ended runs are deleted.
    expect((await runStore.getRun('run_orphan'))?.status).toBe('running');
  });

  it('lets a heartbeat run between two deletes of a backlog, and stops deleting when stopped', async () => {
    const runStore = createInMemoryRunStore();
    const calls: string[] = [];
    const releases: Array<() => void> = [];
    const counted: RunStore = {
      ...runStore,
      // A backlog that never ends: every delete takes a whole batch, once the test lets it.
      deleteEndedRuns: async () => {
        calls.push('delete');
        await new Promise<void>((resolve) => releases.push(resolve));
        return 500;
      },
      updateRun: async (runId, patch) => {
        calls.push('heartbeat');
        return runStore.updateRun(runId, patch);
      },
    };
    const { runner, agentModel } = harness({ runner: { runStore: counted } });
    let finish = (): void => undefined;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    agentModel.enqueue(async () => {
      await finished;
      return 'done';
    });
    const live = await runner.start({ ...ids, prompt: 'hello' });
    // The maintenance's intervals on a fake clock: heartbeats fall due when the test says.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const maintenance = runner.startMaintenance({ runRetentionSeconds: 60, heartbeatMs: 10, sweepMs: 60_000 });
    const deletes = () => calls.filter((call) => call === 'delete').length;
    const until = async (done: () => boolean) => {
      while (!done()) await new Promise((resolve) => setTimeout(resolve, 5));
    };
    // Heartbeats fall due while the first delete waits; they run before the second.
    await until(() => releases.length === 1);
    vi.advanceTimersByTime(30);
    vi.useRealTimers();
    releases[0]?.();
    await until(() => releases.length === 2);
    const stopping = maintenance.stop();
    releases[1]?.();
    await stopping;
    const first = calls.indexOf('delete');
    expect(calls.slice(first + 1, calls.indexOf('delete', first + 1))).toContain('heartbeat');
    expect(deletes()).toBe(2);
    finish();
    await runner.wait(live.runId);
  });

  it('starts no delete after stop(), even when stopped during the sweep before it', async () => {
    const runStore = createInMemoryRunStore();
    let releaseSweep = (): void => undefined;
    const sweeping = new Promise<void>((resolve) => (releaseSweep = resolve));
    let listed = false;
    let deletes = 0;
    const counted: RunStore = {
      ...runStore,
      listStaleRuns: async (seconds) => {
        listed = true;
        await sweeping;
        return runStore.listStaleRuns(seconds);
      },
      deleteEndedRuns: async () => {
        deletes++;
        return 0;
      },
    };
    const { runner } = harness({ runner: { runStore: counted } });
    const maintenance = runner.startMaintenance({ runRetentionSeconds: 60, sweepMs: 60_000, heartbeatMs: 60_000 });
    while (!listed) await new Promise((resolve) => setTimeout(resolve, 5));
    const stopping = maintenance.stop();
    releaseSweep();
    await stopping;
    expect(deletes).toBe(0);
  });

  it('refuses a retention the store cannot apply, and bad maintenance options, naming them', () => {
    const runStore = createInMemoryRunStore();
    const { deleteEndedRuns: _, ...withoutRetention } = runStore;
    const { runner } = harness({ runner: { runStore: withoutRetention } });
    expect(() => runner.startMaintenance({ runRetentionSeconds: 60 })).toThrow(
      expect.objectContaining({
        code: 'OPTION_INVALID',
        data: { factory: 'startRunMaintenance', option: 'runRetentionSeconds' },
      }),
    );
    for (const [option, value] of [
      ['runRetentionSeconds', -1],
      ['runRetentionSeconds', 1.5],
      ['sweepMs', 0],
      ['heartbeatMs', Number.NaN],
      ['abandonAfterSeconds', 0],
    ] as const)
      expect(() => harness().runner.startMaintenance({ [option]: value })).toThrow(
        expect.objectContaining({ code: 'OPTION_INVALID', data: { factory: 'startRunMaintenance', option } }),
      );
  });
});

describe('agent runner: settle', () => {
  it('refuses a timeout a timer cannot wait, naming it', async () => {
    const { runner } = harness();
    for (const timeoutMs of [Number.POSITIVE_INFINITY, Number.NaN, -1])
      await expect(runner.settle({ timeoutMs })).rejects.toMatchObject({
        code: 'OPTION_INVALID',
        data: { factory: 'AgentRunner.settle', option: 'timeoutMs' },
      });
    await expect(runner.settle({ timeoutMs: 0 })).resolves.toBeUndefined();
  });
});

describe('agent runner: two processes sweeping one store', () => {
  it('fails an abandoned run once: one run.failed, its last event', async () => {
    let clock = Date.parse('2026-01-01T00:00:00Z');
    const runStore = createInMemoryRunStore({ now: () => new Date(clock) });
    await runStore.createRun(orphanRun());
    await runStore.appendEvent('run_orphan', 'run.started', {});
    clock += 10 * 60 * 1000;
    const sweepers = [harness({ runner: { runStore } }), harness({ runner: { runStore } })].map(({ runner }) =>
      runner.startMaintenance({ abandonAfterSeconds: 300, sweepMs: 60_000, heartbeatMs: 60_000 }),
    );
    // Each sweeps once at its start; stopping waits for that sweep.
    await Promise.all(sweepers.map((maintenance) => maintenance.stop()));
    const types = (await runStore.listEvents('run_orphan', -1)).map((event) => event.type);
    expect(types).toEqual(['run.started', 'run.failed']);
    expect((await runStore.getRun('run_orphan'))?.error?.code).toBe('RUN_ABANDONED');
  });
});

describe('agent runner: a run swept as abandoned while its process was paused', () => {
  /** A runner whose model answers once `release` is called, or when the call is aborted. */
  function pausedRunner(runStore: RunStore) {
    const { runner, agentModel } = harness({ runner: { runStore } });
    let release!: () => void;
    let called!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const calledOnce = new Promise<void>((resolve) => (called = resolve));
    agentModel.enqueue(async (call) => {
      called();
      await Promise.race([
        released,
        new Promise<void>((resolve) => call.abortSignal?.addEventListener('abort', () => resolve())),
      ]);
      return { text: 'a late answer' };
    });
    return { runner, release, calledOnce };
  }

  async function sweptWhilePaused() {
    let clock = Date.parse('2026-01-01T00:00:00Z');
    const runStore = createInMemoryRunStore({ now: () => new Date(clock) });
    const paused = pausedRunner(runStore);
    const run = await paused.runner.start({ ...ids, prompt: 'hi' });
    await paused.calledOnce;
    clock += 6 * 60 * 1000;
    const sweeper = harness({ runner: { runStore } }).runner;
    await sweeper.startMaintenance({ abandonAfterSeconds: 300, sweepMs: 60_000, heartbeatMs: 60_000 }).stop();
    return { runStore, paused, run };
  }

  it('stays failed when the process wakes: nothing it writes comes after run.failed', async () => {
    const { runStore, paused, run } = await sweptWhilePaused();
    paused.release();
    const ended = await paused.runner.wait(run.runId);
    expect(ended).toMatchObject({ status: 'failed', error: { code: 'RUN_ABANDONED' }, output: null });
    expect(await runStore.getRun(run.runId)).toMatchObject({ status: 'failed', error: { code: 'RUN_ABANDONED' } });
    const types = (await runStore.listEvents(run.runId, -1)).map((event) => event.type);
    expect(types.at(-1)).toBe('run.failed');
    expect(types.filter((type) => type.startsWith('run.') && type !== 'run.started')).toEqual(['run.failed']);
  });

  it('is given up by its process at the next heartbeat, without waiting for the model', async () => {
    const { runStore, paused, run } = await sweptWhilePaused();
    const maintenance = paused.runner.startMaintenance({ heartbeatMs: 5, sweepMs: 60_000 });
    try {
      const ended = await paused.runner.wait(run.runId);
      expect(ended).toMatchObject({ status: 'failed', error: { code: 'RUN_ABANDONED' } });
      expect((await runStore.listEvents(run.runId, -1)).at(-1)?.type).toBe('run.failed');
    } finally {
      paused.release();
      await maintenance.stop();
    }
  });
});

describe('agent runner: a run end whose terminal event fails to store', () => {
  it('streams the end the run has in the store, after two failed attempts', async () => {
    const inner = createInMemoryRunStore();
    let failures = 0;
    const runStore: RunStore = {
      ...inner,
      appendEvent: async (runId, type, payload) => {
        if (type === 'run.completed' && failures < 2) {
          failures++;
          throw new Error(`transient store failure ${failures}`);
        }
        return inner.appendEvent(runId, type, payload);
      },
    };
    const { runner } = harness({ runner: { runStore } });
    const run = await runner.start({ ...ids, prompt: 'hi' });
    const ended = await runner.wait(run.runId);
    expect(ended.status).toBe('completed');
    expect(await inner.getRun(run.runId)).toMatchObject({ status: 'completed', output: 'done' });
    const types = (await inner.listEvents(run.runId, -1)).map((event) => event.type);
    expect(types.at(-1)).toBe('run.completed');
    expect(types).not.toContain('run.failed');
  });
});

describe('agent runner: the abandon sweep racing the woken process', () => {
  it('leaves the end the woken process recorded, and goes on to the other stale runs', async () => {
    let clock = Date.parse('2026-01-01T00:00:00Z');
    const inner = createInMemoryRunStore({ now: () => new Date(clock) });
    const runStore: RunStore = {
      ...inner,
      // The process running run_a wakes right after the sweep failed it, and records its end first.
      abandonStaleRun: async (runId, olderThanSeconds, error) => {
        const run = await inner.abandonStaleRun(runId, olderThanSeconds, error);
        if (run && runId === 'run_a') await inner.appendEvent(runId, 'run.failed', { error: run.error });
        return run;
      },
    };
    await inner.createRun({ ...orphanRun(), runId: 'run_a' });
    await inner.createRun({ ...orphanRun(), runId: 'run_b' });
    clock += 10 * 60 * 1000;
    const faults: unknown[] = [];
    const { runner } = harness({ runner: { runStore, onFault: (fault) => faults.push(fault) } });
    await runner.startMaintenance({ abandonAfterSeconds: 300, sweepMs: 60_000, heartbeatMs: 60_000 }).stop();
    for (const runId of ['run_a', 'run_b']) {
      expect((await inner.getRun(runId))?.status).toBe('failed');
      expect((await inner.listEvents(runId, -1)).map((event) => event.type)).toEqual(['run.failed']);
    }
    expect(faults).toEqual([]);
  });
});

describe('agent runner: start({ onEvent })', () => {
  it(
    'hands the caller every event of the run in seq order, the terminal one last, without a hub ' + 'subscription',
    async () => {
      const { runner, agentModel, runStore } = harness();
      agentModel.enqueue(
        {
          toolCalls: [
            { id: 'call-1', name: 'working_memory', arguments: JSON.stringify({ action: 'set', key: 'k', value: 1 }) },
          ],
        },
        'All set.',
      );
      const seen: { seq: number; type: string }[] = [];
      let finished!: () => void;
      const ended = new Promise<void>((resolve) => (finished = resolve));
      const run = await runner.start(
        { ...ids, prompt: 'Set k.' },
        {
          onEvent: (event) => {
            seen.push({ seq: event.seq, type: event.type });
            if (event.type === 'run.completed') finished();
          },
        },
      );
      await ended;
      await runner.wait(run.runId);
      const stored = await runStore.listEvents(run.runId, -1);
      const terminal = stored.findIndex((event) => event.type === 'run.completed');
      expect(seen).toEqual(stored.slice(0, terminal + 1).map((event) => ({ seq: event.seq, type: event.type })));
      expect(seen.at(-1)?.type).toBe('run.completed');
      expect(seen.map((event) => event.type)).toContain('tool.call.completed');
    },
  );

  it('ends with a run.failed (SCOPE_FORGOTTEN), not stored, when the conversation is forgotten mid-run', async () => {
    const { runner, agentModel, runStore, observationalMemory } = harness();
    let calling = (): void => undefined;
    const called = new Promise<void>((resolve) => (calling = resolve));
    let answer = (): void => undefined;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    agentModel.enqueue(async () => {
      calling();
      await answered;
      return { text: 'thinking', toolCalls: [{ id: 't', name: 'working_memory', arguments: '{"action":"list"}' }] };
    }, 'done');
    const seen: string[] = [];
    let last: RunEvent | undefined;
    const run = await runner.start(
      { ...ids, conversationId: 'conv-forgotten-live', prompt: 'hi' },
      {
        onEvent: (event) => {
          seen.push(`${event.seq}:${event.type}`);
          last = event;
        },
      },
    );
    await called;
    await forgetConversation({ observationalMemory, runStore }, run.scope);
    answer();
    const done = await runner.wait(run.runId);
    expect(done.error?.code).toBe('SCOPE_FORGOTTEN');
    expect(seen.at(-1)).toMatch(/^\d+:run\.failed$/u);
    expect(last?.payload).toEqual({
      error: expect.objectContaining({ code: 'SCOPE_FORGOTTEN' }),
      schema_version: '1',
      conversation_id: 'conv-forgotten-live',
    });
    expect(seen.filter((entry) => entry.endsWith(':run.failed'))).toHaveLength(1);
    const seqs = seen.map((entry) => Number(entry.split(':')[0]));
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(await runStore.getRun(run.runId)).toBeUndefined();
  });

  it('survives a callback that throws: the run completes and each throw is reported as a fault', async () => {
    const faults: string[] = [];
    const { runner } = harness({ runner: { onFault: (fault) => faults.push(fault.message) } });
    const run = await runner.start(
      { ...ids, prompt: 'Hi' },
      {
        onEvent: () => {
          throw new Error('caller bug');
        },
      },
    );
    expect((await runner.wait(run.runId)).status).toBe('completed');
    expect(faults.length).toBeGreaterThan(0);
    expect(faults.every((message) => message.startsWith('the onEvent callback threw on '))).toBe(true);
    expect(faults.at(-1)).toBe('the onEvent callback threw on run.completed');
  });

  it('refuses an onEvent that is not a function before storing the run', async () => {
    const { runner, runStore } = harness();
    await expect(runner.start({ ...ids, prompt: 'Hi' }, { onEvent: 'nope' as never })).rejects.toMatchObject({
      message: expect.stringContaining('onEvent must be a function'),
    });
    expect(await runStore.listStaleRuns(0)).toEqual([]);
  });
});
