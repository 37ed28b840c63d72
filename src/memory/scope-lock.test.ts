import { describe, expect, it } from 'vitest';
import { KeyedLock } from './scope-lock.js';

/** A promise and the function that settles it. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open: () => void = () => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe('scope lock: a waiter whose signal aborts', () => {
  it('rejects at once with the reason, never runs, and the callers after it still wait for the holder', async () => {
    const locks = new KeyedLock();
    const holder = gate();
    const order: string[] = [];
    const held = locks.run('k', async () => {
      order.push('holder start');
      await holder.promise;
      order.push('holder end');
    });
    const controller = new AbortController();
    const reason = new Error('stop');
    const aborted = locks.run('k', async () => void order.push('aborted ran'), controller.signal);
    const after = locks.run('k', async () => void order.push('after'));
    expect(locks.callers('k')).toBe(3);
    controller.abort(reason);
    await expect(aborted).rejects.toBe(reason);
    expect(locks.callers('k')).toBe(2);
    // A caller coming now queues behind the holder too, not beside it.
    const later = locks.run('k', async () => void order.push('later'));
    await Promise.resolve();
    expect(order).toEqual(['holder start']);
    holder.open();
    await Promise.all([held, after, later]);
    expect(order).toEqual(['holder start', 'holder end', 'after', 'later']);
    expect(locks.size).toBe(0);
    expect(locks.callers('k')).toBe(0);
  });

  it('leaves no entry behind when the last waiter gave up', async () => {
    const locks = new KeyedLock();
    const holder = gate();
    const held = locks.run('k', () => holder.promise);
    const aborted = locks.run('k', async () => 'ran', AbortSignal.abort());
    await expect(aborted).rejects.toMatchObject({ name: 'AbortError' });
    expect(locks.size).toBe(1);
    holder.open();
    await held;
    await new Promise((resolve) => setImmediate(resolve));
    expect(locks.size).toBe(0);
  });
});
