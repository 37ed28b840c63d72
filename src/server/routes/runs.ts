import { Hono } from 'hono';
import { z } from 'zod/v4';
import type { AgentRunner } from '../../agent/agent-runner.js';
import { TERMINAL_EVENT_TYPES } from '../../storage/event-hub.js';
import type { EventHub } from '../../storage/event-hub.js';
import { isRunListTime, isRunOpen, RUN_STATUSES } from '../../storage/run-store.js';
import type { RunRecord, RunStatus, RunStore } from '../../storage/run-store.js';
import { validateScopeId } from '../../core/scope.js';
import { httpError } from '../http-error.js';
import { DEFAULT_PAGE_LIMIT, decodeCursor, encodeCursor, pageQuery } from '../page-query.js';
import { readJsonBody } from '../request-body.js';
import { requestTenant } from '../request-tenant.js';
import { runToJson } from '../serialize.js';
import { EVENT_STREAM_CONTENT_TYPE, resumeAfter, streamRunEvents } from '../sse.js';
import type { ServerEnv } from '../server-env.js';
import { admitTenantWrite, principalOf } from '../tenant-limits.js';
import type { TenantLimits } from '../tenant-limits.js';
import type { FaultReporter } from '../../core/fault.js';

/** A run id that can name a run: no control characters (a U+0000 would fail a Postgres read), at most 256. */
const RUN_ID = /^\P{Cc}{1,256}$/u;

const runBody = z
  .object({
    prompt: z.string(),
    tenant_id: z.string().optional(),
    conversation_id: z.string().optional(),
    agent_id: z.string().optional(),
    model: z.string().max(200).optional(),
    system_prompt: z.string().max(100_000).optional(),
    max_steps: z.number().int().min(1).max(100).optional(),
  })
  .strict();

const continueBody = z.object({ prompt: z.string() }).strict();

/** Dependencies of the run routes. */
export interface RunRoutesOptions {
  readonly runner: AgentRunner;
  readonly runStore: RunStore;
  readonly hub: EventHub;
  readonly heartbeatMs?: number;
  readonly limits: TenantLimits;
  readonly onFault?: FaultReporter;
}

/** `/v1/runs`: create, read, continue, cancel, and the SSE event stream. */
export function runRoutes(options: RunRoutesOptions): Hono<ServerEnv> {
  const app = new Hono<ServerEnv>();
  const { runner, runStore, limits } = options;

  /** Starts a run counted against its principal until it ends (429 `too_many_runs` at the cap). */
  const startCounted = async (principal: string, start: () => Promise<RunRecord>): Promise<RunRecord> => {
    const release = limits.acquireRun(principal);
    let run: RunRecord;
    try {
      run = await start();
    } catch (error) {
      release();
      throw error;
    }
    runner.wait(run.runId).then(release, release);
    return run;
  };

  /** The run, only if the caller's tenant owns it: another tenant's run is 404. */
  const ownedRun = async (runId: string, tenant: string | undefined): Promise<RunRecord> => {
    const run = RUN_ID.test(runId) ? await runStore.getRun(runId) : undefined;
    if (!run || (tenant !== undefined && run.scope.tenantId !== tenant))
      throw httpError(404, 'not_found', `run ${runId.slice(0, 100)} was not found`);
    return run;
  };

  app.post('/', async (context) => {
    const body = await readJsonBody(context, runBody);
    // Validated before it is counted: a refused id must not become a key of the limiter.
    const tenantId = requestTenant(context.get('tenant'), body.tenant_id);
    admitTenantWrite(limits, context.get('principal'), tenantId);
    const run = await startCounted(principalOf(context.get('principal'), tenantId), () =>
      runner.start({
        prompt: body.prompt,
        ...definedOnly({
          tenantId,
          conversationId: body.conversation_id,
          agentId: body.agent_id,
          model: body.model,
          systemPrompt: body.system_prompt,
          maxSteps: body.max_steps,
        }),
      }),
    );
    return context.json({ run_id: run.runId, status: run.status }, 202);
  });

  app.get('/', async (context) => {
    // With API keys the tenant is the key's; without (loopback only), the query names it.
    const tenantId = requestTenant(context.get('tenant'), context.req.query('tenant_id'));
    const { limit = DEFAULT_PAGE_LIMIT, cursor } = pageQuery(context);
    const status = context.req.query('status');
    if (status !== undefined && !RUN_STATUSES.includes(status as RunStatus))
      throw httpError(
        400,
        'invalid_request',
        `status must be one of ${RUN_STATUSES.join(', ')}, got ${JSON.stringify(status.slice(0, 40))}`,
      );
    const conversationId = context.req.query('conversation_id');
    const agentId = context.req.query('agent_id');
    const runs = await runStore.listRuns({
      tenantId,
      limit: limit + 1,
      ...(conversationId === undefined ? {} : { conversationId: validateScopeId('conversation_id', conversationId) }),
      ...(agentId === undefined ? {} : { agentId: validateScopeId('agent_id', agentId) }),
      ...(status === undefined ? {} : { status: status as RunStatus }),
      ...(cursor === undefined ? {} : { before: runCursor(cursor) }),
    });
    const items = runs.slice(0, limit);
    const last = items.at(-1);
    const nextCursor = runs.length > limit && last ? encodeCursor({ t: last.createdAt, r: last.runId }) : null;
    return context.json({ items: items.map(runToJson), next_cursor: nextCursor });
  });

  app.get('/:id', async (context) =>
    context.json(runToJson(await ownedRun(context.req.param('id'), context.get('tenant')))),
  );

  app.post('/:id/continue', async (context) => {
    const previous = await ownedRun(context.req.param('id'), context.get('tenant'));
    admitTenantWrite(limits, context.get('principal'), previous.scope.tenantId);
    const body = await readJsonBody(context, continueBody);
    const run = await startCounted(principalOf(context.get('principal'), previous.scope.tenantId), () =>
      runner.continue(previous.runId, body.prompt),
    );
    return context.json({ run_id: run.runId, status: run.status }, 202);
  });

  app.post('/:id/cancel', async (context) => {
    const run = await ownedRun(context.req.param('id'), context.get('tenant'));
    admitTenantWrite(limits, context.get('principal'), run.scope.tenantId);
    if (!runner.isLocal(run.runId) && (run.status === 'queued' || run.status === 'running')) {
      throw httpError(
        409,
        'run_not_local',
        `run ${run.runId} is executing in another harness process; send the cancel to the process that started it`,
      );
    }
    const after = await runner.cancel(run.runId);
    return context.json({ run_id: after.runId, status: after.status }, 202);
  });

  app.get('/:id/events', async (context) => {
    const run = await ownedRun(context.req.param('id'), context.get('tenant'));
    // HEAD is routed here too, but its body is dropped unread: a stream would never end
    // and would keep its slot, so HEAD gets the headers alone.
    if (context.req.method === 'HEAD') return context.body(null, 200, { 'Content-Type': EVENT_STREAM_CONTENT_TYPE });
    // A browser's EventSource reconnects after every close, also after the run's last event:
    // 204 is what tells it to stop, where an empty stream made it come back every 3 s.
    if (await resumesAfterEnd(runStore, run, context.req.header('Last-Event-ID'))) return context.body(null, 204);
    const release = limits.acquireStream(principalOf(context.get('principal'), run.scope.tenantId));
    return streamRunEvents(context, {
      runId: run.runId,
      runStore,
      hub: options.hub,
      onClose: release,
      ...(options.onFault ? { onFault: options.onFault } : {}),
      ...(options.heartbeatMs ? { heartbeatMs: options.heartbeatMs } : {}),
    });
  });

  return app;
}

/** Whether `lastEventId` names the terminal event of `run`, which has ended. */
async function resumesAfterEnd(runStore: RunStore, run: RunRecord, lastEventId: string | undefined): Promise<boolean> {
  const after = resumeAfter(lastEventId, run.runId);
  if (after < 0 || isRunOpen(run.status)) return false;
  const [named] = await runStore.listEvents(run.runId, after - 1);
  return named?.seq === after && TERMINAL_EVENT_TYPES.has(named.type);
}

function definedOnly<T extends Record<string, unknown>>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, item]) => item !== undefined)) as Partial<T>;
}

/** The position a run-list cursor holds; `400` naming `cursor` for one this API did not make. */
function runCursor(cursor: string): { createdAt: string; runId: string } {
  const value = decodeCursor(cursor);
  const createdAt = value['t'];
  const runId = value['r'];
  // Only what a listing wrote: a run time, and a run id's characters.
  if (!isRunListTime(createdAt) || typeof runId !== 'string' || !/^[\w:.@-]{1,200}$/.test(runId))
    throw httpError(400, 'invalid_request', 'cursor is not one this API returned for this list');
  return { createdAt, runId };
}
