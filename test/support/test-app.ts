/**
 * The HTTP app in process over in-memory stores, with a mock model: what the server's
 * route tests drive with `app.request`. The workspace is a temporary folder removed after
 * the test file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { createAgentRunner } from '../../src/agent/agent-runner.js';
import type { AgentRunner } from '../../src/agent/agent-runner.js';
import type { FaultReporter } from '../../src/core/fault.js';
import type { LanguageModel } from '../../src/llm/language-model.js';
import type { Tool } from '../../src/tools/tool.js';
import { createObservationalMemory } from '../../src/memory/observational-memory.js';
import type { ObservationalMemory, ObservationalMemoryOptions } from '../../src/memory/observational-memory.js';
import type { WorkingMemory } from '../../src/memory/working-memory.js';
import type { ServerEnv } from '../../src/server/server-env.js';
import type { RunStore } from '../../src/storage/run-store.js';
import type { MemoryStore } from '../../src/storage/store.js';
import type { Hono } from 'hono';
import { createWorkingMemory } from '../../src/memory/working-memory.js';
import { createApp } from '../../src/server/app.js';
import type { AppOptions } from '../../src/server/app.js';
import { createInMemoryRunStore } from '../../src/storage/in-memory-run-store.js';
import { createInMemoryStore } from '../../src/storage/in-memory-store.js';
import { createLocalEventHub } from '../../src/storage/local-event-hub.js';
import { createMockLanguageModel } from './mock-language-model.js';

/** A temporary workspace for this test file, removed after it. */
export function useTestWorkspace(prefix: string): string {
  const workspace = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(workspace, { recursive: true, force: true }));
  return workspace;
}

/** What {@link createTestApp} builds. */
export interface TestApp {
  readonly app: Hono<ServerEnv>;
  /** Sends `init` with an optional bearer `key` (JSON content type when there is a body and none is set). */
  readonly send: (path: string, init?: RequestInit & { key?: string }) => Promise<Response>;
  /** {@link send}, then parses the JSON answer. */
  readonly request: (
    path: string,
    init?: RequestInit & { key?: string },
  ) => Promise<{ status: number; body: Record<string, any> }>;
  readonly runner: AgentRunner;
  readonly store: MemoryStore;
  readonly runStore: RunStore;
  readonly observationalMemory: ObservationalMemory;
  readonly workingMemory: WorkingMemory;
}

/** Options of {@link createTestApp}; every part not given is a fresh in-memory default. */
export interface TestAppOptions {
  readonly workspace: string;
  readonly apiKeys?: AppOptions['apiKeys'];
  /** @default a fresh in-memory store */
  readonly store?: MemoryStore;
  /** The runs' store, the runner's and the app's. @default a fresh in-memory run store */
  readonly runStore?: RunStore;
  /** Where the runner reports its faults. @default none (dropped) */
  readonly onFault?: FaultReporter;
  /** The agent's model. @default a mock answering "answer" */
  readonly model?: LanguageModel;
  readonly memory?: Partial<Omit<ObservationalMemoryOptions, 'store'>>;
  /** The agent's memory tools, built from the memories. @default none */
  readonly memoryTools?: (memories: {
    observationalMemory: ObservationalMemory;
    workingMemory: WorkingMemory;
  }) => Tool[];
  /** More options of the app (a heartbeat, limits). */
  readonly app?: Partial<Omit<AppOptions, 'runner' | 'runStore' | 'hub' | 'observationalMemory' | 'workingMemory'>>;
}

/** The app and its parts. */
export function createTestApp(options: TestAppOptions): TestApp {
  const store = options.store ?? createInMemoryStore();
  const observationalMemory = createObservationalMemory({ store, ...options.memory });
  const workingMemory = createWorkingMemory({ store });
  const runStore = options.runStore ?? createInMemoryRunStore();
  const hub = createLocalEventHub();
  const runner = createAgentRunner({
    model: options.model ?? createMockLanguageModel('answer'),
    observationalMemory,
    workingMemory,
    runStore,
    hub,
    memoryTools: options.memoryTools?.({ observationalMemory, workingMemory }) ?? [],
    workspace: options.workspace,
    ...(options.onFault ? { onFault: options.onFault } : {}),
    // As the harness server runs it.
    hideServerFailures: true,
  });
  const app = createApp({
    runner,
    runStore,
    hub,
    observationalMemory,
    workingMemory,
    ...options.app,
    ...(options.apiKeys ? { apiKeys: options.apiKeys } : {}),
  });
  const send: TestApp['send'] = async (path, init = {}) => {
    const headers = new Headers(init.headers);
    if (init.key) headers.set('authorization', `Bearer ${init.key}`);
    if (init.body && !headers.has('content-type')) headers.set('content-type', 'application/json');
    return app.request(path, { ...init, headers });
  };
  const request: TestApp['request'] = async (path, init) => {
    const response = await send(path, init);
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
  return { app, send, request, runner, store, runStore, observationalMemory, workingMemory };
}
