import { describe, expect, it } from 'vitest';
import type { Fault } from '../core/fault.js';
import { createInMemoryRunStore } from '../storage/in-memory-run-store.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { toStoreError as postgresStoreError } from '../storage/postgres/postgres-connection.js';
import type { RunStore } from '../storage/run-store.js';
import { toStoreError as sqliteStoreError } from '../storage/sqlite/sqlite-errors.js';
import type { MemoryStore } from '../storage/store.js';
import { scriptedObserver } from '../../test/support/scripted-models.js';
import { createTestApp, useTestWorkspace } from '../../test/support/test-app.js';

const workspace = useTestWorkspace('hm-run-loop-');

// What the operator's stores say when they fail: an address, a schema, a database file's path.
const SERVER_DETAIL = /10\.0\.3\.7|hm_prod|\/srv\/acme-prod/;
const GENERIC = 'internal error (STORE_FAILED); see the server log';

function postgresDown(): Error {
  return postgresStoreError(new Error('connect ECONNREFUSED 10.0.3.7:5432'), 'postgres', 'hm_prod');
}

function sqliteBusy(): Error {
  const busy = Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
  return sqliteStoreError(busy, { path: '/srv/acme-prod/.harness/state.db', busyTimeoutMs: 5000 });
}

/** The message of a fault's error, or '' without one. */
function messageOf(fault: Fault | undefined): string {
  return fault?.error instanceof Error ? fault.error.message : '';
}

/** `target` with `method` rejecting with `error()`. */
function failing<T extends object>(target: T, method: keyof T, error: () => Error): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      if (property === method) return () => Promise.reject(error());
      const value: unknown = Reflect.get(object, property, receiver);
      return typeof value === 'function' ? value.bind(object) : value;
    },
  });
}

/** The HTTP app over `store` and `runStore`, with one API key for tenant acme, and the faults it reports. */
function serverOver(options: { store?: MemoryStore; runStore?: RunStore; observeEveryMessage?: boolean }) {
  const faults: Fault[] = [];
  const { app, runner } = createTestApp({
    workspace,
    apiKeys: [{ key: 'k', tenantId: 'acme' }],
    store: options.store,
    runStore: options.runStore,
    memory: options.observeEveryMessage
      ? { observer: scriptedObserver('IMPORTANCE: 0.5\nfine'), defaultEnabled: true, defaults: { observeMinTokens: 1 } }
      : {},
    onFault: (fault) => faults.push(fault),
  });
  const send = (path: string, init: RequestInit = {}) =>
    app.request(path, { ...init, headers: { authorization: 'Bearer k', 'content-type': 'application/json' } });
  /** Starts a run over HTTP and waits for its end; resolves with its id. */
  const run = async (): Promise<string> => {
    const created = await send('/v1/runs', { method: 'POST', body: JSON.stringify({ prompt: 'hello' }) });
    expect(created.status).toBe(202);
    const { run_id: runId } = (await created.json()) as { run_id: string };
    await runner.wait(runId);
    return runId;
  };
  return { send, run, runner, faults };
}

describe('run loop: a store failure is named by its code to the tenant, its detail goes to the fault log', () => {
  it('says memory.snippet.failed without the database address or schema', async () => {
    const store = failing(createInMemoryStore(), 'listWorkingMemoryEntries', postgresDown);
    const { send, run, faults } = serverOver({ store });
    const runId = await run();
    const events = await (await send(`/v1/runs/${runId}/events`)).text();
    expect(events).toContain('event: memory.snippet.failed');
    expect(events).toContain(GENERIC);
    expect(events).not.toMatch(SERVER_DETAIL);
    expect(events).toContain('event: run.completed');
    // The operator still learns what failed.
    const fault = faults.find((item) => item.message.includes('snippet'));
    expect(fault).toMatchObject({ component: 'runner', runId });
    expect(messageOf(fault)).toContain('ECONNREFUSED 10.0.3.7:5432');
  });

  it("keeps the database file's path out of run.failed and GET /v1/runs/{id}, keeping the code", async () => {
    const runStore = failing(createInMemoryRunStore(), 'recentHistory', sqliteBusy);
    const { send, run, runner, faults } = serverOver({ runStore });
    const runId = await run();
    const state = (await (await send(`/v1/runs/${runId}`)).json()) as Record<string, unknown>;
    expect(state).toMatchObject({ status: 'failed', error: { code: 'STORE_FAILED', message: GENERIC } });
    const events = await (await send(`/v1/runs/${runId}/events`)).text();
    expect(events).toContain('event: run.failed');
    expect(JSON.stringify(state) + events).not.toMatch(SERVER_DETAIL);
    // The in-process caller gets the stored run; the detail is the fault's.
    expect((await runner.wait(runId)).error).toEqual({ code: 'STORE_FAILED', message: GENERIC });
    const fault = faults.find((item) => item.runId === runId && item.error !== undefined);
    expect(messageOf(fault)).toContain('/srv/acme-prod/.harness/state.db');
  });

  it('says memory.observe.failed without the database address or schema', async () => {
    const store = failing(createInMemoryStore(), 'appendMessages', postgresDown);
    const { send, run, faults } = serverOver({ store, observeEveryMessage: true });
    const runId = await run();
    const events = await (await send(`/v1/runs/${runId}/events`)).text();
    expect(events).toContain('event: memory.observe.failed');
    expect(events).toContain(GENERIC);
    expect(events).not.toMatch(SERVER_DETAIL);
    const fault = faults.find((item) => item.message.includes('observ'));
    expect(messageOf(fault)).toContain('hm_prod');
  });
});
