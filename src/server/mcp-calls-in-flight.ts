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
   * `caller` has that id (two clients of one key may each use it: then neither is stopped, as
   * MCP lets a receiver ignore a cancel). Answers whether one was aborted.
   */
  cancel(caller: string, message: unknown): boolean;
  /** How many requests are registered (for tests). */
  readonly size: number;
}

/** An empty registry. */
export function createMcpCallsInFlight(): McpCallsInFlight {
  const calls = new Map<string, Set<AbortController>>();
  let size = 0;
  return {
    start(caller, message) {
      const id = requestIdOf(message);
      if (id === undefined) return undefined;
      const key = keyOf(caller, id);
      const controller = new AbortController();
      let same = calls.get(key);
      if (same === undefined) calls.set(key, (same = new Set()));
      same.add(controller);
      size++;
      const registered = same;
      let ended = false;
      return {
        signal: controller.signal,
        end() {
          if (ended) return;
          ended = true;
          size--;
          registered.delete(controller);
          if (registered.size === 0 && calls.get(key) === registered) calls.delete(key);
        },
      };
    },
    cancel(caller, message) {
      const id = cancelledIdOf(message);
      if (id === undefined) return false;
      const same = calls.get(keyOf(caller, id));
      if (same === undefined || same.size !== 1) return false;
      const [controller] = same;
      controller?.abort(new Error('the MCP client cancelled the request'));
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
