import { HarnessMemoryError } from './errors.js';

/** The three ids that key every memory. Memory never crosses from one scope to another. */
export interface Scope {
  readonly tenantId: string;
  readonly conversationId: string;
  readonly agentId: string;
}

/** Where scope ids come from before defaults are applied (a run request, tool metadata, an API call). */
export interface ScopeInput {
  tenantId?: string | null | undefined;
  conversationId?: string | null | undefined;
  agentId?: string | null | undefined;
  /** The run id; the conversation falls back to it. */
  runId?: string | null | undefined;
}

/** Fallback for a missing tenant or agent id. */
export const DEFAULT_SCOPE_ID = 'default';
/** Longest id accepted for a tenant, conversation, agent or run. */
export const MAX_SCOPE_ID_LENGTH = 128;

const SCOPE_ID_PATTERN = /^[A-Za-z0-9._:@-]{1,128}$/;

// Scopes this module validated (frozen, so they cannot have changed since): passing one on
// resolves it once, at the door, however many services it goes through.
const RESOLVED = new WeakSet<Scope>();

/** True for a scope returned by {@link resolveScope} or {@link assertScope}: already valid. */
export function isResolvedScope(value: unknown): value is Scope {
  return typeof value === 'object' && value !== null && RESOLVED.has(value as Scope);
}

function resolved(scope: Scope): Scope {
  const frozen = Object.freeze(scope);
  RESOLVED.add(frozen);
  return frozen;
}

/** Whether `value` is a valid scope id, as {@link validateScopeId} checks it. */
export function isScopeId(value: string): boolean {
  return SCOPE_ID_PATTERN.test(value) && value !== '.' && value !== '..';
}

/**
 * Checks one id: 1 to 128 characters of letters, digits and `. _ : @ -`, and not `.` or `..`.
 * Throws `SCOPE_INVALID` naming the field otherwise.
 */
export function validateScopeId(field: string, value: unknown): string {
  if (typeof value !== 'string') {
    throw scopeError(field, value, `${field} must be a string`);
  }
  if (value.length === 0) throw scopeError(field, value, `${field} must not be empty`);
  if (value.length > MAX_SCOPE_ID_LENGTH) {
    throw scopeError(
      field,
      value,
      `${field} is ${value.length} characters long; at most ${MAX_SCOPE_ID_LENGTH} are allowed`,
    );
  }
  if (!SCOPE_ID_PATTERN.test(value)) {
    throw scopeError(field, value, `${field} may contain only letters, digits and . _ : @ -`);
  }
  if (value === '.' || value === '..') throw scopeError(field, value, `${field} must not be "." or ".."`);
  return value;
}

/**
 * Applies the spec's fallbacks and validates: tenant and agent default to `default`, the
 * conversation to the run id (`runId`, else `input.runId`). With neither a conversation id
 * nor a run id it throws: there is no shared catch-all conversation. A scope this function
 * already returned comes back as it is (only a given run id is checked), so a scope
 * resolved at the door is validated once.
 */
export function resolveScope(input: ScopeInput, runId?: string | null): Scope {
  const run = blankToUndefined(runId ?? input.runId);
  if (isResolvedScope(input)) {
    if (run !== undefined) validateScopeId('run_id', run);
    return input;
  }
  return resolveFresh(input, run);
}

function resolveFresh(input: ScopeInput, runId: string | undefined): Scope {
  const tenantId = blankToUndefined(input.tenantId) ?? DEFAULT_SCOPE_ID;
  const agentId = blankToUndefined(input.agentId) ?? DEFAULT_SCOPE_ID;
  const conversation = blankToUndefined(input.conversationId);
  if (conversation === undefined && runId === undefined) {
    throw scopeError(
      'conversation_id',
      undefined,
      'conversation_id is required when there is no run id to fall back to',
    );
  }
  if (runId !== undefined) validateScopeId('run_id', runId);
  return resolved({
    tenantId: validateScopeId('tenant_id', tenantId),
    conversationId: validateScopeId('conversation_id', conversation ?? runId),
    agentId: validateScopeId('agent_id', agentId),
  });
}

/** Validates a complete scope given by a caller (every field required). */
export function assertScope(scope: unknown): Scope {
  if (isResolvedScope(scope)) return scope;
  if (typeof scope !== 'object' || scope === null) {
    throw scopeError('scope', scope, 'scope must be an object with tenantId, conversationId and agentId');
  }
  const candidate = scope as Record<string, unknown>;
  return resolved({
    tenantId: validateScopeId('tenant_id', candidate['tenantId']),
    conversationId: validateScopeId('conversation_id', candidate['conversationId']),
    agentId: validateScopeId('agent_id', candidate['agentId']),
  });
}

/**
 * The storage key of a scope. Each id is length-prefixed, so no two different scopes can
 * share a key however their ids are split.
 */
export function memoryIdOf(scope: Scope): string {
  const part = (id: string): string => `${id.length}:${id}`;
  return `${part(scope.tenantId)}/${part(scope.conversationId)}/${part(scope.agentId)}`;
}

/**
 * The scope a storage key names ({@link memoryIdOf} read backwards), or undefined for a key
 * that is not one, or whose ids would not pass {@link assertScope}.
 */
export function scopeOfMemoryId(memoryId: string): Scope | undefined {
  const ids: string[] = [];
  let at = 0;
  for (let part = 0; part < 3; part++) {
    const colon = memoryId.indexOf(':', at);
    const digits = memoryId.slice(at, colon);
    if (colon < 0 || !/^[1-9]\d{0,5}$/.test(digits)) return undefined;
    const end = colon + 1 + Number(digits);
    if (end > memoryId.length) return undefined;
    ids.push(memoryId.slice(colon + 1, end));
    if (memoryId.charAt(end) !== (part < 2 ? '/' : '')) return undefined;
    at = end + 1;
  }
  if (at <= memoryId.length) return undefined;
  const [tenantId, conversationId, agentId] = ids as [string, string, string];
  try {
    return assertScope({ tenantId, conversationId, agentId });
  } catch {
    return undefined;
  }
}

function blankToUndefined(value: string | null | undefined): string | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = String(value).trim();
  return trimmed === '' ? undefined : trimmed;
}

function scopeError(field: string, value: unknown, message: string): HarnessMemoryError {
  return new HarnessMemoryError({
    code: 'SCOPE_INVALID',
    component: 'scope',
    message: `${message}.`,
    data: { field, value: typeof value === 'string' ? value.slice(0, 200) : undefined },
  });
}
