/**
 * The harness HTTP API on hono: runs, their SSE event streams, and memory per scope.
 * @module
 */
import { timingSafeEqual } from 'node:crypto';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { AgentRunner } from '../agent/agent-runner.js';
import type { EventHub } from '../agent/event-hub.js';
import type { RunStore } from '../storage/run-store.js';
import type { ObservationalMemory } from '../memory/observational-memory.js';
import type { WorkingMemory } from '../memory/working-memory.js';
import { errorResponse, httpError, jsonError } from './http-error.js';
import { memoryRoutes } from './routes/memory.js';
import { runRoutes } from './routes/runs.js';
import type { ServerEnv } from './server-env.js';

/** Largest request body accepted (1 MiB). */
export const MAX_BODY_BYTES: number = 1024 * 1024;

/** Options of {@link createApp}. */
export interface AppOptions {
  readonly runner: AgentRunner;
  readonly runStore: RunStore;
  readonly hub: EventHub;
  readonly observationalMemory: ObservationalMemory;
  readonly workingMemory: WorkingMemory;
  /** API keys and their tenants. Empty: no auth, and only loopback `Host` headers are served. */
  readonly apiKeys?: ReadonlyArray<{ readonly key: string; readonly tenantId: string }>;
  /** SSE heartbeat interval. @default 15000 */
  readonly heartbeatMs?: number;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/**
 * Builds the HTTP app. Errors become `{error: {code, message}}` in one place.
 * @example
 * const app = createApp({ runner, runStore, hub, observationalMemory, workingMemory });
 * const response = await app.request('/healthz');
 */
export function createApp(options: AppOptions): Hono<ServerEnv> {
  const app = new Hono<ServerEnv>();
  const keys = (options.apiKeys ?? []).map((entry) => ({ key: Buffer.from(entry.key), tenantId: entry.tenantId }));

  app.onError((error) => errorResponse(error));
  app.notFound((context) => jsonError(404, 'not_found', `no route for ${context.req.method} ${new URL(context.req.url).pathname}`));

  app.use('*', async function guardHost(context, next) {
    // Without API keys the server trusts loopback callers only; a foreign Host header
    // means DNS rebinding from a browser, so refuse it.
    if (keys.length === 0) {
      const host = (context.req.header('host') ?? 'localhost').replace(/:\d+$/, '').toLowerCase();
      if (!LOOPBACK_HOSTS.has(host)) throw httpError(403, 'forbidden_host', `host ${host.slice(0, 100)} is not served without API keys`);
    }
    await next();
  });

  app.use(
    '*',
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: () => {
        const response = jsonError(413, 'body_too_large', `request body is larger than ${MAX_BODY_BYTES} bytes`);
        // The rest of the body is never read, so the connection cannot be reused.
        response.headers.set('connection', 'close');
        return response;
      },
    }),
  );

  app.get('/healthz', (context) => context.json({ status: 'ok' }));

  app.use('/v1/*', async function authenticate(context, next) {
    if (keys.length === 0) {
      context.set('tenant', undefined);
      return next();
    }
    const header = context.req.header('authorization') ?? '';
    const match = /^Bearer\s+(.+)$/i.exec(header.trim());
    if (!match?.[1]) throw httpError(401, 'unauthorized', 'send Authorization: Bearer <api key>');
    const presented = Buffer.from(match[1]);
    const found = keys.find((entry) => entry.key.length === presented.length && timingSafeEqual(entry.key, presented));
    if (!found) throw httpError(401, 'unauthorized', 'the API key is not valid');
    context.set('tenant', found.tenantId);
    return next();
  });

  app.route('/v1/runs', runRoutes({ runner: options.runner, runStore: options.runStore, hub: options.hub, ...(options.heartbeatMs ? { heartbeatMs: options.heartbeatMs } : {}) }));
  app.route('/v1/memory', memoryRoutes({ observationalMemory: options.observationalMemory, workingMemory: options.workingMemory, runStore: options.runStore }));
  return app;
}
