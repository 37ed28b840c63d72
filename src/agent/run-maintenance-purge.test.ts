/**
 * The maintenance sweep's working-memory purge (`purgeExpiredWorkingMemory`): at each sweep,
 * bounded calls of 1,000, again while a call deletes that many, 20 at most; a failure is a
 * fault and the next sweep tries again.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Fault } from '../core/fault.js';
import { createInMemoryRunStore } from '../storage/in-memory-run-store.js';
import { createLocalEventHub } from '../storage/local-event-hub.js';
import { RunEventEmitter } from './run-event-emitter.js';
import { startRunMaintenance } from './run-maintenance.js';
import type { RunMaintenanceOptions, RunMaintenanceTarget } from './run-maintenance.js';

afterEach(() => {
  vi.useRealTimers();
});

function targetWith(faults: Fault[] = []): RunMaintenanceTarget {
  const runStore = createInMemoryRunStore();
  return {
    runStore,
    events: new RunEventEmitter(runStore, createLocalEventHub()),
    activeRunIds: () => [],
    isActive: () => false,
    reportFault: (fault) => faults.push(fault),
  };
}

/** Polls `done` until it holds; the deadline only keeps a broken sweep from hanging the test. */
const until = async (done: () => boolean): Promise<void> => {
  for (const deadline = Date.now() + 10_000; !done() && Date.now() < deadline;)
    await new Promise((resolve) => setTimeout(resolve, 5));
};

describe('run maintenance: expired working memory', () => {
  it('purges at each sweep in calls of 1,000, again while a call deletes that many, 20 a sweep at most', async () => {
    const limits: number[] = [];
    const answers = [1000, 1000, 7];
    const purgeExpiredWorkingMemory: RunMaintenanceOptions['purgeExpiredWorkingMemory'] = async ({ limit }) => {
      limits.push(limit);
      return answers.shift() ?? limit;
    };
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const maintenance = startRunMaintenance(targetWith(), {
      purgeExpiredWorkingMemory,
      sweepMs: 60_000,
      heartbeatMs: 60_000,
    });
    // The first sweep, at the start: until a call deletes fewer than 1,000.
    await until(() => limits.length === 3);
    // The next sweep: a backlog that never ends is worked off 20 calls at a time.
    vi.advanceTimersByTime(60_000);
    await until(() => limits.length === 23);
    expect(limits).toHaveLength(23);
    vi.advanceTimersByTime(60_000);
    await until(() => limits.length === 43);
    await maintenance.stop();
    expect(limits.every((limit) => limit === 1000)).toBe(true);
    expect(limits).toHaveLength(43);
  });

  it('reports a failed purge as a fault and tries again at the next sweep', async () => {
    const faults: Fault[] = [];
    let calls = 0;
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const maintenance = startRunMaintenance(targetWith(faults), {
      purgeExpiredWorkingMemory: async () => {
        calls++;
        if (calls === 1) throw new Error('database gone');
        return 0;
      },
      sweepMs: 60_000,
      heartbeatMs: 60_000,
    });
    await until(() => faults.length === 1);
    expect(faults).toHaveLength(1);
    expect(faults[0]).toMatchObject({
      component: 'maintenance',
      message: 'deleting expired working-memory entries failed; the next sweep tries again',
    });
    vi.advanceTimersByTime(60_000);
    await until(() => calls === 2);
    await maintenance.stop();
    expect(faults).toHaveLength(1);
  });

  it('refuses a purge that is not a function, naming it', () => {
    expect(() =>
      startRunMaintenance(targetWith(), { purgeExpiredWorkingMemory: 'yes' as never, sweepMs: 60_000 }),
    ).toThrow(
      expect.objectContaining({
        code: 'OPTION_INVALID',
        data: { factory: 'startRunMaintenance', option: 'purgeExpiredWorkingMemory' },
      }),
    );
  });
});
