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
  /** Sends `init` (a JSON body, an optional bearer `key`) and parses the JSON answer. */
  readonly request: (
    path: string,
    init?: RequestInit & { key?: string },
  ) => Promise<{ status: number; body: Record<string, any> }>;
  readonly store: MemoryStore;
  readonly runStore: RunStore;
  readonly observationalMemory: ObservationalMemory;
  readonly workingMemory: WorkingMemory;
}

/** The app and its parts over fresh in-memory stores. */
export function createTestApp(options: {
  readonly workspace: string;
  readonly apiKeys?: AppOptions['apiKeys'];
  readonly memory?: Partial<Omit<ObservationalMemoryOptions, 'store'>>;
}): TestApp {
  const store = createInMemoryStore();
  const observationalMemory = createObservationalMemory({ store, ...options.memory });
  const workingMemory = createWorkingMemory({ store });
  const runStore = createInMemoryRunStore();
  const hub = createLocalEventHub();
  const runner = createAgentRunner({
    model: createMockLanguageModel('answer'),
    observationalMemory,
    workingMemory,
    runStore,
    hub,
    memoryTools: [],
    workspace: options.workspace,
  });
  const app = createApp({
    runner,
    runStore,
    hub,
    observationalMemory,
    workingMemory,
    ...(options.apiKeys ? { apiKeys: options.apiKeys } : {}),
  });
  const request: TestApp['request'] = async (path, init = {}) => {
    const headers = new Headers(init.headers);
    if (init.key) headers.set('authorization', `Bearer ${init.key}`);
    if (init.body) headers.set('content-type', 'application/json');
    const response = await app.request(path, { ...init, headers });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
  return { app, request, store, runStore, observationalMemory, workingMemory };
}
