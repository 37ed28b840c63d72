/**
 * The MCP requests `/mcp` is answering, so that a client's `notifications/cancelled` can stop
 * one. Each POST gets a server instance of its own, so the SDK cannot find the request a
 * cancel names: this registry does, by the caller (its API key and tenant) and the request id.
 * @module
 */

/** A request being answered: its signal aborts on a matching cancel; `end` forgets it. */
export interface CallInFlight {
  readonly signal: AbortSignal;
  end(): void;
}

/** The requests of all callers being answered, by caller and JSON-RPC id. */
export interface McpCallsInFlight {
  /**
   * Registers the request `message` (a JSON-RPC request with an id) for `caller`; `undefined`
   * for anything else (a notification, a response, a batch, a body that is not JSON-RPC).
   */
  start(caller: string, message: unknown): CallInFlight | undefined;
  /**
   * Aborts the request a `notifications/cancelled` message names, when exactly one request of
   * `caller` has that id and none under it ended in the last {@link ENDED_KEPT_MS}: two clients
   * of one key may each use an id (SDK clients count from 0), and a cancel may come after its
   * request ended, so it might be another client's; then none is stopped, as MCP lets a
   * receiver ignore a cancel. Answers whether one was aborted.
   */
  cancel(caller: string, message: unknown): boolean;
  /** How many requests are running (for tests). */
  readonly size: number;
}

/** Options of {@link createMcpCallsInFlight}. */
export interface McpCallsInFlightOptions {
  /** Milliseconds, for the window of ended requests. @default performance.now */
  readonly now?: () => number;
}

/** How long an ended request still counts against a cancel of its id: a late cancel is likely its own. */
export const ENDED_KEPT_MS = 5_000;

interface Registered {
  readonly controller: AbortController;
  /** When it ended; undefined while it runs. */
  endedAt: number | undefined;
}

/** An empty registry. */
export function createMcpCallsInFlight(options: McpCallsInFlightOptions = {}): McpCallsInFlight {
  const now = options.now ?? (() => performance.now());
  const calls = new Map<string, Set<Registered>>();
  // Ended requests in the order they ended, each dropped once its window has passed.
  const ended: Array<{ readonly key: string; readonly entry: Registered }> = [];
  let size = 0;
  const forgetEnded = (): void => {
    const oldest = now() - ENDED_KEPT_MS;
    while (ended.length > 0 && (ended[0]?.entry.endedAt ?? 0) <= oldest) {
      const { key, entry } = ended.shift() as { key: string; entry: Registered };
      const same = calls.get(key);
      same?.delete(entry);
      if (same?.size === 0) calls.delete(key);
    }
  };
  return {
    start(caller, message) {
      forgetEnded();
      const id = requestIdOf(message);
      if (id === undefined) return undefined;
      const key = keyOf(caller, id);
      const entry: Registered = { controller: new AbortController(), endedAt: undefined };
      let same = calls.get(key);
      if (same === undefined) calls.set(key, (same = new Set()));
      same.add(entry);
      size++;
      return {
        signal: entry.controller.signal,
        end() {
          if (entry.endedAt !== undefined) return;
          entry.endedAt = now();
          size--;
          ended.push({ key, entry });
        },
      };
    },
    cancel(caller, message) {
      forgetEnded();
      const id = cancelledIdOf(message);
      if (id === undefined) return false;
      const same = calls.get(keyOf(caller, id));
      if (same === undefined || same.size !== 1) return false;
      const [entry] = same;
      if (entry === undefined || entry.endedAt !== undefined) return false;
      entry.controller.abort(new Error('the MCP client cancelled the request'));
      return true;
    },
    get size() {
      return size;
    },
  };
}

type RequestId = string | number;

function keyOf(caller: string, id: RequestId): string {
  // The id's type is part of it: JSON-RPC ids 1 and "1" are different requests.
  return `${caller}\u0000${typeof id}:${String(id)}`;
}

function isRequestId(value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

function requestIdOf(message: unknown): RequestId | undefined {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return undefined;
  const { method, id } = message as { method?: unknown; id?: unknown };
  return typeof method === 'string' && isRequestId(id) ? id : undefined;
}

function cancelledIdOf(message: unknown): RequestId | undefined {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return undefined;
  const { method, params } = message as { method?: unknown; params?: unknown };
  if (method !== 'notifications/cancelled' || typeof params !== 'object' || params === null) return undefined;
  const { requestId } = params as { requestId?: unknown };
  return isRequestId(requestId) ? requestId : undefined;
}
