/**
 * The `working_memory` tool: explicit key/value entries scoped to the current run.
 * @module
 */
import { z } from 'zod/v4';
import { requireObject } from '../core/require-option.js';
import { ToolError } from '../core/errors.js';
import type { WorkingMemory } from '../memory/working-memory.js';
import { actionSchema, defineTool, nullAsAbsent, toolScope } from './tool.js';
import type { Tool } from './tool.js';

/** Name of the working memory tool. */
export const WORKING_MEMORY_TOOL_NAME = 'working_memory';

const WORKING_MEMORY_ACTIONS = ['set', 'get', 'delete', 'list'] as const;

// A null value is a value (set stores it), not a left-out one.
const workingMemoryInput = nullAsAbsent(
  z.object({
    action: actionSchema(WORKING_MEMORY_ACTIONS).describe('set, get, delete or list'),
    key: z.string().optional().describe('Entry key; required for set, get and delete'),
    value: z.unknown().optional().describe('Any JSON value to store (set only)'),
    ttl_seconds: z
      .number()
      .optional()
      .describe('Seconds until the entry expires, a whole number from 1 to 315360000 (set only; omit to keep it)'),
  }),
  ['value'],
);

/**
 * Creates the `working_memory` tool. Results: set `{ok, key}` (with `expires_at` when the entry
 * expires: `ttl_seconds`, or the configured default), get `{key, value, found}`
 * (`value` is the JSON-encoded string, `""` when missing), delete `{ok, key}`,
 * list `{entries: {key: jsonString}}`.
 * @example
 * const tool = createWorkingMemoryTool(createWorkingMemory({ store: createInMemoryStore() }));
 * await tool.execute({ action: 'set', key: 'plan', value: { step: 1 } }, { runId: 'r1', workspace: '.' });
 */
export function createWorkingMemoryTool(workingMemory: WorkingMemory): Tool {
  requireObject(
    'createWorkingMemoryTool',
    'workingMemory',
    workingMemory,
    ['set', 'get', 'delete', 'list'],
    'Pass the service from createWorkingMemory({ store }).',
  );
  return defineTool({
    name: WORKING_MEMORY_TOOL_NAME,
    description: 'Stores and retrieves explicit scoped working memory entries for the current run.',
    inputSchema: workingMemoryInput,
    async execute(args, context) {
      const scope = toolScope(context);
      const written = context.runId === undefined ? undefined : { runId: context.runId };
      if (args.action === 'list') return workingMemory.list(scope);
      const key = args.key;
      if (key === undefined || key.trim() === '') {
        const issue = `key: working memory key is required for the "${args.action}" action`;
        throw new ToolError({
          toolName: WORKING_MEMORY_TOOL_NAME,
          message: `invalid arguments: ${issue}`,
          issues: [issue],
        });
      }
      if (args.action === 'set') {
        const result = await workingMemory.set(scope, key, args.value, {
          ...written,
          ...(args.ttl_seconds === undefined ? {} : { ttlSeconds: args.ttl_seconds }),
        });
        const { expiresAt } = result.entry;
        return expiresAt === null
          ? { ok: true, key: result.key }
          : { ok: true, key: result.key, expires_at: expiresAt };
      }
      if (args.action === 'get') {
        const result = await workingMemory.get(scope, key);
        return { key: result.key, value: result.value, found: result.found };
      }
      const result = await workingMemory.delete(scope, key, written);
      return { ok: true, key: result.key };
    },
  });
}
