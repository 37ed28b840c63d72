/** Work over a list with a bound on how much runs at once. */

/**
 * Runs `work` on every item in order, at most `concurrency` items at a time. Once
 * `shouldStop()` says so, or an item's work throws, no further item starts; the items under
 * way are waited for, then the first error is rethrown.
 */
export async function runConcurrently<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
  shouldStop: () => boolean = () => false,
): Promise<void> {
  if (!Number.isSafeInteger(concurrency) || concurrency < 1)
    throw new RangeError(`concurrency must be a whole number, 1 or more; got ${concurrency}`);
  let next = 0;
  let failure: { readonly error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && !shouldStop() && next < items.length) {
      const item = items[next++] as T;
      try {
        await work(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  if (failure !== undefined) throw failure.error;
}
