/**
 * Freezing plain data all the way down.
 * @module
 */

/**
 * Freezes `value` and every object reachable from it, and returns it. An object already
 * frozen is taken as frozen all the way down (as this function leaves it), which also ends
 * cycles.
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
