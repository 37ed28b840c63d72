import { describe, expect, it } from 'vitest';
import { HarnessMemoryError, ToolError } from '../core/errors.js';
import { createWorkingMemory } from '../memory/working-memory.js';
import type { WorkingMemory } from '../memory/working-memory.js';
import { resolveScope } from '../core/scope.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import type { Tool, ToolContext } from './tool.js';
import { createWorkingMemoryTool } from './working-memory-tool.js';

const CONTEXT: ToolContext = { runId: 'r1', workspace: '/nonexistent' };

function setup(): { tool: Tool; workingMemory: WorkingMemory } {
  const workingMemory = createWorkingMemory({ store: createInMemoryStore() });
  return { tool: createWorkingMemoryTool(workingMemory), workingMemory };
}

async function rejection(promise: Promise<unknown>): Promise<HarnessMemoryError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!HarnessMemoryError.isInstance(error)) throw new Error(`expected a HarnessMemoryError, got ${String(error)}`);
  return error;
}

describe('working_memory tool: actions', () => {
  it('answers set, get, delete and list in the reference shapes', async () => {
    const { tool } = setup();
    expect(await tool.execute({ action: 'set', key: ' plan ', value: { step: 1 } }, CONTEXT)).toEqual({
      ok: true,
      key: 'plan',
    });
    expect(await tool.execute({ action: 'set', key: 'note', value: 'tabs' }, CONTEXT)).toEqual({
      ok: true,
      key: 'note',
    });
    expect(await tool.execute({ action: 'get', key: 'plan' }, CONTEXT)).toEqual({
      key: 'plan',
      value: '{"step":1}',
      found: true,
    });
    expect(await tool.execute({ action: 'list' }, CONTEXT)).toEqual({
      entries: { note: '"tabs"', plan: '{"step":1}' },
    });
    expect(await tool.execute({ action: 'delete', key: 'plan' }, CONTEXT)).toEqual({ ok: true, key: 'plan' });
    expect(await tool.execute({ action: 'list' }, CONTEXT)).toEqual({ entries: { note: '"tabs"' } });
  });

  it('answers an empty value and found false for a missing key', async () => {
    const { tool } = setup();
    expect(await tool.execute({ action: 'get', key: 'missing' }, CONTEXT)).toEqual({
      key: 'missing',
      value: '',
      found: false,
    });
  });

  it('deletes a missing key without error', async () => {
    const { tool } = setup();
    expect(await tool.execute({ action: 'delete', key: 'missing' }, CONTEXT)).toEqual({ ok: true, key: 'missing' });
  });

  it('stores null when set has no value', async () => {
    const { tool } = setup();
    await tool.execute({ action: 'set', key: 'empty' }, CONTEXT);
    expect(await tool.execute({ action: 'get', key: 'empty' }, CONTEXT)).toEqual({
      key: 'empty',
      value: 'null',
      found: true,
    });
  });

  it('trims and lowercases the action', async () => {
    const { tool } = setup();
    expect(await tool.execute({ action: '  SeT \n', key: 'a', value: 1 }, CONTEXT)).toEqual({ ok: true, key: 'a' });
    expect(await tool.execute({ action: 'LIST' }, CONTEXT)).toEqual({ entries: { a: '1' } });
  });
});

describe('working_memory tool: input errors', () => {
  it('rejects an unknown action and lists the valid ones', async () => {
    const { tool } = setup();
    const error = await rejection(tool.execute({ action: 'Purge' }, CONTEXT));
    expect(error).toBeInstanceOf(ToolError);
    expect(error.code).toBe('TOOL_INPUT_INVALID');
    expect(error.message).toContain('action: unsupported action "purge"; valid actions are set, get, delete, list');
    expect((error as ToolError).issues).toEqual([
      'action: unsupported action "purge"; valid actions are set, get, delete, list',
    ]);
  });

  it('quotes a huge unknown action cut short, not whole', async () => {
    const { tool } = setup();
    const error = await rejection(tool.execute({ action: 'x'.repeat(1_000_000) }, CONTEXT));
    expect(error.message).toContain(`unsupported action "${'x'.repeat(59)}…; valid actions are`);
    expect(error.message.length).toBeLessThan(1_000);
  });

  it('rejects a missing or blank action as required', async () => {
    const { tool } = setup();
    expect((await rejection(tool.execute({}, CONTEXT))).message).toContain('action: action is required');
    expect((await rejection(tool.execute({ action: '   ' }, CONTEXT))).message).toContain('action: action is required');
  });

  it('names the key when set, get or delete has none', async () => {
    const { tool } = setup();
    for (const action of ['set', 'get', 'delete']) {
      const error = await rejection(tool.execute({ action, value: 1 }, CONTEXT));
      expect(error.code).toBe('TOOL_INPUT_INVALID');
      expect((error as ToolError).issues).toEqual([`key: working memory key is required for the "${action}" action`]);
    }
  });

  it('rejects a key that is not a string', async () => {
    const { tool } = setup();
    const error = await rejection(tool.execute({ action: 'get', key: 42 }, CONTEXT));
    expect((error as ToolError).issues[0]).toMatch(/^key: /);
  });

  it('passes the service errors through unchanged', async () => {
    const workingMemory = createWorkingMemory({ store: createInMemoryStore(), limits: { maxValueBytes: 16 } });
    const tool = createWorkingMemoryTool(workingMemory);
    expect((await rejection(tool.execute({ action: 'set', key: 'a\nb', value: 1 }, CONTEXT))).code).toBe(
      'WORKING_MEMORY_INVALID',
    );
    expect((await rejection(tool.execute({ action: 'set', key: 'big', value: 'x'.repeat(100) }, CONTEXT))).code).toBe(
      'WORKING_MEMORY_LIMIT',
    );
  });
});

describe('working_memory tool: scope', () => {
  it('falls back to the run id for the conversation', async () => {
    const { tool, workingMemory } = setup();
    await tool.execute({ action: 'set', key: 'k', value: 'v' }, { runId: 'run-7', workspace: '/nonexistent' });
    expect(await workingMemory.get({ conversationId: 'run-7' }, 'k')).toEqual({ key: 'k', value: '"v"', found: true });
  });

  it('keeps tenants, conversations and agents apart', async () => {
    const { tool } = setup();
    await tool.execute(
      { action: 'set', key: 'k', value: 1 },
      { tenantId: 't1', conversationId: 'c1', agentId: 'a1', workspace: '/nonexistent' },
    );
    for (const other of [
      { tenantId: 't2', conversationId: 'c1', agentId: 'a1' },
      { tenantId: 't1', conversationId: 'c2', agentId: 'a1' },
      { tenantId: 't1', conversationId: 'c1', agentId: 'a2' },
    ]) {
      expect(await tool.execute({ action: 'list' }, { ...other, workspace: '/nonexistent' })).toEqual({ entries: {} });
    }
  });

  it('requires a conversation or run id', async () => {
    const { tool } = setup();
    const error = await rejection(
      tool.execute({ action: 'list' }, { tenantId: 't1', conversationId: '  ', workspace: '/nonexistent' }),
    );
    expect(error.code).toBe('SCOPE_INVALID');
    expect(error.message).toContain('run context is required');
  });
});

describe('working_memory tool: definition', () => {
  it('describes itself with a JSON Schema requiring the action', () => {
    const { tool } = setup();
    expect(tool.name).toBe('working_memory');
    expect(tool.description).toBe('Stores and retrieves explicit scoped working memory entries for the current run.');
    expect(tool.parameters).not.toHaveProperty('$schema');
    expect(tool.parameters).toMatchObject({
      type: 'object',
      required: ['action'],
      properties: { action: { type: 'string', enum: ['set', 'get', 'delete', 'list'] }, key: { type: 'string' } },
    });
  });
});

describe('working_memory tool: scope', () => {
  it('writes to the resolved scope the context carries, not one rebuilt from ids (issue 17)', async () => {
    const { tool, workingMemory } = setup();
    const scope = resolveScope({ tenantId: 'acme', conversationId: 'c9', agentId: 'a1' });
    await tool.execute(
      { action: 'set', key: 'plan', value: 1 },
      { scope, conversationId: 'ignored', runId: 'r1', workspace: '/nonexistent' },
    );
    expect((await workingMemory.get(scope, 'plan')).found).toBe(true);
    expect((await workingMemory.get({ conversationId: 'ignored' }, 'plan')).found).toBe(false);
  });

  it('validates a scope it was handed that was never resolved', async () => {
    const { tool } = setup();
    const scope = { tenantId: 'acme', conversationId: 'bad id', agentId: 'a1' };
    expect((await rejection(tool.execute({ action: 'list' }, { scope, workspace: '/nonexistent' }))).code).toBe(
      'SCOPE_INVALID',
    );
  });
});

describe('working_memory tool: time to live', () => {
  it('sets an entry that expires after ttl_seconds, answering its expiry, while get and list keep their shapes', async () => {
    let at = Date.parse('2026-03-01T12:00:00.000Z');
    const now = () => new Date(at);
    const tool = createWorkingMemoryTool(createWorkingMemory({ store: createInMemoryStore({ now }), now }));
    expect(tool.parameters).toMatchObject({ properties: { ttl_seconds: { type: 'number' } } });
    expect(await tool.execute({ action: 'set', key: 'draft', value: 'x', ttl_seconds: 30 }, CONTEXT)).toEqual({
      ok: true,
      key: 'draft',
      expires_at: '2026-03-01T12:00:30.000Z',
    });
    expect(await tool.execute({ action: 'set', key: 'plan', value: 1 }, CONTEXT)).toEqual({ ok: true, key: 'plan' });
    expect(await tool.execute({ action: 'list' }, CONTEXT)).toEqual({ entries: { draft: '"x"', plan: '1' } });
    at += 30_000;
    expect(await tool.execute({ action: 'get', key: 'draft' }, CONTEXT)).toEqual({
      key: 'draft',
      value: '',
      found: false,
    });
    expect(await tool.execute({ action: 'list' }, CONTEXT)).toEqual({ entries: { plan: '1' } });
  });

  it('refuses a ttl_seconds out of range as WORKING_MEMORY_INVALID naming ttl_seconds', async () => {
    const { tool } = setup();
    const error = await rejection(tool.execute({ action: 'set', key: 'a', value: 1, ttl_seconds: 0.5 }, CONTEXT));
    expect(error.code).toBe('WORKING_MEMORY_INVALID');
    expect(error.data).toEqual({ field: 'ttl_seconds' });
  });
});

describe('working_memory tool: arguments padded with null', () => {
  it('takes an optional argument sent as null as left out, as models in strict mode send them', async () => {
    const { tool } = setup();
    expect(await tool.execute({ action: 'set', key: 'plan', value: { step: 2 }, ttl_seconds: null }, CONTEXT)).toEqual({
      ok: true,
      key: 'plan',
    });
    expect(await tool.execute({ action: 'get', key: 'plan', value: null, ttl_seconds: null }, CONTEXT)).toEqual({
      key: 'plan',
      value: '{"step":2}',
      found: true,
    });
    expect(await tool.execute({ action: 'list', key: null, value: null, ttl_seconds: null }, CONTEXT)).toEqual({
      entries: { plan: '{"step":2}' },
    });
  });

  it('still stores a value of null, and still requires a key for set when it is null', async () => {
    const { tool } = setup();
    await tool.execute({ action: 'set', key: 'plan', value: null, ttl_seconds: null }, CONTEXT);
    expect(await tool.execute({ action: 'get', key: 'plan' }, CONTEXT)).toEqual({
      key: 'plan',
      value: 'null',
      found: true,
    });
    const error = await rejection(tool.execute({ action: 'set', key: null, value: 1 }, CONTEXT));
    expect(error.message).toContain('key: working memory key is required for the "set" action');
  });

  it('advertises the same JSON Schema as before: the fields are not made nullable', () => {
    const { tool } = setup();
    expect(tool.parameters['properties']).toEqual({
      action: { description: 'set, get, delete or list', type: 'string', enum: ['set', 'get', 'delete', 'list'] },
      key: { description: 'Entry key; required for set, get and delete', type: 'string' },
      value: { description: 'Any JSON value to store (set only)' },
      ttl_seconds: {
        description: 'Seconds until the entry expires, a whole number from 1 to 315360000 (set only; omit to keep it)',
        type: 'number',
      },
    });
  });
});
