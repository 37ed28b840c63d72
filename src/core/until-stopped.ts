/**
 * Waiting for work no longer than a caller wants it.
 * @module
 */

/**
 * `work`'s outcome, or a rejection with `signal`'s reason as soon as it aborts. Work left
 * running then ends on its own, its failure ignored: the caller has stopped waiting for it.
 */
export function untilStopped<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  return new Promise<T>((resolve, reject) => {
    const stop = (): void => {
      work.catch(() => undefined);
      reject(signal.reason);
    };
    if (signal.aborted) return stop();
    signal.addEventListener('abort', stop, { once: true });
    void work.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop));
  });
}

/**
 * Waits for `work` (its failure thrown), but no longer than `timeoutMs` nor past `signal`'s
 * abort: then it resolves and the work goes on without a waiter.
 */
export async function waitAtMost(work: Promise<unknown>, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    await Promise.race([
      work,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, Math.max(0, timeoutMs));
        onAbort = resolve;
        signal?.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}
