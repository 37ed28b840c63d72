/**
 * The `working_memory` and `observational_memory` tools as AI SDK tools.
 * @module
 */
import { jsonSchema, type Tool as AiSdkTool } from 'ai';
import { HarnessMemoryError } from '../core/errors.js';
import { tenantErrorText } from '../core/public-error-text.js';
import { invalidOption, requireOptions } from '../core/require-option.js';
import { resolveScope, type ScopeInput } from '../core/scope.js';
import type { ObservationalMemory } from '../memory/observational-memory.js';
import type { WorkingMemory } from '../memory/working-memory.js';
import { createObservationalMemoryTool } from '../tools/observational-memory-tool.js';
import type { Tool } from '../tools/tool.js';
import { createWorkingMemoryTool } from '../tools/working-memory-tool.js';
import { checkStaticScope } from './memory-middleware.js';

/** What {@link createMemoryTools} takes. */
export interface MemoryToolsOptions {
  readonly memory?: ObservationalMemory;
  readonly workingMemory: WorkingMemory;
  /** The scope the tools act on, or a function giving it at each call. */
  readonly scope: ScopeInput | (() => ScopeInput);
  /** The folder exports are confined to (`.harness/observational-memory/` inside it). @default process.cwd() */
  readonly workspace?: string;
}

/**
 * Returns `{ working_memory, observational_memory }`, ready for `generateText({ tools })`. A
 * refused call (bad arguments, a limit) answers `{ error: { code, message } }` to the model,
 * as the harness's own tools do, so it can correct itself.
 * @example
 * const result = await generateText({ model, tools: createMemoryTools({ memory, workingMemory, scope }), prompt });
 */
export function createMemoryTools(
  options: MemoryToolsOptions,
): Record<'working_memory' | 'observational_memory', AiSdkTool> {
  requireOptions('createMemoryTools', options, 'Pass { workingMemory, scope } and, for observational memory, memory.');
  if (options.scope === null || (typeof options.scope !== 'object' && typeof options.scope !== 'function')) {
    throw invalidOption(
      'createMemoryTools',
      'scope',
      'is required (scope ids, or a function returning them)',
      'Pass { tenantId, conversationId, agentId }.',
    );
  }
  checkStaticScope('createMemoryTools', options.scope);
  const workspace = options.workspace ?? process.cwd();
  const scopeOf = () => resolveScope(typeof options.scope === 'function' ? options.scope() : options.scope);
  const wrap = (tool: Tool): AiSdkTool => ({
    description: tool.description,
    inputSchema: jsonSchema(tool.parameters),
    async execute(input: unknown, call: { toolCallId: string }) {
      try {
        // The scope is given whole: a provider's call id (`call_1|fc_2`, or longer than a scope
        // id may be) is never checked as a run id, which only names the call in the log.
        return await tool.execute(input, {
          scope: scopeOf(),
          runId: `ai-sdk-${call.toolCallId}`,
          toolCallId: call.toolCallId,
          workspace,
        });
      } catch (error) {
        // Worded as the harness's tools answer a model: no library prefix, secrets redacted.
        if (HarnessMemoryError.isInstance(error))
          return { error: { code: error.code, message: tenantErrorText(error) } };
        throw error;
      }
    },
  });
  return {
    working_memory: wrap(createWorkingMemoryTool(options.workingMemory)),
    observational_memory: wrap(
      createObservationalMemoryTool(options.memory === undefined ? {} : { memory: options.memory }),
    ),
  };
}
