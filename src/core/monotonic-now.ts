/**
 * The clock for durations and deadlines.
 * @module
 */

/**
 * Milliseconds on a monotonic clock (`performance.now`): only differences mean anything, and a
 * step of the wall clock (NTP, a resumed VM, an operator's `date`) does not move it, so a
 * deadline, a rate or a back-off is neither stretched nor cut short by one.
 */
export function monotonicNow(): number {
  return performance.now();
}
