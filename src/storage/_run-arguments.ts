/**
 * The numbers and listing positions the run store's methods take, checked alike by every
 * adapter: a step or token count, an event seq or a listing time that one backend cannot
 * store or compare is `OPTION_INVALID` naming it, where Postgres failed with a raw SQLSTATE
 * (22P02, 22007, 22003) and the other stores took it (a step count of 1.5 stored as given).
 * Private to `src/storage/`.
 * @module
 */
import { invalidOption } from '../core/require-option.js';
import { isRunListTime } from './run-store.js';
import type { RunListQuery, RunUsage } from './run-store.js';

/** The largest step count: Postgres keeps `steps` and `max_steps` as `integer`. */
const MAX_STEP_COUNT = 2_147_483_647;

/** `value` as a step count (`steps`, `maxSteps`): a whole number from 0 to {@link MAX_STEP_COUNT}. */
export function checkedStepCount(method: string, field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_STEP_COUNT)
    throw invalidOption(
      method,
      field,
      `must be a whole number from 0 to ${MAX_STEP_COUNT} (got ${String(value)})`,
      'Pass the number of steps as a count.',
    );
  return value;
}

/** `usage` with each count a whole number from 0 to `Number.MAX_SAFE_INTEGER`. */
export function checkedUsage(method: string, usage: unknown): RunUsage {
  if (typeof usage !== 'object' || usage === null)
    throw invalidOption(
      method,
      'usage',
      `must be an object (got ${usage === null ? 'null' : typeof usage})`,
      'Pass { inputTokens, outputTokens }.',
    );
  for (const field of ['inputTokens', 'outputTokens'] as const) {
    const value = (usage as Record<string, unknown>)[field];
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
      throw invalidOption(
        method,
        `usage.${field}`,
        `must be a whole number of at least 0 (got ${String(value)})`,
        'Pass the tokens counted, summed over the run.',
      );
  }
  return usage as RunUsage;
}

/** `afterSeq` of `listEvents`: any whole number (−1, or less, for every event). */
export function checkedAfterSeq(afterSeq: unknown): number {
  if (typeof afterSeq !== 'number' || !Number.isSafeInteger(afterSeq))
    throw invalidOption(
      'listEvents',
      'afterSeq',
      `must be a whole number (got ${String(afterSeq)})`,
      'Pass -1 for every event, or the seq of the last event read.',
    );
  return afterSeq;
}

/**
 * `query` of `listRuns`, its `before` checked: `createdAt` must be a run time as the stores
 * answer it (toISOString's form, years 1 to 9999). SQLite compares it as text and Postgres as
 * a time, so another form (no milliseconds, an offset) would page differently by backend.
 */
export function checkedRunListQuery(query: RunListQuery): RunListQuery {
  const before = query.before;
  if (before === undefined) return query;
  if (!isRunListTime(before.createdAt))
    throw invalidOption(
      'listRuns',
      'before.createdAt',
      `must be a run's createdAt as the store answered it, like 2024-05-01T12:00:00.000Z (got ${String(before.createdAt)})`,
      'Pass the createdAt and runId of the last run of the previous page.',
    );
  if (typeof before.runId !== 'string')
    throw invalidOption(
      'listRuns',
      'before.runId',
      `must be a string (got ${typeof before.runId})`,
      'Pass the createdAt and runId of the last run of the previous page.',
    );
  return query;
}
