/**
 * Per-tenant limits of the HTTP server: runs at once, SSE streams at once, and write
 * requests per second (a token bucket), each kept per API key (per tenant without keys),
 * so one busy tenant cannot take the server from the others.
 * @module
 */
import type { HTTPException } from 'hono/http-exception';
import { invalidOption } from '../core/require-option.js';
import { httpError } from './http-error.js';
import { monotonicNow } from '../core/monotonic-now.js';

/** Options of {@link createTenantLimits}. */
export interface TenantLimitsOptions {
  /** Runs queued or running at once. @default 16 */
  readonly maxConcurrentRuns?: number;
  /** Open SSE event streams. @default 32 */
  readonly maxSseConnections?: number;
  /** Write requests per second; bursts up to one second's worth. @default 50 */
  readonly maxWritesPerSecond?: number;
  /**
   * Read requests per second; bursts up to one second's worth. A read of a large scope (its
   * listing, an export) costs the server in proportion to the scope. @default 200
   */
  readonly maxReadsPerSecond?: number;
  /**
   * How long a refusal (429) waits before it is sent: a client that floods without honouring
   * `Retry-After` then sends at most one request per connection per pause. @default 250
   */
  readonly refusalDelayMs?: number;
  /** Milliseconds clock for the token buckets. @default a monotonic clock (`performance.now`): a step of the wall clock does not move it */
  readonly now?: () => number;
}

/** The limits of one server. Every method is synchronous and keyed by principal. */
export interface TenantLimits {
  /** Takes a write token, or throws `429 rate_limited` with the seconds until the next one. */
  admitWrite(principal: string): void;
  /**
   * Takes a read token, or throws `429 rate_limited` with the seconds until the next one.
   * Optional, so limits of one's own written before it existed go on working (reads then unlimited).
   */
  admitRead?(principal: string): void;
  /** Counts a run in; throws `429 too_many_runs` at the cap. Call the returned function once when the run ends. */
  acquireRun(principal: string): () => void;
  /**
   * Counts an SSE stream in; throws `429 too_many_streams` at the cap. Call the returned function once when it
   * closes.
   */
  acquireStream(principal: string): () => void;
  /** Resolves after `refusalDelayMs`; the app waits for it before sending a 429. */
  pauseBeforeRefusal(): Promise<void>;
}

/** A token bucket: `tokens` as of `refilledAt`. */
interface Bucket {
  tokens: number;
  refilledAt: number;
}

interface Usage {
  runs: number;
  streams: number;
  writes: Bucket;
  reads: Bucket;
}

// Idle principals are dropped once there are this many, so ids seen once do not pile up.
const SWEEP_AT = 10_000;

/**
 * Creates the limits. A principal is any string naming who is asking (`key:<n>` with API
 * keys, `tenant:<id>` without).
 * @example
 * const limits = createTenantLimits({ maxWritesPerSecond: 20 });
 * limits.admitWrite('tenant:acme');
 */
export function createTenantLimits(options: TenantLimitsOptions = {}): TenantLimits {
  const maxRuns = positiveOption('maxConcurrentRuns', options.maxConcurrentRuns ?? 16);
  const maxStreams = positiveOption('maxSseConnections', options.maxSseConnections ?? 32);
  const rate = positiveOption('maxWritesPerSecond', options.maxWritesPerSecond ?? 50);
  const readRate = positiveOption('maxReadsPerSecond', options.maxReadsPerSecond ?? 200);
  const refusalDelayMs = options.refusalDelayMs ?? 250;
  if (!Number.isFinite(refusalDelayMs) || refusalDelayMs < 0)
    throw invalidOption(
      'createTenantLimits',
      'refusalDelayMs',
      `must be a non-negative number of milliseconds (got ${String(refusalDelayMs)})`,
      'Leave it out for the default.',
    );
  const now = options.now ?? monotonicNow;
  const usage = new Map<string, Usage>();

  const usageOf = (principal: string): Usage => {
    let found = usage.get(principal);
    if (!found) {
      if (usage.size >= SWEEP_AT) sweep();
      const at = now();
      found = {
        runs: 0,
        streams: 0,
        writes: { tokens: rate, refilledAt: at },
        reads: { tokens: readRate, refilledAt: at },
      };
      usage.set(principal, found);
    }
    return found;
  };
  const sweep = (): void => {
    for (const [principal, entry] of usage) {
      refill(entry.writes, rate);
      refill(entry.reads, readRate);
      if (entry.runs === 0 && entry.streams === 0 && entry.writes.tokens >= rate && entry.reads.tokens >= readRate)
        usage.delete(principal);
    }
  };
  const refill = (bucket: Bucket, perSecond: number): void => {
    const at = now();
    // A clock of the caller's that went back refills nothing; it drains nothing either.
    bucket.tokens = Math.min(perSecond, bucket.tokens + (Math.max(0, at - bucket.refilledAt) / 1000) * perSecond);
    bucket.refilledAt = at;
  };
  /** Takes a token of `bucket`, or throws `429 rate_limited` naming what `kind` of request it counts. */
  const take = (bucket: Bucket, perSecond: number, kind: 'write' | 'read'): void => {
    refill(bucket, perSecond);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return;
    }
    const seconds = Math.max(1, Math.ceil((1 - bucket.tokens) / perSecond));
    throw tooMany(
      'rate_limited',
      `more than ${perSecond} ${kind} requests per second; retry after ${seconds} s`,
      seconds,
    );
  };
  /** A counter that refuses past `max`, and a release that counts down once. */
  const acquire = (
    principal: string,
    field: 'runs' | 'streams',
    max: number,
    refuse: () => HTTPException,
  ): (() => void) => {
    const entry = usageOf(principal);
    if (entry[field] >= max) throw refuse();
    entry[field]++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      entry[field]--;
    };
  };

  return {
    admitWrite: (principal) => take(usageOf(principal).writes, rate, 'write'),
    admitRead: (principal) => take(usageOf(principal).reads, readRate, 'read'),
    acquireRun: (principal) =>
      acquire(principal, 'runs', maxRuns, () =>
        tooMany(
          'too_many_runs',
          `${maxRuns === 1 ? '1 run is' : `${maxRuns} runs are`} already queued or running for ${holderOf(principal)}; retry when one ends`,
          1,
        ),
      ),
    pauseBeforeRefusal: () =>
      refusalDelayMs === 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, refusalDelayMs)),
    acquireStream: (principal) =>
      acquire(principal, 'streams', maxStreams, () =>
        tooMany(
          'too_many_streams',
          `${maxStreams === 1 ? '1 event stream is' : `${maxStreams} event streams are`} already open for ${holderOf(principal)}; close one first`,
          1,
        ),
      ),
  };
}

function positiveOption(option: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1)
    throw invalidOption(
      'createTenantLimits',
      option,
      `must be a positive integer (got ${String(value)})`,
      'Leave it out for the default.',
    );
  return value;
}

function tooMany(code: string, message: string, retryAfterSeconds: number): HTTPException {
  return httpError(429, code, message, { 'retry-after': String(retryAfterSeconds) });
}

/** Who a limit is counted for, in a refusal: the API key, or without keys the tenant. */
function holderOf(principal: string): string {
  return principal.startsWith(TENANT_PRINCIPAL) ? `tenant ${principal.slice(TENANT_PRINCIPAL.length)}` : 'this API key';
}

const TENANT_PRINCIPAL = 'tenant:';

/** Who a request counts against: its API key (`principal`), or without keys the tenant it names. */
export function principalOf(principal: string | undefined, tenantId: string): string {
  return principal ?? `${TENANT_PRINCIPAL}${tenantId}`;
}

/** Counts a write against `tenantId`, unless an API key's principal was already counted (by the app's middleware). */
export function admitTenantWrite(limits: TenantLimits, principal: string | undefined, tenantId: string): void {
  if (principal === undefined) limits.admitWrite(principalOf(undefined, tenantId));
}
