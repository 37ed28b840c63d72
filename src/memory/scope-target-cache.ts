/**
 * Resolved scopes and their memory ids, remembered by the ids a caller passed, so a service
 * called again and again for one conversation validates its ids once rather than per call.
 * @module
 */
import { memoryIdOf, resolveScope } from '../core/scope.js';
import type { Scope, ScopeInput } from '../core/scope.js';

/** A resolved scope and its storage key. */
export interface ScopeTarget {
  readonly scope: Scope;
  readonly memoryId: string;
}

// Enough for the conversations one process serves at a time; it is cleared, not grown, past it.
const MAX_TARGETS = 1024;

/**
 * Resolves scope inputs through {@link resolveScope}, remembering what it answered for each
 * exact combination of ids. Only inputs whose ids are all strings or absent are remembered,
 * under a key that encodes each with its length, so two different inputs never share a key; an
 * input that fails validation is never remembered, and an object edited in place is looked up
 * by its new ids.
 */
export class ScopeTargetCache {
  readonly #targets = new Map<string, ScopeTarget>();

  /** The scope `input` resolves to and its memory id; throws as `resolveScope` does. */
  resolve(input: ScopeInput): ScopeTarget {
    const key = keyOf(input);
    const known = key === undefined ? undefined : this.#targets.get(key);
    if (known !== undefined) return known;
    const scope = resolveScope(input);
    const target = Object.freeze({ scope, memoryId: memoryIdOf(scope) });
    if (key !== undefined) {
      if (this.#targets.size >= MAX_TARGETS) this.#targets.clear();
      this.#targets.set(key, target);
    }
    return target;
  }
}

function keyOf(input: ScopeInput): string | undefined {
  if (typeof input !== 'object' || input === null) return undefined;
  const tenant = part(input.tenantId);
  const conversation = part(input.conversationId);
  const agent = part(input.agentId);
  const run = part(input.runId);
  if (tenant === undefined || conversation === undefined || agent === undefined || run === undefined) return undefined;
  return `${tenant}${conversation}${agent}${run}`;
}

// `-` for an absent id, `<length>:<id>` for a string; anything else is not remembered.
function part(id: unknown): string | undefined {
  if (id === undefined) return '-';
  return typeof id === 'string' ? `${id.length}:${id}` : undefined;
}
