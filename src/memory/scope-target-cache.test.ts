import { describe, expect, it } from 'vitest';
import { HarnessMemoryError } from '../core/errors.js';
import { memoryIdOf, resolveScope } from '../core/scope.js';
import type { ScopeInput } from '../core/scope.js';
import { ScopeTargetCache } from './scope-target-cache.js';

const expected = (input: ScopeInput) => {
  const scope = resolveScope(input);
  return { scope, memoryId: memoryIdOf(scope) };
};

describe('ScopeTargetCache', () => {
  it('answers what resolveScope answers, and the same target again for the same ids', () => {
    const cache = new ScopeTargetCache();
    const input = { tenantId: 'acme', conversationId: 'c1' };
    const first = cache.resolve(input);
    expect(first).toEqual(expected(input));
    expect(cache.resolve({ tenantId: 'acme', conversationId: 'c1' })).toBe(first);
    expect(cache.resolve({ runId: 'run-1' })).toEqual(expected({ runId: 'run-1' }));
    expect(cache.resolve({ runId: 'run-2' }).scope.conversationId).toBe('run-2');
  });

  it('follows an input object edited in place', () => {
    const cache = new ScopeTargetCache();
    const input: ScopeInput = { tenantId: 'acme', conversationId: 'c1' };
    const before = cache.resolve(input);
    input.conversationId = 'c2';
    const after = cache.resolve(input);
    expect(after.memoryId).not.toBe(before.memoryId);
    expect(after).toEqual(expected({ tenantId: 'acme', conversationId: 'c2' }));
    input.agentId = 'planner';
    expect(cache.resolve(input).scope.agentId).toBe('planner');
  });

  it('never gives two different inputs one key', () => {
    const cache = new ScopeTargetCache();
    const inputs: ScopeInput[] = [
      { tenantId: 'a', conversationId: 'b:c' },
      { tenantId: 'a:b', conversationId: 'c' },
      { tenantId: 'a', conversationId: '1:b' },
      { tenantId: 'a', conversationId: 'b', agentId: 'c' },
      { tenantId: 'a', conversationId: 'b', runId: 'c' },
    ];
    for (const input of inputs) expect(cache.resolve(input)).toEqual(expected(input));
    expect(new Set(inputs.map((input) => cache.resolve(input).memoryId)).size).toBe(inputs.length);
    // A run id does not change the scope of a named conversation.
    expect(cache.resolve(inputs[4] as ScopeInput).memoryId).toBe(
      cache.resolve({ tenantId: 'a', conversationId: 'b' }).memoryId,
    );
  });

  it('throws for invalid ids every time, remembering nothing', () => {
    const cache = new ScopeTargetCache();
    const invalid = { tenantId: 'acme', conversationId: '../etc' };
    for (let attempt = 0; attempt < 2; attempt++) {
      expect(() => cache.resolve(invalid)).toThrow(
        expect.objectContaining({ code: 'SCOPE_INVALID' }) as unknown as HarnessMemoryError,
      );
    }
    expect(() => cache.resolve({ tenantId: 'acme' })).toThrow(/conversation_id/);
  });

  it('resolves ids that are not strings as resolveScope does, without remembering them', () => {
    const cache = new ScopeTargetCache();
    const odd = { tenantId: null, conversationId: 'c1' } as ScopeInput;
    expect(cache.resolve(odd)).toEqual(expected(odd));
    expect(cache.resolve(odd)).not.toBe(cache.resolve(odd));
  });

  it('stays right past its size bound', () => {
    const cache = new ScopeTargetCache();
    for (let index = 0; index < 2_500; index++) {
      const input = { tenantId: 't', conversationId: `c${index}` };
      expect(cache.resolve(input).memoryId).toBe(expected(input).memoryId);
    }
    expect(cache.resolve({ tenantId: 't', conversationId: 'c7' }).scope.conversationId).toBe('c7');
  });
});
