/**
 * Telling a model server that cannot be reached from one that fails now and then, so that an
 * eval stops at once instead of spending every conversation's retries on a dead address.
 */
import { ModelCallError } from '../core/errors.js';
import type { LanguageModel } from '../llm/language-model.js';
import { tlsFailureOf } from '../llm/tls-failure.js';

/**
 * Network error codes of a call that never reached a server: refused, no such host, no route.
 * `EAI_AGAIN` (DNS failed for now) is one too: before the model has answered once it is a name
 * that cannot be resolved, and later it stops the run only after the retries.
 */
const UNREACHABLE_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * What fetch (undici) says, with no code, of a port the fetch standard blocks (9, 25, 6000…): it
 * never connects there, so the server cannot be reached however often the call is retried.
 */
const BLOCKED_PORT_MESSAGE = 'bad port';

/** How deep the `cause` chain is followed: the SDK wraps the socket's error in two layers. */
const MAX_CAUSE_DEPTH = 8;

/**
 * Why an error says the server could not be reached, found along its causes: the network code
 * (`ECONNREFUSED`), the TLS failure's (`DEPTH_ZERO_SELF_SIGNED_CERT`), or `blocked port` for a
 * port fetch refuses to use; `undefined` for any other error.
 */
export function unreachableCode(error: unknown, depth = 0): string | undefined {
  if (typeof error !== 'object' || error === null || depth > MAX_CAUSE_DEPTH) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return code;
  // A certificate this machine refuses, or no TLS at the port: no retry reaches the server either.
  const tls = depth === 0 ? tlsFailureOf(error) : undefined;
  if (tls !== undefined) return tls.code;
  if (code === undefined && (error as { message?: unknown }).message === BLOCKED_PORT_MESSAGE) return 'blocked port';
  // Connecting to a name with several addresses fails with an AggregateError of one error each.
  const errors = (error as { errors?: unknown }).errors;
  if (Array.isArray(errors)) {
    for (const inner of errors) {
      const found = unreachableCode(inner, depth + 1);
      if (found !== undefined) return found;
    }
  }
  return unreachableCode((error as { cause?: unknown }).cause, depth + 1);
}

/** A model whose calls are watched for a server that cannot be reached. */
export interface ReachabilityWatch {
  readonly model: LanguageModel;
  /**
   * Called when the retries of the work using the model are used up: when its last call could
   * not reach the server, the run is stopped as when it never answered.
   */
  gaveUp(): void;
}

/** Options of {@link watchReachability}. */
export interface ReachabilityWatchOptions {
  /**
   * The model's calls retry inside it (`withRetries`), so each failure it throws is one after its
   * retries: an unreachable server stops the run whether or not the model answered before.
   * @default false: the caller retries, and says when it gave up through {@link ReachabilityWatch.gaveUp}
   */
  readonly retriesInside?: boolean;
}

/**
 * Wraps `model` so that `onUnreachable` is called with the connection failure when the server
 * cannot be reached: at the first such failure while the model has not answered once in the
 * run (a wrong address or a server that is not up; retrying it only waits), and later once the
 * retries are used up. A circuit the failures opened (a fast failure, `notSent`) counts as the
 * failure that opened it. Other failures (a 429, a 5xx, a timeout) are left to the retries, as
 * before.
 */
export function watchReachability(
  model: LanguageModel,
  onUnreachable: (error: Error) => void,
  options: ReachabilityWatchOptions = {},
): ReachabilityWatch {
  let answered = false;
  // The last call that reached the network failed to connect, and nothing answered since.
  let lastUnreachable: Error | undefined;
  return {
    model: {
      specificationVersion: 'v1',
      provider: model.provider,
      modelId: model.modelId,
      async doGenerate(callOptions) {
        try {
          const result = await model.doGenerate(callOptions);
          answered = true;
          lastUnreachable = undefined;
          return result;
        } catch (error) {
          const failFast = ModelCallError.isInstance(error) && error.notSent;
          if (!failFast) lastUnreachable = unreachableCode(error) === undefined ? undefined : (error as Error);
          const final = !answered || options.retriesInside === true;
          if (final && lastUnreachable !== undefined && !callOptions.abortSignal?.aborted)
            onUnreachable(lastUnreachable);
          throw error;
        }
      },
    },
    gaveUp() {
      if (lastUnreachable !== undefined) onUnreachable(lastUnreachable);
    },
  };
}
