import { describe, expect, it } from 'vitest';
import { HarnessMemoryError } from './errors.js';
import { assertScope, memoryIdOf, resolveScope, scopeOfMemoryId, validateScopeId } from './scope.js';

const fieldOf = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (error) {
    if (HarnessMemoryError.isInstance(error) && error.code === 'SCOPE_INVALID') return error.data['field'];
    throw error;
  }
  return undefined;
};

describe('scope: defaults', () => {
  it('falls back to default tenant and agent and to the run id for the conversation', () => {
    expect(resolveScope({ runId: 'run_1' })).toEqual({
      tenantId: 'default',
      conversationId: 'run_1',
      agentId: 'default',
    });
    expect(resolveScope({ tenantId: ' t ', conversationId: 'c', agentId: '', runId: 'r' })).toEqual({
      tenantId: 't',
      conversationId: 'c',
      agentId: 'default',
    });
  });

  it('refuses a scope with neither conversation id nor run id instead of sharing a bucket', () => {
    expect(fieldOf(() => resolveScope({ tenantId: 't' }))).toBe('conversation_id');
    expect(fieldOf(() => resolveScope({ conversationId: '  ' }))).toBe('conversation_id');
  });
});

describe('scope: validation', () => {
  it('accepts letters, digits and . _ : @ - up to 128 characters', () => {
    for (const id of ['a', 'A-z_0.9:x@y', 'x'.repeat(128), '...', '.a'])
      expect(validateScopeId('tenant_id', id)).toBe(id);
  });

  it('rejects traversal, separators, encodings, control bytes and over-long ids, naming the field', () => {
    for (const id of [
      '.',
      '..',
      '../../etc',
      '%2e%2e%2f',
      '..\\x',
      '/abs',
      'a\0b',
      'a b',
      'a|b',
      'é',
      'x'.repeat(129),
      '',
    ]) {
      expect(
        fieldOf(() => resolveScope({ tenantId: 'ok', conversationId: id === '' ? 'c' : id, agentId: 'a' })) ??
          fieldOf(() => validateScopeId('conversation_id', id)),
      ).toBe('conversation_id');
    }
    expect(fieldOf(() => resolveScope({ tenantId: '../x', runId: 'r' }))).toBe('tenant_id');
    expect(fieldOf(() => resolveScope({ agentId: 'a/b', runId: 'r' }))).toBe('agent_id');
    expect(fieldOf(() => resolveScope({ runId: 'r r' }))).toBe('run_id');
    expect(fieldOf(() => assertScope({ tenantId: 't', conversationId: 'c' }))).toBe('agent_id');
  });
});

describe('scope: memory id', () => {
  it('cannot collide between differently split ids', () => {
    const a = memoryIdOf({ tenantId: 'a:b', conversationId: 'c', agentId: 'd' });
    const b = memoryIdOf({ tenantId: 'a', conversationId: 'b:c', agentId: 'd' });
    expect(a).not.toBe(b);
    expect(memoryIdOf({ tenantId: 'a', conversationId: 'b', agentId: 'c' })).toBe('1:a/1:b/1:c');
  });

  it('reads a scope back from its memory id, and nothing from a key that is not one', () => {
    for (const scope of [
      { tenantId: 'a:b', conversationId: 'c', agentId: 'd' },
      { tenantId: 'acme', conversationId: '12:x.y', agentId: 'agent-x' },
      { tenantId: 't'.repeat(128), conversationId: '1', agentId: 'a@b' },
    ])
      expect(scopeOfMemoryId(memoryIdOf(scope))).toEqual(scope);
    for (const key of ['', '1:a/1:b', '1:a/1:b/1:c/', '1:a/1:b/2:c', '1:a/1:b/1:cd', '01:a/1:b/1:c', 'x:a/1:b/1:c'])
      expect(scopeOfMemoryId(key), key).toBeUndefined();
    // The ids must be valid scope ids, too.
    expect(scopeOfMemoryId('1:a/3:b c/1:d')).toBeUndefined();
    expect(scopeOfMemoryId('1:a/2:../1:d')).toBeUndefined();
    expect(scopeOfMemoryId(`129:${'t'.repeat(129)}/1:b/1:c`)).toBeUndefined();
  });
});

describe('scope: resolved once', () => {
  it('returns a scope it resolved as it is, checking only a given run id', () => {
    const scope = resolveScope({ tenantId: 'acme', conversationId: 'c1' });
    expect(resolveScope(scope)).toBe(scope);
    expect(assertScope(scope)).toBe(scope);
    expect(resolveScope(scope, 'run_1')).toBe(scope);
    expect(fieldOf(() => resolveScope(scope, 'bad id'))).toBe('run_id');
  });

  it('validates a look-alike object that it did not resolve', () => {
    const lookAlike = { tenantId: 'acme', conversationId: '..', agentId: 'default' };
    expect(fieldOf(() => resolveScope(lookAlike))).toBe('conversation_id');
    expect(fieldOf(() => assertScope(lookAlike))).toBe('conversation_id');
  });
});
