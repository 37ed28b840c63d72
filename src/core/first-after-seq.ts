/**
 * Binary search over items kept in ascending seq order (a scope's messages and observations).
 * @module
 */

/** The index of the first item whose seq is above `seq`: the items' length when none is. */
export function firstAfterSeq(items: ReadonlyArray<{ readonly seq: number }>, seq: number): number {
  let low = 0;
  let high = items.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((items[middle] as { readonly seq: number }).seq <= seq) low = middle + 1;
    else high = middle;
  }
  return low;
}
