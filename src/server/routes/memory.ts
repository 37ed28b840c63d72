import { Hono } from 'hono';
import type { Context } from 'hono';
import { HarnessMemoryError } from '../../core/errors.js';
import { z } from 'zod/v4';
import type { RunStore } from '../../storage/run-store.js';
import {
  observationToJson,
  reflectionLinksToJson,
  statusToJson,
  structuredReflectionToJson,
} from '../../core/memory-status.js';
import { forgetConversation } from '../../agent/forget-conversation.js';
import { resolveScope, validateScopeId } from '../../core/scope.js';
import type { Scope } from '../../core/scope.js';
import { buildWorkingMemorySnippet } from '../../core/working-memory.js';
import type { ObservationalMemory } from '../../memory/observational-memory.js';
import type { WorkingMemory } from '../../memory/working-memory.js';
import { httpError } from '../http-error.js';
import { optionalQuery, pageQuery } from '../page-query.js';
import { readJsonBody } from '../request-body.js';
import { requestTenant } from '../request-tenant.js';
import {
  entryToJson,
  listedScopeToJson,
  observationViewToJson,
  operationToJson,
  progressToJson,
} from '../serialize.js';
import type { ServerEnv } from '../server-env.js';
import { admitTenantWrite } from '../tenant-limits.js';
import type { TenantLimits } from '../tenant-limits.js';

/** The newest observations the scope's detail shows; the rest are paged from `…/observations`. */
const MAX_DETAIL_OBSERVATIONS = 200;

const positive = z.number().int().positive();
const enableBody = z
  .object({
    config: z
      .object({
        observe_min_tokens: positive.optional(),
        snippet_max_tokens: positive.optional(),
        reflect_threshold_tokens: positive.optional(),
      })
      .strict()
      .optional(),
  })
  .strict();
const emptyBody = z.object({}).strict();
const putBody = z.object({ value: z.unknown(), ttl_seconds: z.number().optional() }).strict();
// The importance's range, and content left out without an importance, are the service's to
// check, so HTTP answers observation_invalid as the library does.
const correctionBody = z
  .object({ content: z.string().optional(), importance: z.number().nullable().optional() })
  .strict();

function seqOf(text: string): number {
  if (!/^\d{1,15}$/.test(text))
    throw new HarnessMemoryError({
      code: 'OBSERVATION_INVALID',
      component: 'memory',
      message: `seq must be a positive integer, got ${JSON.stringify(text.slice(0, 20))}.`,
      data: { field: 'seq' },
    });
  return Number(text);
}

/** Dependencies of the memory routes. */
export interface MemoryRoutesOptions {
  readonly observationalMemory: ObservationalMemory;
  readonly workingMemory: WorkingMemory;
  readonly runStore: RunStore;
  readonly limits: TenantLimits;
}

type PathContext = {
  req: { param: (name: string) => string };
  get: ((key: 'tenant') => string | undefined) & ((key: 'principal') => string | undefined);
};

/** The scope named by the path; another tenant's memory is `404`, as if it did not exist. */
function scopeOf(context: PathContext): Scope {
  // Checked as given: a path names a scope exactly, so a blank segment is refused rather than
  // trimmed to `default` (which a DELETE would forget).
  const scope = resolveScope({
    tenantId: validateScopeId('tenant_id', context.req.param('tenant')),
    conversationId: validateScopeId('conversation_id', context.req.param('conversation')),
    agentId: validateScopeId('agent_id', context.req.param('agent')),
  });
  const tenant = context.get('tenant');
  if (tenant !== undefined && scope.tenantId !== tenant) throw httpError(404, 'not_found', 'no such memory scope');
  return scope;
}

/** The scope of a write, counted against its tenant's write rate. */
function writeScopeOf(context: PathContext, limits: TenantLimits): Scope {
  const scope = scopeOf(context);
  admitTenantWrite(limits, context.get('principal'), scope.tenantId);
  return scope;
}

const base = '/:tenant/:conversation/:agent';

/** The longest operation id a retry names (the ids memory makes are far shorter). */
const MAX_OPERATION_ID_LENGTH = 200;

/** `/v1/memory/{tenant}/{conversation}/{agent}`: list, inspect, forget, control and correct both memories. */
export function memoryRoutes(options: MemoryRoutesOptions): Hono<ServerEnv> {
  const app = new Hono<ServerEnv>();
  scopeRoutes(app, options);
  observationRoutes(app, options);
  workingMemoryRoutes(app, options);
  return app;
}

/** The tenant's scopes, one scope's inspection and forget, and observational-memory controls. */
function scopeRoutes(app: Hono<ServerEnv>, options: MemoryRoutesOptions): void {
  const { observationalMemory: memory, workingMemory } = options;
  app.get('/', async (context) => {
    // With API keys the tenant is the key's; without (loopback only), the query names it.
    const tenant = requestTenant(context.get('tenant'), context.req.query('tenant_id'));
    const enabled = context.req.query('enabled');
    if (enabled !== undefined && enabled !== 'true' && enabled !== 'false')
      throw httpError(400, 'invalid_request', `enabled must be true or false, got ${JSON.stringify(enabled)}`);
    const page = await memory.listScopes(tenant, {
      ...pageQuery(context),
      ...optionalQuery(context, 'q', 'query'),
      ...(enabled === undefined ? {} : { enabled: enabled === 'true' }),
    });
    return context.json({ items: page.items.map(listedScopeToJson), next_cursor: page.nextCursor });
  });

  app.get(base, async (context) => {
    const scope = scopeOf(context);
    // The scope was resolved above: the services take it as it is, and each store is read once.
    const [inspection, entries] = await Promise.all([
      memory.inspect(scope, { operations: 'open' }),
      workingMemory.entries(scope),
    ]);
    const structured = inspection.reflection?.structured;
    return context.json({
      progress: progressToJson(inspection.progress),
      status: statusToJson(inspection.status),
      // Bounded: the inspector polls this route, and a scope can hold any number of them;
      // `…/observations` pages through all of them.
      observations: inspection.observations.slice(-MAX_DETAIL_OBSERVATIONS).map(observationToJson),
      observations_truncated: inspection.observations.length > MAX_DETAIL_OBSERVATIONS,
      reflection: inspection.reflection?.raw ?? '',
      structured_reflection: structured ? structuredReflectionToJson(structured) : null,
      reflection_links: reflectionLinksToJson(inspection.links),
      dead_operations: inspection.operations.filter((operation) => operation.status === 'dead').map(operationToJson),
      working_memory: entries.map(entryToJson),
      snippets: { working_memory: buildWorkingMemorySnippet(entries), observational_memory: inspection.snippet },
    });
  });

  app.delete(base, async (context) => {
    const scope = writeScopeOf(context, options.limits);
    await forgetConversation({ observationalMemory: memory, runStore: options.runStore }, scope);
    return context.json({
      forgotten: true,
      scope: { tenant_id: scope.tenantId, conversation_id: scope.conversationId, agent_id: scope.agentId },
    });
  });

  app.post(`${base}/observational/enable`, async (context) => {
    const scope = writeScopeOf(context, options.limits);
    const body = await readJsonBody(context, enableBody);
    const config = body.config;
    const status = await memory.setEnabled(
      scope,
      true,
      config === undefined
        ? undefined
        : Object.fromEntries(
            Object.entries({
              observeMinTokens: config.observe_min_tokens,
              snippetMaxTokens: config.snippet_max_tokens,
              reflectThresholdTokens: config.reflect_threshold_tokens,
            }).filter(([, value]) => value !== undefined),
          ),
    );
    return context.json({ status: statusToJson(status) });
  });

  app.post(`${base}/observational/disable`, async (context) => {
    const scope = writeScopeOf(context, options.limits);
    await readJsonBody(context, emptyBody);
    return context.json({ status: statusToJson(await memory.setEnabled(scope, false)) });
  });

  app.post(`${base}/observational/reflect`, async (context) => {
    const scope = writeScopeOf(context, options.limits);
    await readJsonBody(context, emptyBody);
    // A client that goes away stops the reflector's call; the reflection stays queued.
    const result = await memory.reflectNow(scope, { signal: context.req.raw.signal });
    return context.json({
      reflected: result.reflected,
      queued: result.queued,
      status: statusToJson(result.status),
    });
  });

  app.post(`${base}/operations/:operationId/retry`, async (context) => {
    const scope = writeScopeOf(context, options.limits);
    await readJsonBody(context, emptyBody);
    const operationId = context.req.param('operationId');
    if (operationId.length > MAX_OPERATION_ID_LENGTH)
      throw httpError(400, 'invalid_request', `operation id is longer than ${MAX_OPERATION_ID_LENGTH} characters`);
    const operation = await memory.retryOperation(scope, operationId);
    return context.json(
      { operation: operationToJson(operation), status: statusToJson(await memory.status(scope)) },
      202,
    );
  });

  app.get(`${base}/observational/export`, async (context) => {
    const scope = scopeOf(context);
    const result = await memory.export(scope, context.req.query('format') ?? 'json');
    const type = result.format === 'json' ? 'application/json; charset=utf-8' : 'text/markdown; charset=utf-8';
    return context.body(result.content, 200, { 'content-type': type });
  });
}

/** A scope's observations (paged, corrected, deleted) and its operation log. */
function observationRoutes(app: Hono<ServerEnv>, options: MemoryRoutesOptions): void {
  const { observationalMemory: memory } = options;
  app.get(`${base}/observations`, async (context) => {
    const scope = scopeOf(context);
    const page = await memory.observationPage(scope, {
      ...pageQuery(context),
      ...optionalQuery(context, 'q', 'query'),
    });
    return context.json({ items: page.items.map(observationViewToJson), next_cursor: page.nextCursor });
  });

  app.patch(`${base}/observations/:seq`, async (context) => {
    const scope = writeScopeOf(context, options.limits);
    const body = await readJsonBody(context, correctionBody);
    const result = await memory.correctObservation(scope, seqOf(context.req.param('seq')), {
      ...(body.content === undefined ? {} : { content: body.content }),
      ...(body.importance === undefined ? {} : { importance: body.importance }),
    });
    return context.json({
      observation: observationViewToJson(result.observation),
      status: statusToJson(result.status),
    });
  });

  app.delete(`${base}/observations/:seq`, async (context) => {
    const scope = writeScopeOf(context, options.limits);
    const result = await memory.deleteObservation(scope, seqOf(context.req.param('seq')));
    return context.json({ deleted: true, seq: result.seq, status: statusToJson(result.status) });
  });

  app.get(`${base}/operations`, async (context) => {
    const scope = scopeOf(context);
    const page = await memory.operationPage(scope, {
      ...pageQuery(context),
      ...optionalQuery(context, 'status', 'status'),
    });
    return context.json({ items: page.items.map(operationToJson), next_cursor: page.nextCursor });
  });
}

/** A scope's working-memory entries. */
function workingMemoryRoutes(app: Hono<ServerEnv>, options: MemoryRoutesOptions): void {
  const { workingMemory } = options;
  app.get(`${base}/working`, async (context) => {
    const scope = scopeOf(context);
    return context.json({ entries: (await workingMemory.entries(scope)).map(entryToJson) });
  });

  app.put(`${base}/working/:key`, async (context) => {
    const scope = writeScopeOf(context, options.limits);
    const body = await readJsonBody(context, putBody);
    const result = await workingMemory.set(
      scope,
      keyOf(context),
      body.value,
      body.ttl_seconds === undefined ? undefined : { ttlSeconds: body.ttl_seconds },
    );
    return context.json({ ok: true, key: result.key, entry: entryToJson(result.entry) });
  });

  app.delete(`${base}/working/:key`, async (context) => {
    const scope = writeScopeOf(context, options.limits);
    return context.json(await workingMemory.delete(scope, keyOf(context)));
  });
}

/**
 * The working-memory key the path names. The router keeps a segment it cannot decode as it
 * stands, so `%FF` would be the key "%FF", the same entry as `%25FF`: refused instead.
 */
function keyOf(context: Context<ServerEnv>): string {
  const { pathname } = new URL(context.req.url);
  const raw = pathname.slice(pathname.lastIndexOf('/working/') + '/working/'.length);
  try {
    decodeURIComponent(raw);
  } catch {
    throw httpError(400, 'working_memory_invalid', 'the key in the path is not percent-encoded UTF-8');
  }
  return context.req.param('key') ?? '';
}
