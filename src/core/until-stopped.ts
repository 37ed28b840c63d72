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
