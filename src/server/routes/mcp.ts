import { createMcpHandler } from '@modelcontextprotocol/server';
import { Hono } from 'hono';
import { createMemoryMcpServer } from '../../mcp/memory-mcp-server.js';
import type { ObservationalMemory } from '../../memory/observational-memory.js';
import type { WorkingMemory } from '../../memory/working-memory.js';
import type { RunStore } from '../../storage/run-store.js';
import type { FaultReporter } from '../../core/fault.js';
import type { ServerEnv } from '../server-env.js';

/** Dependencies of the MCP endpoint. */
export interface McpRouteOptions {
  readonly observationalMemory: ObservationalMemory;
  readonly workingMemory: WorkingMemory;
  readonly runStore: RunStore;
  /** Offer `memory_forget`. @default false */
  readonly allowForget?: boolean;
  readonly onFault?: FaultReporter;
}

/** The tenant of a request without API keys (loopback only). */
const KEYLESS_TENANT = 'default';

/**
 * `/mcp`: the MCP server over Streamable HTTP, one server instance per request. The tenant is
 * the API key's (authenticated before this route), or `default` without keys.
 */
export function mcpRoutes(options: McpRouteOptions): Hono<ServerEnv> {
  const app = new Hono<ServerEnv>();
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
        onFault: report,
      }),
    { onerror: (error) => report(error) },
  );
  app.all('/', async (context) => {
    const tenantId = context.get('tenant') ?? KEYLESS_TENANT;
    return handler.fetch(context.req.raw, {
      authInfo: { token: 'api-key', clientId: context.get('principal') ?? 'loopback', scopes: [], extra: { tenantId } },
    });
  });
  return app;
}

function tenantOf(extra: Record<string, unknown> | undefined): string {
  const tenant = extra?.['tenantId'];
  return typeof tenant === 'string' ? tenant : KEYLESS_TENANT;
}
