/**
 * Checks of a factory's required options, so a missing or empty one fails at the call that
 * gave it, with a `HarnessMemoryError` (`OPTION_INVALID`) naming the option, instead of
 * later, deep inside, as `Cannot read properties of undefined`.
 * @module
 */
import { HarnessMemoryError } from './errors.js';

/**
 * The `OPTION_INVALID` error for `factory`'s option `option`: `[harness-memory] [<factory>] option
 * <option> <problem>. <hint>`. The factory is the component, so the text does not name it again;
 * `data.factory` holds it.
 */
export function invalidOption(factory: string, option: string, problem: string, hint: string): HarnessMemoryError {
  return new HarnessMemoryError({
    code: 'OPTION_INVALID',
    component: factory,
    // A problem quoted from another error may end its own sentence.
    message: `option ${option} ${problem.replace(/\.+$/, '')}. ${hint}`,
    data: { factory, option },
  });
}

/** The options object itself: a factory called with nothing (or not an object) fails here. */
export function requireOptions<T>(factory: string, options: T, hint: string): NonNullable<T> {
  if (typeof options !== 'object' || options === null)
    throw invalidOption(factory, 'options', 'is required (an object)', hint);
  return options as NonNullable<T>;
}

/** A non-empty string (not only spaces). */
export function requireString(factory: string, option: string, value: unknown, hint: string): string {
  if (typeof value !== 'string')
    throw invalidOption(
      factory,
      option,
      value === undefined ? 'is required' : `must be a string (got ${typeof value})`,
      hint,
    );
  if (value.trim() === '') throw invalidOption(factory, option, 'must not be empty', hint);
  return value;
}

/**
 * An object with the given methods: a store, a model, a service. `undefined` is refused
 * unless `optional` (then it passes through).
 */
export function requireObject<T>(
  factory: string,
  option: string,
  value: T,
  methods: readonly string[],
  hint: string,
  optional = false,
): T {
  if (value === undefined && optional) return value;
  if (typeof value !== 'object' || value === null)
    throw invalidOption(
      factory,
      option,
      value == null ? 'is required' : `must be an object (got ${typeof value})`,
      hint,
    );
  const missing = methods.filter((method) => typeof (value as Record<string, unknown>)[method] !== 'function');
  if (missing.length > 0)
    throw invalidOption(factory, option, `is missing ${missing.map((method) => `${method}()`).join(', ')}`, hint);
  return value;
}

/**
 * A function, or `undefined` or `null` (left out). A clock, id generator or listener of the
 * wrong type otherwise failed later, deep inside, as `… is not a function`.
 */
export function requireFunction(factory: string, option: string, value: unknown): void {
  if (value != null && typeof value !== 'function')
    throw invalidOption(
      factory,
      option,
      `must be a function (got ${value === null ? 'null' : typeof value})`,
      'Pass a function, or leave it out for the default.',
    );
}

/** A token estimator (an object with `estimate`), or `undefined` or `null` (left out, as the default `??` reads it). */
export function requireEstimator(factory: string, value: unknown): void {
  requireObject(
    factory,
    'estimator',
    value ?? undefined,
    ['estimate'],
    'Pass a TokenEstimator, or leave it out.',
    true,
  );
}

/** A whole number of at least 1: `undefined` passes through. */
export function requireCount(factory: string, option: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
    throw invalidOption(
      factory,
      option,
      `must be a whole number of at least 1 (got ${shown(value)})`,
      'Leave it out for the default.',
    );
  return value;
}

/** The longest delay a Node timer keeps (about 24.8 days); a longer one fires at once. */
export const MAX_TIMER_DELAY_MS: number = 2 ** 31 - 1;

/**
 * A time in milliseconds a timer will wait, from `min` to {@link MAX_TIMER_DELAY_MS}:
 * `undefined` passes through. NaN, a string or an overlong time made every call fail at once.
 */
export function requireTimerMs(factory: string, option: string, value: unknown, min: number): number | undefined {
  if (value === undefined) return undefined;
  if (!isTimerMs(value, min))
    throw invalidOption(
      factory,
      option,
      `must be a number of milliseconds from ${min} to ${MAX_TIMER_DELAY_MS} (got ${shown(value)})`,
      'Leave it out for the default.',
    );
  return value;
}

/** Whether `value` is a number of milliseconds from `min` that a Node timer waits out. */
export function isTimerMs(value: unknown, min: number): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= min && value <= MAX_TIMER_DELAY_MS;
}

/** A value as an error message shows it: strings quoted, anything else as `String` writes it. */
function shown(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : typeof value === 'object' ? typeof value : String(value);
}

/** A value as an error message shows it: JSON, but `NaN` and `Infinity` as themselves, not as JSON's `null`. */
export function shownValue(value: unknown): string {
  return typeof value === 'number' && !Number.isFinite(value) ? String(value) : JSON.stringify(value);
}
