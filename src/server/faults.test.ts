/**
 * One fault never takes the server down: a store method fails at each place a run or a
 * memory operation ends, and afterwards the server still answers `/healthz`, counts the
 * fault, and completes new runs. Nothing may reject in the background.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { withInjectedFaults } from '../../test/support/failing-stores.js';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { scriptedObserver, scriptedReflector } from '../../test/support/scripted-models.js';
import { createAgentRunner } from '../agent/agent-runner.js';
import { createLocalEventHub } from '../storage/local-event-hub.js';
import type { RunRecord } from '../storage/run-store.js';
import { createObservationalMemory } from '../memory/observational-memory.js';
import { createWorkingMemory } from '../memory/working-memory.js';
import { createInMemoryRunStore } from '../storage/in-memory-run-store.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createObservationalMemoryTool } from '../tools/observational-memory-tool.js';
import { createWorkingMemoryTool } from '../tools/working-memory-tool.js';
import { createApp } from './app.js';
import { createFaultLog } from './fault-log.js';
import type { LogRecord } from './fault-log.js';

const WORKSPACE = mkdtempSync(join(tmpdir(), 'hm-faults-'));
afterAll(() => rmSync(WORKSPACE, { recursive: true, force: true }));

// Node would stop the process on an unhandled rejection; here each one is recorded and
// fails the test that caused it.
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
beforeAll(() => void process.on('unhandledRejection', onUnhandled));
afterAll(() => void process.off('unhandledRejection', onUnhandled));
afterEach(async () => {
  // Rejections surface after a macrotask; let them.
  await new Promise((resolve) => setImmediate(resolve));
  expect(unhandled.splice(0)).toEqual([]);
});

const ids = { tenant_id: 'acme', conversation_id: 'conv-faults', agent_id: 'agent-x' };

function setup() {
  const memoryStore = withInjectedFaults(createInMemoryStore(), 'in-memory');
  const runStore = withInjectedFaults(createInMemoryRunStore(), 'in-memory-run');
  const log: LogRecord[] = [];
  const faults = createFaultLog({ log: (record) => void log.push(record) });
  const observer = scriptedObserver('IMPORTANCE:0.9\nUser prefers tabs');
  const reflector = scriptedReflector('SUMMARY:\nTabs.\n\nSUPERSESSIONS:\n\nCONTRADICTIONS:\n');
  const observationalMemory = createObservationalMemory({
    store: memoryStore.store,
    observer,
    reflector,
    defaultEnabled: true,
    defaults: { observeMinTokens: 1 },
    maxOperationAttempts: 1,
  });
  const workingMemory = createWorkingMemory({ store: memoryStore.store });
  const hub = createLocalEventHub();
  const agentModel = createMockLanguageModel('final answer');
  const runner = createAgentRunner({
    model: agentModel,
    observationalMemory,
    workingMemory,
    runStore: runStore.store,
    hub,
    memoryTools: [
      createWorkingMemoryTool(workingMemory),
      createObservationalMemoryTool({ memory: observationalMemory }),
    ],
    workspace: WORKSPACE,
    onFault: faults.report,
  });
  const app = createApp({
    runner,
    runStore: runStore.store,
    hub,
    observationalMemory,
    workingMemory,
    faults,
    heartbeatMs: 50,
  });
  const json = async (path: string, init: RequestInit = {}) => {
    const response = await app.request(path, { ...init, headers: { 'content-type': 'application/json' } });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
  const startRun = async (prompt: string): Promise<string> => {
    const created = await json('/v1/runs', { method: 'POST', body: JSON.stringify({ prompt, ...ids }) });
    expect(created.status).toBe(202);
    return String(created.body['run_id']);
  };
  /** The server is healthy: `/healthz` answers, and a new run completes with its events. */
  const expectServing = async (): Promise<number> => {
    const health = await json('/healthz');
    expect(health.status).toBe(200);
    runStore.faults.clear();
    memoryStore.faults.clear();
    const runId = await startRun('a fresh run after the fault');
    expect((await runner.wait(runId)).status).toBe('completed');
    const events = await app.request(`/v1/runs/${runId}/events`);
    expect(await events.text()).toContain('event: run.completed');
    return Number(health.body['faults']);
  };
  return {
    app,
    runner,
    json,
    startRun,
    expectServing,
    agentModel,
    observationalMemory,
    memoryStore,
    runStore,
    faults,
    log,
    observer,
  };
}

const statusIs = (status: string) => (_runId: string, patch: Partial<RunRecord>) => patch.status === status;

describe('faults: where a run ends', () => {
  it('run completed: the store refuses every end of one run; the run is reported, the server goes on', async () => {
    const { startRun, runner, runStore, expectServing, log } = setup();
    runStore.faults.inject({
      method: 'updateRun',
      when: (_runId, patch) => patch.status === 'completed' || patch.status === 'failed',
    });
    const runId = await startRun('first');
    const ended = await runner.wait(runId);
    expect(ended).toMatchObject({ runId, status: 'failed', error: { code: 'STORE_FAILED' } });
    expect(await expectServing()).toBe(2);
    expect(log.map((record) => [record.event, record['component'], record['run_id']])).toEqual([
      ['fault', 'runner', runId],
      ['fault', 'runner', runId],
    ]);
  });

  it('run completed, once: the run fails with the store error and its stream still ends', async () => {
    const { startRun, runner, runStore, expectServing, app } = setup();
    runStore.faults.inject({ method: 'updateRun', when: statusIs('completed'), times: 1 });
    const runId = await startRun('first');
    expect(await runner.wait(runId)).toMatchObject({ status: 'failed', error: { code: 'STORE_FAILED' } });
    expect(await (await app.request(`/v1/runs/${runId}/events`)).text()).toContain('event: run.failed');
    expect(await expectServing()).toBe(0);
  });

  it('run failed: the model fails and the store refuses the failure too', async () => {
    const { startRun, runner, runStore, agentModel, expectServing } = setup();
    agentModel.enqueue(new Error('model exploded'));
    runStore.faults.inject({ method: 'updateRun', when: statusIs('failed') });
    const runId = await startRun('first');
    expect(await runner.wait(runId)).toMatchObject({ status: 'failed' });
    expect(await expectServing()).toBe(2);
  });

  it('run failed: its run.failed event cannot be stored', async () => {
    const { startRun, runner, runStore, agentModel, expectServing } = setup();
    agentModel.enqueue(new Error('model exploded'));
    runStore.faults.inject({ method: 'appendEvent', when: (_runId, type) => type === 'run.failed' });
    const runId = await startRun('first');
    expect((await runner.wait(runId)).status).toBe('failed');
    expect(await expectServing()).toBe(2);
  });

  it('run cancelled: the store refuses the cancellation', async () => {
    const { json, startRun, runStore, agentModel, expectServing } = setup();
    let started!: () => void;
    const inModel = new Promise<void>((resolve) => (started = resolve));
    agentModel.enqueue((options) => {
      started();
      return new Promise<never>((_, reject) =>
        options.abortSignal?.addEventListener('abort', () => reject(new Error('aborted'))),
      );
    });
    runStore.faults.inject({ method: 'updateRun', when: statusIs('cancelled') });
    const runId = await startRun('slow');
    await inModel;
    const cancelled = await json(`/v1/runs/${runId}/cancel`, { method: 'POST' });
    expect(cancelled).toMatchObject({ status: 202, body: { run_id: runId, status: 'cancelled' } });
    expect(await expectServing()).toBe(2);
  });

  it('a step event cannot be stored, nor the failure after it', async () => {
    const { startRun, runner, runStore, expectServing } = setup();
    runStore.faults.inject({
      method: 'appendEvent',
      when: (_runId, type) => type === 'run.step.completed' || type === 'run.failed',
    });
    const runId = await startRun('first');
    expect(await runner.wait(runId)).toMatchObject({ status: 'failed', error: { code: 'STORE_FAILED' } });
    // Once when the run's own failure path failed, once when the second try failed too.
    expect(await expectServing()).toBe(2);
  });
});

describe('faults: event streams', () => {
  it('a stream whose store read fails sends an error event and ends; the fault is counted', async () => {
    const { startRun, runner, runStore, app, expectServing } = setup();
    const runId = await startRun('first');
    await runner.wait(runId);
    runStore.faults.inject({ method: 'listEvents' });
    const text = await (await app.request(`/v1/runs/${runId}/events`)).text();
    expect(text).toBe(
      'event: error\ndata: {"error":{"code":"internal","message":"the event stream failed; reconnect with ' +
        'Last-Event-ID to resume"}}\n\n',
    );
    expect(await expectServing()).toBe(1);
  });
});

describe('faults: where a memory operation ends', () => {
  it('observation apply and its failure record both fail: the run completes and memory goes on', async () => {
    const { startRun, runner, memoryStore, expectServing, app } = setup();
    memoryStore.faults.inject({ method: 'completeObservation' });
    memoryStore.faults.inject({ method: 'failOperation' });
    const runId = await startRun('I prefer tabs');
    expect((await runner.wait(runId)).status).toBe('completed');
    expect(await (await app.request(`/v1/runs/${runId}/events`)).text()).toContain('event: memory.observe.failed');
    expect(await expectServing()).toBe(0);
  });

  it('reflection apply fails, and so does the event that would report a reflection', async () => {
    const { observationalMemory, memoryStore, runStore, expectServing } = setup();
    await observationalMemory.observe({
      scope: { tenantId: 'acme', conversationId: 'conv-faults', agentId: 'agent-x' },
      runId: 'run-x',
      messages: [{ id: 'm1', role: 'user', content: 'I prefer tabs' }],
    });
    memoryStore.faults.inject({ method: 'completeReflection', times: 1 });
    const scope = { tenantId: 'acme', conversationId: 'conv-faults', agentId: 'agent-x' };
    await expect(observationalMemory.reflectNow(scope)).rejects.toBeDefined();
    // The next reflection applies; a run listening for it cannot store the event.
    runStore.faults.inject({ method: 'appendEvent', when: (_runId, type) => type === 'memory.reflection.completed' });
    expect((await observationalMemory.reflectNow(scope)).reflected).toBe(true);
    expect(await expectServing()).toBe(0);
  });

  it('a reflection event of a live run cannot be stored: the fault is logged, the run completes', async () => {
    const { startRun, runner, runStore, agentModel, expectServing, observationalMemory } = setup();
    await observationalMemory.observe({
      scope: { tenantId: 'acme', conversationId: 'conv-faults', agentId: 'agent-x' },
      runId: 'run-x',
      messages: [{ id: 'm1', role: 'user', content: 'I prefer tabs' }],
    });
    agentModel.enqueue(
      {
        toolCalls: [
          { id: 'call-1', name: 'observational_memory', arguments: JSON.stringify({ action: 'reflect_now' }) },
        ],
      },
      'done',
    );
    runStore.faults.inject({ method: 'appendEvent', when: (_runId, type) => type === 'memory.reflection.completed' });
    const runId = await startRun('I prefer tabs; reflect now');
    expect((await runner.wait(runId)).status).toBe('completed');
    expect(await expectServing()).toBe(1);
  });
});

describe('faults: maintenance', () => {
  it('heartbeat and sweep failures are logged and retried; the server goes on', async () => {
    const { runner, runStore, faults, agentModel, startRun, expectServing } = setup();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    agentModel.enqueue(async () => {
      await held;
      return 'late answer';
    });
    const runId = await startRun('kept running');
    runStore.faults.inject({ method: 'listStaleRuns' });
    runStore.faults.inject({ method: 'updateRun', when: (_runId, patch) => Object.keys(patch).length === 0 });
    const maintenance = runner.startMaintenance({ heartbeatMs: 5, sweepMs: 5 });
    // Wait (for the events, not a set time) until both kinds of failure were met, twice.
    while (
      runStore.faults.failed.filter((method) => method === 'listStaleRuns').length < 2 ||
      runStore.faults.failed.filter((method) => method === 'updateRun').length < 2
    ) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await maintenance.stop();
    expect(faults.countsByComponent()['maintenance']).toBeGreaterThanOrEqual(4);
    release();
    expect((await runner.wait(runId)).status).toBe('completed');
    expect(await expectServing()).toBeGreaterThanOrEqual(4);
  });
});
