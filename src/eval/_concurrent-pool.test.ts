import { describe, expect, it } from 'vitest';
import { runConcurrently } from './_concurrent-pool.js';

/** A task that waits until `release` is called, so a test can see what runs at once. */
function gate() {
  let open = (): void => {};
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe('eval concurrent pool', () => {
  it('runs at most K items at once, starting them in order, and runs them all', async () => {
    const started: number[] = [];
    const gates = Array.from({ length: 5 }, gate);
    let running = 0;
    let most = 0;
    const done = runConcurrently([0, 1, 2, 3, 4], 2, async (item) => {
      started.push(item);
      running++;
      most = Math.max(most, running);
      await gates[item]?.opened;
      running--;
    });
    await Promise.resolve();
    expect(started).toEqual([0, 1]);
    gates[1]?.open();
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([0, 1, 2]);
    for (const item of gates) item.open();
    await done;
    expect(started).toEqual([0, 1, 2, 3, 4]);
    expect(most).toBe(2);
  });

  it('starts nothing more after an item throws, waits for those under way, then rethrows the first error', async () => {
    const started: number[] = [];
    const slow = gate();
    let slowFinished = false;
    const done = runConcurrently([0, 1, 2, 3], 2, async (item) => {
      started.push(item);
      if (item === 0) {
        await slow.opened;
        slowFinished = true;
        return;
      }
      throw new Error(`item ${item} failed`);
    });
    await new Promise((resolve) => setImmediate(resolve));
    slow.open();
    await expect(done).rejects.toThrow('item 1 failed');
    expect(started).toEqual([0, 1]);
    expect(slowFinished).toBe(true);
  });

  it('starts nothing more once asked to stop', async () => {
    const started: number[] = [];
    await runConcurrently(
      [0, 1, 2, 3],
      1,
      async (item) => void started.push(item),
      () => started.length >= 2,
    );
    expect(started).toEqual([0, 1]);
  });

  it('refuses a concurrency that is not a whole number of at least 1', async () => {
    await expect(runConcurrently([1], 0, async () => {})).rejects.toThrow(
      'concurrency must be a whole number, 1 or more; got 0',
    );
  });
});
