import { AsyncLocalStorage } from 'node:async_hooks';
import { createMcpHandler } from '@modelcontextprotocol/server';
import { Hono } from 'hono';
import { createMemoryMcpServer } from '../../mcp/memory-mcp-server.js';
import type { ObservationalMemory } from '../../memory/observational-memory.js';
import type { WorkingMemory } from '../../memory/working-memory.js';
import type { RunStore } from '../../storage/run-store.js';
import type { FaultReporter } from '../../core/fault.js';
import { createMcpCallsInFlight } from '../mcp-calls-in-flight.js';
import type { CallInFlight } from '../mcp-calls-in-flight.js';
import type { ServerEnv } from '../server-env.js';
import { principalOf } from '../tenant-limits.js';
import type { TenantLimits } from '../tenant-limits.js';

/** Dependencies of the MCP endpoint. */
export interface McpRouteOptions {
  readonly observationalMemory: ObservationalMemory;
  readonly workingMemory: WorkingMemory;
  readonly runStore: RunStore;
  /** Offer `memory_forget`. @default false */
  readonly allowForget?: boolean;
  readonly onFault?: FaultReporter;
  /**
   * The API keys' limits: with keys, every POST counts against the key's write rate and every
   * answer streamed as events holds one of its event streams while it is open.
   */
  readonly limits?: TenantLimits;
}

/** The tenant of a request without API keys (loopback only). */
const KEYLESS_TENANT = 'default';

/**
 * `/mcp`: the MCP server over Streamable HTTP, one server instance per request. The tenant is
 * the API key's (authenticated before this route), or `default` without keys.
 */
export function mcpRoutes(options: McpRouteOptions): Hono<ServerEnv> {
  const app = new Hono<ServerEnv>();
  const requestErrors = new AsyncLocalStorage<RequestErrors>();
  const inFlight = createMcpCallsInFlight();
  const report = (error: unknown): void =>
    options.onFault?.({ component: 'mcp', message: 'an MCP request failed', error });
  const handler = createMcpHandler(
    (request) =>
      createMemoryMcpServer({
        observationalMemory: options.observationalMemory,
        workingMemory: options.workingMemory,
        runStore: options.runStore,
        tenantId: tenantOf(request.authInfo?.extra),
        allowForget: options.allowForget === true,
        readOnly: request.authInfo?.extra?.['readOnly'] === true,
        onFault: report,
      }),
    {
      // The SDK reports a client's bad request (not JSON-RPC, a wrong content type) here too:
      // held until the answer is known, and a fault only when that answer is a 5xx.
      onerror: (error) => {
        const request = requestErrors.getStore();
        if (request && !request.answered) request.errors.push(error);
        else report(error);
      },
    },
  );
  app.all('/', async (context) => {
    const principal = context.get('principal');
    const tenantId = context.get('tenant') ?? KEYLESS_TENANT;
    // Without keys, what the tenant the calls run as does is counted, as on /v1.
    const counted = principalOf(principal, tenantId);
    // Any tool call may write (and some ask the memory model): counted before the body is read,
    // then once more for every further message of a JSON-RPC batch, so a batch of 100 calls
    // costs what 100 POSTs do.
    if (context.req.method === 'POST') options.limits?.admitWrite(counted);
    const body = await readBody(context.req.raw);
    if (options.limits)
      for (let message = 1; message < messageCountOf(body); message++) options.limits.admitWrite(counted);
    // A cancel names a request that another POST (another server instance) is answering.
    const caller = `${counted}\u0000${tenantId}`;
    for (const message of messagesOf(body)) inFlight.cancel(caller, message);
    const call = 'parsed' in body ? inFlight.start(caller, body.parsed) : undefined;
    const request: RequestErrors = { errors: [], answered: false };
    let response: Response;
    try {
      response = await requestErrors.run(request, () =>
        handler.fetch(call === undefined ? body.request : cancellable(body.request, call), {
          authInfo: {
            token: 'api-key',
            clientId: context.get('principal') ?? 'loopback',
            scopes: [],
            extra: { tenantId, readOnly: context.get('scopes')?.has('memory:write') === false },
          },
          ...('parsed' in body ? { parsedBody: body.parsed } : {}),
        }),
      );
    } catch (error) {
      call?.end();
      throw error;
    }
    request.answered = true;
    if (response.status >= 500) for (const error of request.errors) report(error);
    if (!isEventStream(response)) {
      call?.end();
      return response;
    }
    if (!options.limits) return call === undefined ? response : endingWith(response, () => call.end());
    return holdingStream(response, options.limits, counted, () => call?.end());
  });
  return app;
}

/** A request for the SDK, with its JSON body parsed once when it has one that parses. */
interface ReadBody {
  readonly request: Request;
  readonly parsed?: unknown;
}

/**
 * Reads a JSON POST's body once: parsed, it is handed to the SDK as is (which then reads
 * nothing); unparsable, the SDK gets the same bytes to answer its parse error. Anything else
 * goes to the SDK untouched.
 */
async function readBody(request: Request): Promise<ReadBody> {
  if (request.method !== 'POST' || !(request.headers.get('content-type') ?? '').includes('json')) return { request };
  const text = await request.text();
  const again = new Request(request, { method: 'POST', body: text });
  try {
    return { request: again, parsed: JSON.parse(text) as unknown };
  } catch {
    return { request: again };
  }
}

/** How many JSON-RPC messages a POST carries: a batch's length, else 1 (the SDK answers a body it cannot read). */
function messageCountOf(body: ReadBody): number {
  return 'parsed' in body && Array.isArray(body.parsed) ? Math.max(1, body.parsed.length) : 1;
}

function isEventStream(response: Response): boolean {
  return response.body !== null && (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
}

/** The response with its body holding one of the key's event streams until it ends or is dropped; then `ended`. */
async function holdingStream(
  response: Response,
  limits: TenantLimits,
  principal: string,
  ended: () => void,
): Promise<Response> {
  const body = response.body as ReadableStream<Uint8Array>;
  let release: () => void;
  try {
    release = limits.acquireStream(principal);
  } catch (error) {
    ended();
    await body.cancel().catch(() => undefined);
    throw error;
  }
  return endingWith(response, () => {
    release();
    ended();
  });
}

/** The response with `ended` called once its body has been read to the end, failed or been dropped. */
function endingWith(response: Response, ended: () => void): Response {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  let once = false;
  const release = (): void => {
    if (once) return;
    once = true;
    ended();
  };
  const held = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          release();
          controller.close();
        } else controller.enqueue(value);
      } catch (error) {
        release();
        controller.error(error);
      }
    },
    cancel(reason) {
      release();
      return reader.cancel(reason);
    },
  });
  return new Response(held, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/**
 * `request` with a signal that also aborts when the client cancels it: the SDK closes the
 * exchange then, which aborts the tool's signal.
 */
function cancellable(request: Request, call: CallInFlight): Request {
  return new Request(request, { signal: AbortSignal.any([request.signal, call.signal]) });
}

/** The JSON-RPC messages of a POST's body: each of a batch, or the one. */
function messagesOf(body: ReadBody): readonly unknown[] {
  if (!('parsed' in body)) return [];
  return Array.isArray(body.parsed) ? body.parsed : [body.parsed];
}

/** What the SDK reported while one request was being answered. */
interface RequestErrors {
  readonly errors: unknown[];
  answered: boolean;
}

function tenantOf(extra: Record<string, unknown> | undefined): string {
  const tenant = extra?.['tenantId'];
  return typeof tenant === 'string' ? tenant : KEYLESS_TENANT;
}
