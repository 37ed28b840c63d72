/**
 * The maintenance sweep's operation retention (`operationRetentionSeconds`): settled memory
 * operations past the age deleted in bounded calls, one task at a time with the heartbeats.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { memoryIdOf } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import { createObservationalMemory } from '../memory/observational-memory.js';
import type { ObservationalMemory } from '../memory/observational-memory.js';
import { createWorkingMemory } from '../memory/working-memory.js';
import { createInMemoryRunStore } from '../storage/in-memory-run-store.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import type { RunStore } from '../storage/run-store.js';
import type { MemoryStore } from '../storage/store.js';
import { createAgentRunner } from './agent-runner.js';
import { startRunMaintenance } from './run-maintenance.js';
import { RunEventEmitter } from './run-event-emitter.js';
import { createLocalEventHub } from '../storage/local-event-hub.js';
import { newRun } from '../storage/run-store.suite.js';

const WORKSPACE = mkdtempSync(join(tmpdir(), 'hm-maintenance-'));
afterAll(() => rmSync(WORKSPACE, { recursive: true, force: true }));

const scopeOf = (index: number): Scope => ({ tenantId: 't', conversationId: `conv-${index}`, agentId: 'a' });

/** A runner over `store`, with `memory` in place of the observational memory made over it when given. */
function runnerOver(store: MemoryStore, memory?: ObservationalMemory, runStore: RunStore = createInMemoryRunStore()) {
  const agentModel = createMockLanguageModel('done');
  const observationalMemory = memory ?? createObservationalMemory({ store, defaultEnabled: true });
  const runner = createAgentRunner({
    model: agentModel,
    observationalMemory,
    workingMemory: createWorkingMemory({ store }),
    runStore,
    workspace: WORKSPACE,
  });
  return { runner, agentModel };
}

const until = async (done: () => boolean | Promise<boolean>): Promise<void> => {
  while (!(await done())) await new Promise((resolve) => setTimeout(resolve, 5));
};

describe('run maintenance: operation retention', () => {
  it('deletes settled operations past the age in calls of 1,000, keeping open ones, the newest and recent ones', async () => {
    let clock = Date.parse('2026-12-02T10:00:00.000Z');
    const store = createInMemoryStore({ now: () => new Date(clock) });
    const limits: number[] = [];
    const counted: MemoryStore = {
      ...store,
      deleteSettledOperations: async (input) => {
        limits.push(input.limit);
        return store.deleteSettledOperations!(input);
      },
    };
    // 2,500 old settled operations in 5 scopes (one more each, the newest, kept), and open ones.
    const settle = (scope: Scope) =>
      store.updateSettings({
        scope,
        memoryId: memoryIdOf(scope),
        enabled: true,
        runId: 'r',
        toolCallId: 't',
        operationId: `op-${Math.random()}`,
      });
    for (let index = 0; index < 5; index++) for (let step = 0; step <= 500; step++) await settle(scopeOf(index));
    await store.enqueueOperation({
      operationId: 'op-queued',
      scope: scopeOf(0),
      memoryId: memoryIdOf(scopeOf(0)),
      operationType: 'observe',
      payload: {},
      runId: 'r',
      toolCallId: 't',
    });
    clock += 2 * 86_400_000;
    await settle(scopeOf(1));
    await settle(scopeOf(1));
    const { runner } = runnerOver(counted);
    const maintenance = runner.startMaintenance({
      operationRetentionSeconds: 86_400,
      sweepMs: 60_000,
      heartbeatMs: 60_000,
    });
    // The first sweep runs at the start, one call of 1,000 after another, while they fill.
    await until(() => limits.length === 3);
    await maintenance.stop();
    expect(limits).toEqual([1000, 1000, 1000]);
    const left = await Promise.all(
      [0, 1, 2, 3, 4].map(async (index) =>
        (await store.listOperations(memoryIdOf(scopeOf(index)))).map((operation) => operation.status),
      ),
    );
    expect(left).toEqual([['queued'], ['applied', 'applied'], ['applied'], ['applied'], ['applied']]);
  });

  it('lets a heartbeat run between two deletes of a backlog, and starts none after stop()', async () => {
    const calls: string[] = [];
    const releases: Array<() => void> = [];
    const store = createInMemoryStore();
    const base = createObservationalMemory({ store, defaultEnabled: true });
    // A backlog that never ends: every call deletes a whole batch, once the test lets it.
    const memory: ObservationalMemory = {
      ...base,
      deleteSettledOperations: async () => {
        calls.push('delete');
        await new Promise<void>((resolve) => releases.push(resolve));
        return 1000;
      },
    };
    const runStore = createInMemoryRunStore();
    const { runner, agentModel } = runnerOver(store, memory, {
      ...runStore,
      updateRun: async (runId, patch) => {
        calls.push('heartbeat');
        return runStore.updateRun(runId, patch);
      },
    });
    let finish = (): void => undefined;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    agentModel.enqueue(async () => {
      await finished;
      return 'done';
    });
    const live = await runner.start({ tenantId: 't', conversationId: 'live', prompt: 'hello' });
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const maintenance = runner.startMaintenance({ operationRetentionSeconds: 60, heartbeatMs: 10, sweepMs: 60_000 });
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
    expect(calls.filter((call) => call === 'delete')).toHaveLength(2);
    finish();
    await runner.wait(live.runId);
  });

  it('refuses an operation retention the memory cannot apply, and a bad one, naming it', async () => {
    const { deleteSettledOperations: _, ...withoutRetention } = createInMemoryStore();
    const { runner } = runnerOver(withoutRetention as MemoryStore);
    expect(() => runner.startMaintenance({ operationRetentionSeconds: 60 })).toThrow(
      expect.objectContaining({
        code: 'OPTION_INVALID',
        data: { factory: 'startRunMaintenance', option: 'operationRetentionSeconds' },
      }),
    );
    // 0 keeps operations for ever: nothing to check the memory for.
    await runner.startMaintenance({ operationRetentionSeconds: 0 }).stop();
    for (const value of [-1, 1.5, Number.NaN])
      expect(() =>
        runnerOver(createInMemoryStore()).runner.startMaintenance({ operationRetentionSeconds: value }),
      ).toThrow(
        expect.objectContaining({
          code: 'OPTION_INVALID',
          data: { factory: 'startRunMaintenance', option: 'operationRetentionSeconds' },
        }),
      );
  });
});

describe('run maintenance: heartbeats', () => {
  it("keeps heartbeating the other runs, and sweeping, while one run's heartbeat waits on its held row", async () => {
    const store = createInMemoryStore();
    const runStore = createInMemoryRunStore();
    // Heartbeats begun, and answered, per run.
    const beats = new Map<string, number>();
    const answered = new Map<string, number>();
    let held: string | undefined;
    let release = (): void => undefined;
    const releasedRow = new Promise<void>((resolve) => (release = resolve));
    let sweeps = 0;
    const { runner, agentModel } = runnerOver(store, undefined, {
      ...runStore,
      updateRun: async (runId, patch) => {
        if (Object.keys(patch).length === 0) {
          beats.set(runId, (beats.get(runId) ?? 0) + 1);
          // Another session holds this run's row: its heartbeat waits until the test lets go.
          if (runId === held) await releasedRow;
        }
        const updated = await runStore.updateRun(runId, patch);
        if (Object.keys(patch).length === 0) answered.set(runId, (answered.get(runId) ?? 0) + 1);
        return updated;
      },
      listStaleRuns: async (olderThanSeconds) => {
        sweeps += 1;
        return runStore.listStaleRuns(olderThanSeconds);
      },
    });
    let finish = (): void => undefined;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    for (let index = 0; index < 2; index++)
      agentModel.enqueue(async () => {
        await finished;
        return 'done';
      });
    const first = await runner.start({ tenantId: 't', conversationId: 'held', prompt: 'hello' });
    const second = await runner.start({ tenantId: 't', conversationId: 'free', prompt: 'hello' });
    held = first.runId;
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const maintenance = runner.startMaintenance({ heartbeatMs: 10, sweepMs: 25 });
    try {
      for (let tick = 0; tick < 6; tick++) {
        vi.advanceTimersByTime(10);
        const expected = tick + 1;
        // Answered, and so no longer in flight: the next tick begins another.
        await until(() => (answered.get(second.runId) ?? 0) >= expected);
      }
      await until(() => sweeps >= 3);
    } finally {
      vi.useRealTimers();
    }
    // One heartbeat of the held run in flight, however many ticks passed.
    expect(beats.get(first.runId)).toBe(1);
    expect(beats.get(second.runId)).toBeGreaterThanOrEqual(6);
    const stopping = maintenance.stop();
    release();
    await stopping;
    finish();
    await Promise.all([runner.wait(first.runId), runner.wait(second.runId)]);
  });
});

describe('run maintenance: heartbeat failures', () => {
  it('reports a store that throws, a callback that throws and a run list that throws, as faults', async () => {
    const runStore = createInMemoryRunStore();
    await runStore.createRun(newRun('run_sync'));
    await runStore.createRun(newRun('run_ended'));
    await runStore.updateRun('run_ended', { status: 'failed' });
    const faults: string[] = [];
    let listFails = false;
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const maintenance = startRunMaintenance(
      {
        runStore: {
          ...runStore,
          updateRun: (runId, patch) => {
            if (runId === 'run_sync') throw new Error('thrown, not rejected');
            return runStore.updateRun(runId, patch);
          },
          listStaleRuns: async () => [],
        },
        events: new RunEventEmitter(runStore, createLocalEventHub()),
        activeRunIds: () => {
          if (listFails) throw new Error('no run list');
          return ['run_sync', 'run_ended'];
        },
        isActive: () => true,
        endedElsewhere: () => {
          throw new Error('callback failed');
        },
        reportFault: (fault) => faults.push(`${fault.runId ?? '-'}: ${(fault.error as Error).message}`),
      },
      { heartbeatMs: 10, sweepMs: 60_000 },
    );
    try {
      vi.advanceTimersByTime(10);
      await until(() => faults.length >= 2);
      listFails = true;
      vi.advanceTimersByTime(10);
      await until(() => faults.length >= 3);
    } finally {
      vi.useRealTimers();
      await maintenance.stop();
    }
    expect(faults.sort()).toEqual(['-: no run list', 'run_ended: callback failed', 'run_sync: thrown, not rejected']);
  });
});
