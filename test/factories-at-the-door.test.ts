/**
 * Bad library input fails at the door: every exported factory called without a required
 * option, or with an empty one, throws (or, when it is async, rejects) at once with a
 * `HarnessMemoryError` (`OPTION_INVALID`) naming the option.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod/v4';
import { createAgentRunner } from '../src/agent/agent-runner.js';
import { loadConfig } from '../src/config/load-config.js';
import {
  createInMemoryStore,
  createModelObserver,
  createModelReflector,
  createObservationalMemory,
  createWorkingMemory,
  HarnessMemoryError,
} from '../src/index.js';
import {
  createAgentModel,
  createOpenAICompatibleModel,
  selectMemoryModel,
  withCircuitBreaker,
  withoutRetries,
  withRetries,
} from '../src/llm/index.js';
import { createApp, createHarness, startServer } from '../src/server/index.js';
import { createFaultLog } from '../src/server/fault-log.js';
import { createTenantLimits } from '../src/server/tenant-limits.js';
import { createInMemoryRunStore } from '../src/storage/in-memory-run-store.js';
import { createPostgresRunStore, createPostgresStore } from '../src/storage/postgres/index.js';
import { createRedactingRunStore } from '../src/storage/redacting-run-store.js';
import { createSqliteRunStore, createSqliteStore } from '../src/storage/sqlite/index.js';
import { createObservationalMemoryTool, createWorkingMemoryTool, defineTool } from '../src/tools/index.js';

const store = createInMemoryStore();
const model = {
  specificationVersion: 'v1' as const,
  provider: 'test',
  modelId: 'm',
  doGenerate: async () => ({
    text: '',
    toolCalls: [],
    finishReason: 'stop' as const,
    usage: { inputTokens: 0, outputTokens: 0 },
  }),
};
const memory = createObservationalMemory({ store });
const workingMemory = createWorkingMemory({ store });
const runStore = createInMemoryRunStore();
const runnerOptions = {
  model,
  observationalMemory: memory,
  workingMemory,
  runStore,
  memoryTools: [],
  workspace: '/tmp',
};

/** Valid `createApp` options with the given `apiKeys`. */
function appWithKeys(apiKeys: Parameters<typeof createApp>[0]['apiKeys']): Parameters<typeof createApp>[0] {
  const runner = createAgentRunner(runnerOptions);
  return { runner, runStore, hub: runner.hub, observationalMemory: memory, workingMemory, apiKeys };
}

// [factory, call, the option the error must name]
const cases: Array<[string, () => unknown, string]> = [
  ['createObservationalMemory', () => createObservationalMemory(undefined as never), 'options'],
  ['createObservationalMemory', () => createObservationalMemory({} as never), 'store'],
  ['createObservationalMemory', () => createObservationalMemory({ store: '' } as never), 'store'],
  ['createObservationalMemory', () => createObservationalMemory({ store: {} } as never), 'store'],
  ['createObservationalMemory', () => createObservationalMemory({ store, model: {} } as never), 'model'],
  ['createObservationalMemory', () => createObservationalMemory({ store, observer: 5 } as never), 'observer'],
  ['createObservationalMemory', () => createObservationalMemory({ store, reflector: {} } as never), 'reflector'],
  ['createObservationalMemory', () => createObservationalMemory({ store, now: 0 } as never), 'now'],
  ['createObservationalMemory', () => createObservationalMemory({ store, generateId: 'ulid' } as never), 'generateId'],
  ['createObservationalMemory', () => createObservationalMemory({ store, onEvent: {} } as never), 'onEvent'],
  ['createObservationalMemory', () => createObservationalMemory({ store, estimator: {} } as never), 'estimator'],
  ['createInMemoryStore', () => createInMemoryStore({ now: new Date() } as never), 'now'],
  ['createInMemoryStore', () => createInMemoryStore(null as never), 'options'],
  ['createInMemoryRunStore', () => createInMemoryRunStore({ now: Date.now() } as never), 'now'],
  ['createAgentRunner', () => createAgentRunner({ ...runnerOptions, generateRunId: 'x' } as never), 'generateRunId'],
  ['createAgentRunner', () => createAgentRunner({ ...runnerOptions, onFault: true } as never), 'onFault'],
  ['createAgentRunner', () => createAgentRunner({ ...runnerOptions, estimator: () => 1 } as never), 'estimator'],
  ['createWorkingMemory', () => createWorkingMemory({} as never), 'store'],
  ['createWorkingMemory', () => createWorkingMemory(undefined as never), 'options'],
  ['createModelObserver', () => createModelObserver(undefined as never), 'model'],
  ['createModelReflector', () => createModelReflector({} as never), 'model'],
  ['createSqliteStore', () => createSqliteStore({ path: '' }), 'path'],
  ['createSqliteStore', () => createSqliteStore({ path: '   ' }), 'path'],
  ['createSqliteStore', () => createSqliteStore({} as never), 'path'],
  ['createSqliteStore', () => createSqliteStore(undefined as never), 'options'],
  ['createSqliteRunStore', () => createSqliteRunStore({ path: '' }), 'path'],
  ['createPostgresStore', () => createPostgresStore({}), 'connectionString'],
  ['createPostgresStore', () => createPostgresStore({ connectionString: '' }), 'connectionString'],
  ['createPostgresStore', () => createPostgresStore({ pool: {} as never }), 'pool'],
  ['createPostgresRunStore', () => createPostgresRunStore({ connectionString: ' ' }), 'connectionString'],
  ['createOpenAICompatibleModel', () => createOpenAICompatibleModel({} as never), 'baseURL'],
  ['createOpenAICompatibleModel', () => createOpenAICompatibleModel({ baseURL: '', modelId: 'm' }), 'baseURL'],
  [
    'createOpenAICompatibleModel',
    () => createOpenAICompatibleModel({ baseURL: 'http://127.0.0.1:1' } as never),
    'modelId',
  ],
  [
    'createOpenAICompatibleModel',
    () => createOpenAICompatibleModel({ baseURL: 'http://127.0.0.1:1', modelId: '' }),
    'modelId',
  ],
  ['withRetries', () => withRetries(undefined as never), 'model'],
  ['withoutRetries', () => withoutRetries({} as never), 'model'],
  ['withCircuitBreaker', () => withCircuitBreaker(undefined as never), 'model'],
  ['createAgentModel', () => createAgentModel(undefined as never, {}), 'config'],
  ['selectMemoryModel', () => selectMemoryModel({} as never), 'config'],
  ['defineTool', () => defineTool({} as never), 'name'],
  ['defineTool', () => defineTool({ name: '' } as never), 'name'],
  ['defineTool', () => defineTool({ name: 'x' } as never), 'description'],
  ['defineTool', () => defineTool({ name: 'x', description: 'd' } as never), 'inputSchema'],
  ['defineTool', () => defineTool({ name: 'x', description: 'd', inputSchema: z.object({}) } as never), 'execute'],
  ['createWorkingMemoryTool', () => createWorkingMemoryTool(undefined as never), 'workingMemory'],
  ['createObservationalMemoryTool', () => createObservationalMemoryTool(undefined as never), 'options'],
  ['createObservationalMemoryTool', () => createObservationalMemoryTool({ memory: {} as never }), 'memory'],
  ['createAgentRunner', () => createAgentRunner({ ...runnerOptions, model: undefined } as never), 'model'],
  ['createAgentRunner', () => createAgentRunner({ ...runnerOptions, runStore: {} } as never), 'runStore'],
  ['createAgentRunner', () => createAgentRunner({ ...runnerOptions, memoryTools: {} } as never), 'memoryTools'],
  ['createAgentRunner', () => createAgentRunner({ ...runnerOptions, workspace: '' }), 'workspace'],
  ['createApp', () => createApp({} as never), 'runner'],
  ['createApp', () => createApp(appWithKeys([{ key: 'clé-1', tenantId: 'acme' }])), 'apiKeys[0].key'],
  ['createApp', () => createApp(appWithKeys([{ key: 'two words', tenantId: 'acme' }])), 'apiKeys[0].key'],
  ['createApp', () => createApp(appWithKeys([{ key: 'k-1', tenantId: '../etc' }])), 'apiKeys[0].tenantId'],
  [
    'createApp',
    () =>
      createApp(
        appWithKeys([
          { key: 'k-1', tenantId: 'a' },
          { key: 'k-1', tenantId: 'b' },
        ]),
      ),
    'apiKeys[1].key',
  ],
  ['createApp', () => createApp(appWithKeys('k-1:a' as never)), 'apiKeys'],
  ['createHarness', () => createHarness(undefined as never), 'options'],
  ['createHarness', () => createHarness({} as never), 'config'],
  ['startServer', () => startServer(undefined as never), 'harness'],
  ['createRedactingRunStore', () => createRedactingRunStore(undefined as never), 'store'],
  ['createFaultLog', () => createFaultLog({} as never), 'logger'],
  ['createTenantLimits', () => createTenantLimits({ maxWritesPerSecond: 0 }), 'maxWritesPerSecond'],
];

/** The error a call throws at once, or the rejection of the promise it returns. */
async function failureOf(call: () => unknown): Promise<unknown> {
  let result: unknown;
  try {
    result = call();
  } catch (error) {
    return error;
  }
  if (result instanceof Promise)
    return result.then(
      () => undefined,
      (error: unknown) => error,
    );
  return undefined;
}

describe('factories fail at the door', () => {
  it.each(cases)('%s without a required option names it (%#)', async (factory, call, option) => {
    const error = await failureOf(call);
    expect(HarnessMemoryError.isInstance(error), String(error)).toBe(true);
    const failure = error as HarnessMemoryError;
    expect(failure.code).toBe('OPTION_INVALID');
    expect(failure.data).toEqual({ factory, option });
    // The factory is the component of the prefix, named once.
    expect(failure.message).toContain(`[harness-memory] [${factory}] option ${option} `);
    expect(failure.message.split(factory)).toHaveLength(2);
  });

  it('keeps the factories whose options are all optional working with none', () => {
    expect(createInMemoryStore().name).toBe('in-memory');
    expect(createTenantLimits()).toBeDefined();
    expect(loadConfig({ env: {}, cwd: '/tmp', homeDir: '/nonexistent-home' }).memory.maxOperationAttempts).toBe(5);
  });

  it('reads an optional callback or estimator given as null as left out, as before the checks', () => {
    const nulls = { now: null, generateId: null, onEvent: null, faultPoint: null, estimator: null };
    expect(createObservationalMemory({ store, ...nulls } as never)).toBeDefined();
    expect(
      createAgentRunner({ ...runnerOptions, generateRunId: null, onFault: null, estimator: null } as never),
    ).toBeDefined();
    expect(createInMemoryStore({ now: null } as never).name).toBe('in-memory');
    expect(createInMemoryRunStore({ now: null } as never).name).toBe('in-memory');
  });
});
