/**
 * The harness HTTP API on hono: runs, their SSE event streams, memory per scope, and the
 * memory inspector page at `/inspector`.
 * @module
 */
import { LOOPBACK_HOSTS } from '../core/loopback-hosts.js';
import { timingSafeEqual } from 'node:crypto';
import { requireObject, requireOptions } from '../core/require-option.js';
import { Hono } from 'hono';
import type { MiddlewareHandler } from 'hono';
import type { HTTPException } from 'hono/http-exception';
import type { ApiKeyScope } from '../core/api-key.js';
import type { AgentRunner } from '../agent/agent-runner.js';
import type { EventHub } from '../storage/event-hub.js';
import type { RunStore } from '../storage/run-store.js';
import type { ObservationalMemory } from '../memory/observational-memory.js';
import type { WorkingMemory } from '../memory/working-memory.js';
import { IGNORE_FAULTS } from '../core/fault.js';
import { limitBody } from './body-limit.js';
import { checkApiKeys } from './check-api-keys.js';
import type { FaultLog } from './fault-log.js';
import { errorResponse, httpError, jsonError } from './http-error.js';
import { inspectorRoutes } from './routes/inspector.js';
import { mcpRoutes } from './routes/mcp.js';
import { memoryRoutes } from './routes/memory.js';
import { runRoutes } from './routes/runs.js';
import type { ServerEnv } from './server-env.js';
import { createTenantLimits } from './tenant-limits.js';
import type { TenantLimits } from './tenant-limits.js';

/** Largest request body accepted (1 MiB). */
export const MAX_BODY_BYTES: number = 1024 * 1024;

/** Options of {@link createApp}. */
export interface AppOptions {
  readonly runner: AgentRunner;
  readonly runStore: RunStore;
  readonly hub: EventHub;
  readonly observationalMemory: ObservationalMemory;
  readonly workingMemory: WorkingMemory;
  /**
   * API keys and their tenants. Empty: no auth, and only loopback `Host` headers are served.
   * Keys are visible ASCII (what a header carries) without `:`, each given once; tenants are scope ids.
   */
  readonly apiKeys?: ReadonlyArray<{
    readonly key: string;
    readonly tenantId: string;
    /**
     * What the key may do (`runs:read`: a run's state, events and listing; `runs:write`:
     * start, continue, cancel; `memory:read`: memory's GET routes and the read-only MCP tools;
     * `memory:write`: the rest). Absent, everything. A request outside them is
     * `403 insufficient_scope`.
     */
    readonly scopes?: readonly ApiKeyScope[];
  }>;
  /** SSE heartbeat interval. @default 15000 */
  readonly heartbeatMs?: number;
  /** Per-tenant limits (runs, SSE streams, writes per second). @default createTenantLimits() */
  readonly limits?: TenantLimits;
  /** Where faults are logged and counted; `/healthz` shows the count. @default none (not counted) */
  readonly faults?: FaultLog;
  /** Offer the `memory_forget` tool at `/mcp`. @default false */
  readonly mcpAllowForget?: boolean;
  /**
   * What is wrong with the server's storage, if anything: `/healthz` then answers 503 with it.
   * `/healthz` needs no key, so the text names no path; the fault log has the details.
   */
  readonly storageProblem?: () => string | undefined;
  /** A warning about the server's storage that does not stop it: `/healthz` answers 200 with it (no path either). */
  readonly storageWarning?: () => string | undefined;
}

const READ_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The `host[:port]` of an Origin header, as a Host header writes it; '' when it is not a URL. */
function originHost(origin: string): string {
  try {
    return new URL(origin).host.toLowerCase();
  } catch {
    return '';
  }
}

/**
 * Builds the HTTP app. Errors become `{error: {code, message}}` in one place.
 * @example
 * const app = createApp({ runner, runStore, hub, observationalMemory, workingMemory });
 * const response = await app.request('/healthz');
 */
export function createApp(options: AppOptions): Hono<ServerEnv> {
  requireOptions('createApp', options, 'Pass { runner, runStore, hub, observationalMemory, workingMemory }.');
  checkAppOptions(options);
  const app = new Hono<ServerEnv>();
  const keys = checkApiKeys('createApp', options.apiKeys).map((entry) => ({
    key: Buffer.from(entry.key),
    tenantId: entry.tenantId,
    scopes: entry.scopes === undefined ? undefined : new Set(entry.scopes),
  }));

  const limits = options.limits ?? createTenantLimits();
  const reportFault = options.faults?.report ?? IGNORE_FAULTS;

  app.onError(async (error, context) => {
    const response = errorResponse(error);
    // A refused request is answered after a pause: a client that ignores Retry-After is
    // slowed down at no CPU cost, instead of taking the event loop from other tenants.
    if (response.status === 429) await limits.pauseBeforeRefusal();
    // A 500 is a fault: the details go to the log only.
    if (response.status === 500)
      reportFault({
        component: 'http',
        message: `${context.req.method} ${new URL(context.req.url).pathname} failed`,
        error,
      });
    return response;
  });
  app.notFound((context) =>
    jsonError(404, 'not_found', `no route for ${context.req.method} ${new URL(context.req.url).pathname}`),
  );

  app.use('*', async function guardHost(context, next) {
    // Without API keys the server trusts loopback callers only; a foreign Host header
    // means DNS rebinding from a browser, so refuse it. Served beyond loopback on purpose
    // (`insecure`), every name the server is reached by is its own.
    if (keys.length === 0) {
      const hostHeader = (context.req.header('host') ?? 'localhost').toLowerCase();
      const host = hostHeader.replace(/:\d+$/, '');
      if (!LOOPBACK_HOSTS.has(host) && context.env?.openToAnyHost !== true)
        throw httpError(403, 'forbidden_host', `host ${host.slice(0, 100)} is not served without API keys`);
      // A browser names the page that sent a request in Origin, and a "simple" cross-site
      // POST needs no preflight: a web page must not start runs or change memory here. Only
      // this server's own pages (the inspector) may: a page of another local server, on
      // another port, is another origin.
      const origin = context.req.header('origin');
      if (origin !== undefined && originHost(origin) !== hostHeader)
        throw httpError(
          403,
          'forbidden_origin',
          `requests from the page ${origin.slice(0, 100)} are not served without API keys`,
        );
    }
    await next();
  });

  app.get('/healthz', (context) => {
    // The problem first: finding it logs a fault, which the count then includes.
    const problem = options.storageProblem?.();
    const warning = options.storageWarning?.();
    const faults = options.faults?.count() ?? 0;
    const warned = warning === undefined ? {} : { warning };
    return problem === undefined
      ? context.json({ status: 'ok', faults, ...warned })
      : context.json({ status: 'failing', faults, problem, ...warned }, 503);
  });
  // The inspector's static files need no key; the page sends one with its data calls.
  app.route('/inspector', inspectorRoutes());

  const authenticate = authenticateWith(keys);
  app.use('/v1/*', authenticate);
  app.use('/mcp', authenticate);
  app.use('/v1/runs/*', requireScope('runs'));
  app.use('/v1/runs', requireScope('runs'));
  app.use('/v1/memory/*', requireScope('memory'));
  app.use('/v1/memory', requireScope('memory'));
  // MCP tools both read and write: the endpoint needs memory:read, and the writing tools
  // refuse a key without memory:write.
  app.use('/mcp', async function requireMcpScope(context, next) {
    const scopes = context.get('scopes');
    if (scopes !== undefined && !scopes.has('memory:read')) throw missingScope('memory:read');
    return next();
  });

  app.use('/v1/*', async function limitRequests(context, next) {
    // With API keys, writes are counted here, before the body is read, and reads too (a
    // listing or an export of a large scope costs in proportion to it); without keys, on a
    // loopback-only server, each route counts writes against the tenant it names.
    const principal = context.get('principal');
    if (principal !== undefined) {
      if (READ_METHODS.has(context.req.method)) limits.admitRead?.(principal);
      else limits.admitWrite(principal);
    }
    return next();
  });

  // After the key and the write rate: a caller without a key, or over its rate, is answered
  // before the server reads (and buffers) what it sends. Only the routes that take a body
  // read one: a POST to any other path is answered (404) without buffering what it sends.
  const bodyLimit = limitBody({ maxBytes: MAX_BODY_BYTES });
  app.use('/v1/*', bodyLimit);
  app.use('/mcp', bodyLimit);

  app.route(
    '/v1/runs',
    runRoutes({
      runner: options.runner,
      runStore: options.runStore,
      hub: options.hub,
      limits,
      onFault: reportFault,
      ...(options.heartbeatMs ? { heartbeatMs: options.heartbeatMs } : {}),
    }),
  );
  app.route(
    '/mcp',
    mcpRoutes({
      observationalMemory: options.observationalMemory,
      workingMemory: options.workingMemory,
      runStore: options.runStore,
      allowForget: options.mcpAllowForget === true,
      onFault: reportFault,
      limits,
    }),
  );
  app.route(
    '/v1/memory',
    memoryRoutes({
      observationalMemory: options.observationalMemory,
      workingMemory: options.workingMemory,
      runStore: options.runStore,
      limits,
    }),
  );
  return app;
}

/** The scope a request of `family` needs: its `read` for GET and HEAD, its `write` otherwise. */
function requireScope(family: 'runs' | 'memory'): MiddlewareHandler<ServerEnv> {
  return async function checkScope(context, next) {
    const scopes = context.get('scopes');
    const needed: ApiKeyScope = READ_METHODS.has(context.req.method) ? `${family}:read` : `${family}:write`;
    if (scopes !== undefined && !scopes.has(needed)) throw missingScope(needed);
    return next();
  };
}

function missingScope(needed: ApiKeyScope): HTTPException {
  return httpError(403, 'insufficient_scope', `this API key does not have the ${needed} scope`);
}

/** The bearer-key check of `/v1` and `/mcp`: the key's tenant and principal, or `401`; no keys, no check. */
function authenticateWith(
  keys: ReadonlyArray<{ key: Buffer; tenantId: string; scopes: ReadonlySet<ApiKeyScope> | undefined }>,
): MiddlewareHandler<ServerEnv> {
  return async function authenticate(context, next) {
    if (keys.length === 0) {
      context.set('tenant', undefined);
      context.set('scopes', undefined);
      return next();
    }
    const header = context.req.header('authorization') ?? '';
    const match = /^Bearer\s+(.+)$/i.exec(header.trim());
    if (!match?.[1]) throw httpError(401, 'unauthorized', 'send Authorization: Bearer <api key>');
    const presented = Buffer.from(match[1]);
    const index = keys.findIndex(
      (entry) => entry.key.length === presented.length && timingSafeEqual(entry.key, presented),
    );
    const found = keys[index];
    if (!found) throw httpError(401, 'unauthorized', 'the API key is not valid');
    context.set('tenant', found.tenantId);
    context.set('principal', `key:${index}`);
    context.set('scopes', found.scopes);
    return next();
  };
}

/** The required options of {@link createApp}, each with the methods it must have. */
function checkAppOptions(options: AppOptions): void {
  requireObject(
    'createApp',
    'runner',
    options.runner,
    ['start', 'wait', 'cancel'],
    'Pass the runner from createAgentRunner.',
  );
  requireObject(
    'createApp',
    'runStore',
    options.runStore,
    ['getRun', 'listEvents'],
    'Pass the RunStore the runner uses.',
  );
  requireObject(
    'createApp',
    'hub',
    options.hub,
    ['publish', 'subscribe'],
    'Pass the EventHub the runner publishes to (runner.hub).',
  );
  requireObject(
    'createApp',
    'observationalMemory',
    options.observationalMemory,
    ['inspect', 'status'],
    'Pass the service from createObservationalMemory.',
  );
  requireObject(
    'createApp',
    'workingMemory',
    options.workingMemory,
    ['entries', 'snippet'],
    'Pass the service from createWorkingMemory.',
  );
}
