/**
 * The runner in long, messy conversations (issue 12): a transcript that stays valid after a
 * cancel, terminal events that stay last, snippet failures that are reported, and forget
 * during an active run, here and from another process sharing the store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod/v4';
import { memoryIdOf } from '../core/scope.js';
import { createOpenAICompatibleModel } from '../llm/openai-compatible.js';
import type { LanguageModel } from '../llm/language-model.js';
import { createObservationalMemory } from '../memory/observational-memory.js';
import type { ObservationalMemory, ObservationalMemoryEvent } from '../memory/observational-memory.js';
import { createWorkingMemory } from '../memory/working-memory.js';
import { createInMemoryRunStore } from '../storage/in-memory-run-store.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createPostgresRunStore } from '../storage/postgres/postgres-run-store.js';
import { createPostgresStore } from '../storage/postgres/postgres-store.js';
import type { RunStore } from '../storage/run-store.js';
import { createSqliteRunStore } from '../storage/sqlite/sqlite-run-store.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import type { MemoryStore } from '../storage/store.js';
import { defineTool } from '../tools/tool.js';
import type { Tool } from '../tools/tool.js';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { createPostgresTestSchemas, postgresTestUrl } from '../../test/support/postgres-schema.js';
import { scriptedObserver } from '../../test/support/scripted-models.js';
import { startScriptedOpenAIServer } from '../../test/support/scripted-openai-server.js';
import { createAgentRunner } from './agent-runner.js';
import type { AgentRunnerOptions } from './agent-runner.js';

const WORKSPACE = mkdtempSync(join(tmpdir(), 'hm-runner-memory-'));
afterAll(() => rmSync(WORKSPACE, { recursive: true, force: true }));
const scope = { tenantId: 'tenant-r', conversationId: 'conv-messy', agentId: 'agent-x' };
const memoryId = memoryIdOf(scope);

/** A promise with its resolver, to hold a tool or a model call until the test lets it go. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = (): void => undefined;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

function runnerOver(parts: {
  store: MemoryStore;
  runStore: RunStore;
  model: LanguageModel;
  memory?: ObservationalMemory;
  tools?: Tool[];
  runner?: Partial<AgentRunnerOptions>;
}) {
  const observationalMemory = parts.memory ?? createObservationalMemory({ store: parts.store, defaultEnabled: false });
  const workingMemory = createWorkingMemory({ store: parts.store });
  const runner = createAgentRunner({
    model: parts.model,
    observationalMemory,
    workingMemory,
    runStore: parts.runStore,
    memoryTools: [],
    tools: parts.tools ?? [],
    workspace: WORKSPACE,
    ...parts.runner,
  });
  return { runner, observationalMemory, workingMemory };
}

describe('agent runner: the transcript stays valid after a cancel (issue 12)', () => {
  it('cancels during a tool call, and the next run of the conversation is accepted by a strict server', async () => {
    const server = await startScriptedOpenAIServer({ strict: true });
    try {
      const entered = gate();
      const release = gate();
      const slow = defineTool({
        name: 'slow_step',
        description: 'Takes a while.',
        inputSchema: z.object({}),
        execute: async () => {
          entered.open();
          await release.promise;
          return { done: true };
        },
      });
      server.enqueue({
        toolCalls: [
          { id: 'call_a', name: 'slow_step', arguments: {} },
          { id: 'call_b', name: 'slow_step', arguments: {} },
        ],
      });
      server.setDefaultReply({ text: 'all good' });
      const store = createInMemoryStore();
      const runStore = createInMemoryRunStore();
      const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'scripted' });
      const { runner } = runnerOver({ store, runStore, model, tools: [slow] });
      const first = await runner.start({ ...scope, prompt: 'do two slow steps' });
      await entered.promise;
      const cancelling = runner.cancel(first.runId);
      release.open();
      expect((await cancelling).status).toBe('cancelled');
      // Cancelled while the first call ran: neither call has a result, the stored history is incomplete.
      expect((await runStore.recentMessages(memoryId, 10_000)).map((message) => message.role)).toEqual([
        'user',
        'assistant',
      ]);

      const second = await runner.start({ ...scope, prompt: 'and now?' });
      const done = await runner.wait(second.runId);
      expect(done.error).toBeNull();
      expect(done).toMatchObject({ status: 'completed', output: 'all good' });
      const sent = server.requests.at(-1)?.body as {
        messages: Array<{ role: string; tool_calls?: Array<{ id: string }>; tool_call_id?: string }>;
      };
      expect(
        sent.messages.map((message) => [
          message.role,
          message.tool_calls?.map((call) => call.id).join(',') ?? message.tool_call_id ?? '',
        ]),
      ).toEqual([
        // The assistant message held only the unanswered calls: nothing of it is sent.
        ['user', ''],
        ['user', ''],
      ]);
    } finally {
      await server.close();
    }
  });
});

/** A tool answering `{ noted: thing }`. */
function noteTool(): Tool {
  return defineTool({
    name: 'note',
    description: 'Notes a thing.',
    inputSchema: z.object({ thing: z.string() }),
    execute: async ({ thing }) => ({ noted: thing }),
  });
}

/** Observational memory over `store` observing every step, with an observer that records what it is given. */
function observedBy(store: MemoryStore) {
  const events: ObservationalMemoryEvent[] = [];
  const observer = scriptedObserver('NONE');
  const memory = createObservationalMemory({
    store,
    defaultEnabled: true,
    defaults: { observeMinTokens: 1 },
    observer,
    onEvent: (event) => events.push(event),
  });
  return { memory, observer, events };
}

describe('agent runner: tool calls whose ids are blank or repeated', () => {
  it('stores and observes every call and result, and the next turn is accepted by a strict server', async () => {
    const server = await startScriptedOpenAIServer({ strict: true });
    try {
      server.enqueue(
        {
          toolCalls: [
            { id: '', name: 'note', arguments: { thing: 'blank one' } },
            { id: '', name: 'note', arguments: { thing: 'blank two' } },
          ],
        },
        {
          toolCalls: [
            { id: 'same', name: 'note', arguments: { thing: 'same one' } },
            { id: 'same', name: 'note', arguments: { thing: 'same two' } },
          ],
        },
      );
      server.setDefaultReply({ text: 'noted all four' });
      const store = createInMemoryStore();
      const runStore = createInMemoryRunStore();
      const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'scripted' });
      const { memory, observer, events } = observedBy(store);
      const { runner } = runnerOver({ store, runStore, model, memory, tools: [noteTool()] });
      const run = await runner.start({ ...scope, prompt: 'note four things' });
      expect(await runner.wait(run.runId)).toMatchObject({ status: 'completed', output: 'noted all four' });
      expect(events.filter((event) => event.type === 'memory.observe.failed')).toEqual([]);
      const tools = (await runStore.recentMessages(memoryId, 10_000)).filter((message) => message.role === 'tool');
      expect(tools.map((message) => message.content)).toEqual([
        '{"noted":"blank one"}',
        '{"noted":"blank two"}',
        '{"noted":"same one"}',
        '{"noted":"same two"}',
      ]);
      expect(new Set(tools.map((message) => message.messageId)).size).toBe(4);
      const observed = JSON.stringify(observer.calls.map((call) => call.messages));
      for (const thing of ['blank one', 'blank two', 'same one', 'same two']) expect(observed).toContain(thing);
    } finally {
      await server.close();
    }
  });
});

describe('agent runner: tool call ids of any length', () => {
  /** Two runs in one conversation, each calling a tool under a long id; what was observed. */
  async function longIdRuns(store: MemoryStore, runStore: RunStore): Promise<void> {
    const server = await startScriptedOpenAIServer({ strict: true });
    try {
      // Two ids alike in their first hundred characters, one past what a btree index row holds.
      const shared = 'call_'.padEnd(100, 'x');
      const ids = [`${shared}${'a'.repeat(120)}`, `${shared}${'b'.repeat(2_973)}`];
      server.enqueue(
        { toolCalls: [{ id: ids[0], name: 'note', arguments: { thing: 'first long id' } }] },
        { text: 'noted one' },
        { toolCalls: [{ id: ids[1], name: 'note', arguments: { thing: 'second long id' } }] },
        { text: 'noted two' },
      );
      const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'scripted' });
      const { memory, observer, events } = observedBy(store);
      const { runner } = runnerOver({ store, runStore, model, memory, tools: [noteTool()] });
      for (const output of ['noted one', 'noted two']) {
        const run = await runner.start({ ...scope, prompt: `note it (${output})` });
        expect(await runner.wait(run.runId)).toMatchObject({ status: 'completed', output });
      }
      expect(events.filter((event) => event.type === 'memory.observe.failed')).toEqual([]);
      const tools = (await runStore.recentMessages(memoryId, 100_000)).filter((message) => message.role === 'tool');
      // The provider's id is kept whole where the model reads it back; the message ids are short and distinct.
      expect(tools.map((message) => message.toolCallId)).toEqual(ids);
      expect(tools.every((message) => message.messageId.length <= 256)).toBe(true);
      expect(new Set(tools.map((message) => message.messageId)).size).toBe(2);
      const observed = JSON.stringify(observer.calls.map((call) => call.messages));
      for (const thing of ['first long id', 'second long id']) expect(observed).toContain(thing);
    } finally {
      await server.close();
    }
  }

  it('stores and observes a call whose id is kilobytes long, and replays it to a strict server', async () => {
    await longIdRuns(createInMemoryStore(), createInMemoryRunStore());
  });

  it('does so on SQLite', async () => {
    const directory = mkdtempSync(join(WORKSPACE, 'long-ids-'));
    const path = join(directory, 'memory.db');
    const store = createSqliteStore({ path });
    const runStore = createSqliteRunStore({ path });
    try {
      await longIdRuns(store, runStore);
    } finally {
      await runStore.dispose();
      await store.dispose();
    }
  });

  const url = postgresTestUrl();
  it.skipIf(!url)('does so on Postgres', async () => {
    const schemas = createPostgresTestSchemas(url ?? '');
    const schema = schemas.next();
    const store = await createPostgresStore({ connectionString: url ?? '', schema, max: 3 });
    const runStore = await createPostgresRunStore({ connectionString: url ?? '', schema, max: 3 });
    try {
      await longIdRuns(store, runStore);
    } finally {
      await runStore.dispose();
      await store.dispose();
      await schemas.dropAll();
    }
  });
});

describe('agent runner: usage a provider reports oddly', () => {
  it('completes the run with whole counts when the provider reports fractions or -1', async () => {
    const server = await startScriptedOpenAIServer();
    try {
      server.enqueue({ text: 'the answer', usage: { promptTokens: 12.5, completionTokens: -1 } });
      const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'scripted' });
      const store = createInMemoryStore();
      const { runner } = runnerOver({ store, runStore: createInMemoryRunStore(), model });
      const run = await runner.start({ ...scope, conversationId: 'odd-usage', prompt: 'hi' });
      expect(await runner.wait(run.runId)).toMatchObject({
        status: 'completed',
        output: 'the answer',
        usage: { inputTokens: 13, outputTokens: 0 },
      });
    } finally {
      await server.close();
    }
  });
});

describe('agent runner: what a failed model call tells the tenant', () => {
  it("names the model server in the run's error, never its address", async () => {
    const server = await startScriptedOpenAIServer();
    try {
      server.setDefaultReply({ status: 400, body: { error: { message: 'bad request' } } });
      const model = createOpenAICompatibleModel({ baseURL: server.url, modelId: 'scripted' });
      const { runner } = runnerOver({ store: createInMemoryStore(), runStore: createInMemoryRunStore(), model });
      const run = await runner.start({ ...scope, prompt: 'hello' });
      const done = await runner.wait(run.runId);
      expect(done.status).toBe('failed');
      expect(done.error?.code).toBe('MODEL_CALL_FAILED');
      expect(done.error?.message).toContain('HTTP 400 from the model server');
      expect(done.error?.message).not.toContain('127.0.0.1');
    } finally {
      await server.close();
    }
  });
});

describe('agent runner: events in order, failures visible (issue 12)', () => {
  it(
    'keeps run.completed last when an observation outlasts the wait, and reports the late observation on ' +
      'the scope',
    async () => {
      const held = gate();
      const observer = scriptedObserver(async () => {
        await held.promise;
        return 'IMPORTANCE: 0.9\nUser prefers tabs.';
      });
      const store = createInMemoryStore();
      const runStore = createInMemoryRunStore();
      const memory = createObservationalMemory({
        store,
        observer,
        defaultEnabled: true,
        defaults: { observeMinTokens: 1 },
      });
      const scopeEvents: ObservationalMemoryEvent[] = [];
      const late = new Promise<void>((resolve) =>
        memory.subscribe((event) => {
          scopeEvents.push(event);
          if (event.type === 'memory.observe.completed') resolve();
        }),
      );
      const { runner } = runnerOver({
        store,
        runStore,
        model: createMockLanguageModel('done'),
        memory,
        runner: { settleTimeoutMs: 1 },
      });
      const run = await runner.start({ ...scope, prompt: 'I prefer tabs.' });
      expect((await runner.wait(run.runId)).status).toBe('completed');
      held.open();
      await late;
      await memory.drain(scope);
      const types = (await runStore.listEvents(run.runId, -1)).map((event) => event.type);
      expect(types.at(-1)).toBe('run.completed');
      expect(types.filter((type) => type === 'run.completed')).toHaveLength(1);
      expect(types).not.toContain('memory.observe.completed');
      expect(scopeEvents.find((event) => event.type === 'memory.observe.completed')).toMatchObject({
        runId: run.runId,
        scope,
        observed: true,
        observationCount: 1,
      });
    },
  );

  it('starts observing while memory.observe.started is being stored, and keeps it before completed', async () => {
    const observed = gate();
    const runStore = createInMemoryRunStore();
    const heldStarted = gate();
    // The started event is held until the observer has been called: with the event stored
    // first, as before, the observer would never be called and the run would not finish.
    const slowStarted: RunStore = {
      ...runStore,
      appendEvent: async (runId, type, payload) => {
        if (type === 'memory.observe.started') await heldStarted.promise;
        return runStore.appendEvent(runId, type, payload);
      },
    };
    const store = createInMemoryStore();
    const memory = createObservationalMemory({
      store,
      observer: scriptedObserver(() => {
        observed.open();
        return 'IMPORTANCE: 0.9\nUser prefers tabs.';
      }),
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    const { runner } = runnerOver({ store, runStore: slowStarted, model: createMockLanguageModel('done'), memory });
    const run = await runner.start({ ...scope, prompt: 'I prefer tabs.' });
    await observed.promise;
    heldStarted.open();
    expect((await runner.wait(run.runId)).status).toBe('completed');
    const types = (await runStore.listEvents(run.runId, -1)).map((event) => event.type);
    expect(types.filter((type) => type.startsWith('memory.observe.'))).toEqual([
      'memory.observe.started',
      'memory.observe.completed',
    ]);
    expect(types.at(-1)).toBe('run.completed');
  });

  it('keeps the observation when memory.observe.started cannot be stored, and reports the failure', async () => {
    const runStore = createInMemoryRunStore();
    const refusing: RunStore = {
      ...runStore,
      appendEvent: async (runId, type, payload) => {
        if (type === 'memory.observe.started') throw new Error('event log refused the write');
        return runStore.appendEvent(runId, type, payload);
      },
    };
    const store = createInMemoryStore();
    const memory = createObservationalMemory({
      store,
      observer: scriptedObserver('IMPORTANCE: 0.9\nUser prefers tabs.'),
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    const { runner } = runnerOver({ store, runStore: refusing, model: createMockLanguageModel('done'), memory });
    const run = await runner.start({ ...scope, prompt: 'I prefer tabs.' });
    expect((await runner.wait(run.runId)).status).toBe('completed');
    const events = await runStore.listEvents(run.runId, -1);
    const memoryEvents = events.filter((event) => event.type.startsWith('memory.observe.'));
    expect(memoryEvents.map((event) => [event.type, event.payload['error']])).toEqual([
      ['memory.observe.failed', 'event log refused the write'],
    ]);
    expect(events.at(-1)?.type).toBe('run.completed');
    expect((await memory.inspect(scope)).observations.map((item) => item.content)).toEqual(['User prefers tabs.']);
  });

  it('goes on without a snippet that cannot be built and says so with memory.snippet.failed', async () => {
    const store = createInMemoryStore();
    const broken = createInMemoryStore();
    await broken.dispose();
    const runStore = createInMemoryRunStore();
    const model = createMockLanguageModel('done');
    const observationalMemory = createObservationalMemory({ store, defaultEnabled: false });
    const runner = createAgentRunner({
      model,
      observationalMemory,
      workingMemory: createWorkingMemory({ store: broken }),
      runStore,
      memoryTools: [],
      workspace: WORKSPACE,
    });
    const run = await runner.start({ ...scope, prompt: 'hello', systemPrompt: 'sys' });
    expect((await runner.wait(run.runId)).status).toBe('completed');
    const failed = (await runStore.listEvents(run.runId, -1)).filter((event) => event.type === 'memory.snippet.failed');
    expect(failed.map((event) => [event.payload['step'], event.payload['source']])).toEqual([[1, 'working_memory']]);
    expect(String(failed[0]?.payload['error'])).toMatch(/disposed/);
    expect(model.calls[0]?.messages).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'hello' },
    ]);
  });
});

const SECRET = 'SECRET_PLAN_7f3a_forget_me';

interface Backend {
  /** The stores of the process running the run. */
  readonly local: { store: MemoryStore; runStore: RunStore };
  /** The stores through which the forget comes (another process, or the same stores). */
  readonly remote: { store: MemoryStore; runStore: RunStore };
  close(): Promise<void>;
}

/**
 * A run whose first step calls a tool that forgets the conversation, through `remote`
 * (another process's stores when they are not `local`), as `DELETE /v1/memory/…` does.
 */
async function forgetDuringRun(backend: Backend): Promise<void> {
  const { local, remote } = backend;
  const remoteMemory = createObservationalMemory({ store: remote.store, defaultEnabled: true });
  const forget = defineTool({
    name: 'forget_conversation',
    description: 'Forgets this conversation.',
    inputSchema: z.object({}),
    execute: async () => {
      await remoteMemory.forget(scope);
      await remote.runStore.forgetConversation(memoryId);
      return { forgotten: true };
    },
  });
  const model = createMockLanguageModel('done');
  const memory = createObservationalMemory({
    store: local.store,
    observer: scriptedObserver(
      (input) => `IMPORTANCE: 0.9\n${input.messages.map((message) => message.content).join(' / ')}`,
    ),
    defaultEnabled: true,
    defaults: { observeMinTokens: 1 },
  });
  const { runner } = runnerOver({ store: local.store, runStore: local.runStore, model, memory, tools: [forget] });
  // An earlier run of the conversation, observed and stored.
  const earlier = await runner.start({ ...scope, prompt: `remember ${SECRET}` });
  expect((await runner.wait(earlier.runId)).status).toBe('completed');
  expect((await memory.inspect(scope)).observations.map((item) => item.content).join('\n')).toContain(SECRET);

  model.calls.length = 0;
  model.enqueue({ toolCalls: [{ id: 'call_f', name: 'forget_conversation', arguments: '{}' }] });
  const run = await runner.start({ ...scope, prompt: `forget ${SECRET} now` });
  const done = await runner.wait(run.runId);
  await memory.drain(scope);
  // No request after the forget carried what was forgotten (there is none: the run stopped).
  expect(model.calls.slice(1).filter((call) => JSON.stringify(call.messages).includes(SECRET))).toEqual([]);
  expect(model.calls).toHaveLength(1);
  // Nothing came back into observational memory's message log or the conversation history.
  expect(await remote.store.listUnobservedMessages(memoryId, 1_000)).toEqual([]);
  expect(await remote.runStore.recentMessages(memoryId, 100_000)).toEqual([]);
  expect((await memory.inspect(scope)).observations).toEqual([]);
  expect(await remote.store.getRecord(memoryId)).toBeUndefined();
  expect(done).toMatchObject({ status: 'failed', error: { code: 'SCOPE_FORGOTTEN' } });
  // A new run of the conversation starts from nothing, and is not refused.
  const after = await runner.start({ ...scope, prompt: 'hello again' });
  expect((await runner.wait(after.runId)).status).toBe('completed');
  const sent = model.calls.at(-1)?.messages ?? [];
  expect(JSON.stringify(sent)).not.toContain(SECRET);
}

describe('agent runner: memory never observes its own tools', () => {
  it('leaves the working_memory calls and results out of what the observer is given', async () => {
    const store = createInMemoryStore();
    const observer = scriptedObserver('IMPORTANCE: 0.6\nThe user asked what memory holds.');
    const memory = createObservationalMemory({
      store,
      observer,
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    const model = createMockLanguageModel('done');
    const lookup = defineTool({
      name: 'lookup',
      description: 'looks things up',
      inputSchema: z.object({ q: z.string() }),
      execute: async () => 'sunny',
    });
    // The default memory tools, not the helper's none.
    const { runner, workingMemory } = runnerOver({
      store,
      runStore: createInMemoryRunStore(),
      model,
      memory,
      tools: [lookup],
      runner: { memoryTools: undefined },
    });
    await workingMemory.set(scope, 'deploy_target', 'prod-eu-1 (REMEMBERED-VALUE)');
    model.enqueue(
      {
        toolCalls: [
          { id: 'call_1', name: 'working_memory', arguments: '{"action":"list"}' },
          { id: 'call_2', name: 'lookup', arguments: '{"q":"weather"}' },
        ],
      },
      'done',
    );
    const run = await runner.start({ ...scope, prompt: 'what is in memory?' });
    expect((await runner.wait(run.runId)).status).toBe('completed');
    await memory.drain(scope);
    const seen = observer.calls.flatMap((call) =>
      call.messages.map((message) => `${message.role}: ${message.content}`),
    );
    expect(seen.join('\n')).not.toContain('REMEMBERED-VALUE');
    expect(seen.join('\n')).not.toContain('working_memory');
    // Other tools are observed as before.
    expect(seen).toContain('tool: "sunny"');
    expect(seen.some((line) => line.includes('[tool call lookup]'))).toBe(true);
    expect(seen.some((line) => line.startsWith('user: what is in memory?'))).toBe(true);
  });
});

describe('agent runner: forget during an active run (issue 12)', () => {
  it('brings nothing forgotten back at the next step (in-memory stores)', async () => {
    const store = createInMemoryStore();
    const runStore = createInMemoryRunStore();
    await forgetDuringRun({ local: { store, runStore }, remote: { store, runStore }, close: async () => undefined });
  });

  it('brings nothing forgotten back when another process sharing the SQLite file forgets', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'hm-forget-run-'));
    const path = join(directory, 'state.db');
    const local = { store: createSqliteStore({ path }), runStore: createSqliteRunStore({ path }) };
    const remote = { store: createSqliteStore({ path }), runStore: createSqliteRunStore({ path }) };
    try {
      await forgetDuringRun({ local, remote, close: async () => undefined });
    } finally {
      for (const handle of [local.runStore, local.store, remote.runStore, remote.store]) await handle.dispose();
      rmSync(directory, { recursive: true, force: true });
    }
  });

  const url = postgresTestUrl();
  it.skipIf(!url)(
    'brings nothing forgotten back when another replica sharing the Postgres schema forgets',
    async () => {
      const schemas = createPostgresTestSchemas(url ?? '');
      const schema = schemas.next();
      const open = async () => ({
        store: await createPostgresStore({ connectionString: url ?? '', schema, max: 3 }),
        runStore: await createPostgresRunStore({ connectionString: url ?? '', schema, max: 3 }),
      });
      const local = await open();
      const remote = await open();
      try {
        await forgetDuringRun({ local, remote, close: async () => undefined });
      } finally {
        for (const handle of [local.runStore, local.store, remote.runStore, remote.store]) await handle.dispose();
        await schemas.dropAll();
      }
    },
  );
});
