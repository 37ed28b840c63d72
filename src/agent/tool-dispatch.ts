/**
 * Tool dispatch of the agent loop: the tools offered to the model, and one call run with the
 * run's resolved scope. A failing or unknown tool becomes a tool result the model reads,
 * never a failed run.
 * @module
 */
import type { Scope } from '../core/scope.js';
import type { LanguageModelTool } from '../llm/language-model.js';
import type { Tool } from '../tools/tool.js';
import { errorJson } from './_run-errors.js';

/** Who a tool call is for. */
export interface ToolCallTarget {
  readonly runId: string;
  readonly toolCallId: string;
  readonly scope: Scope;
}

/** What one tool call came to: the JSON text the model gets back, and whether it succeeded. */
export interface ToolCallOutcome {
  readonly content: string;
  readonly ok: boolean;
}

/** The tools of a runner. */
export interface ToolDispatcher {
  /** Tool names, in the order offered. */
  readonly names: readonly string[];
  /** The tools as the model sees them. */
  readonly definitions: readonly LanguageModelTool[];
  /** Runs the tool `name` with the raw JSON `args`; never throws. */
  dispatch(name: string, args: string, target: ToolCallTarget): Promise<ToolCallOutcome>;
}

/** Options of {@link createToolDispatcher}. */
export interface ToolDispatcherOptions {
  readonly tools: readonly Tool[];
  /** Folder that file-writing tools must stay inside. */
  readonly workspace: string;
}

/** The dispatcher over `tools`; a later tool of the same name wins. */
export function createToolDispatcher(options: ToolDispatcherOptions): ToolDispatcher {
  const toolsByName = new Map(options.tools.map((tool) => [tool.name, tool]));
  const definitions = options.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
  }));
  return {
    names: options.tools.map((tool) => tool.name),
    definitions,
    async dispatch(name, args, target) {
      const tool = toolsByName.get(name);
      if (!tool) {
        const message = `unknown tool "${name}"; available tools are ${[...toolsByName.keys()].join(', ')}`;
        return { content: JSON.stringify({ error: { code: 'TOOL_NOT_FOUND', message } }), ok: false };
      }
      try {
        const parsed: unknown = args.trim() === '' ? {} : JSON.parse(args);
        // The resolved scope goes as it is; the ids stay for tools that read them.
        const result = await tool.execute(parsed, {
          scope: target.scope,
          tenantId: target.scope.tenantId,
          conversationId: target.scope.conversationId,
          agentId: target.scope.agentId,
          runId: target.runId,
          toolCallId: target.toolCallId,
          workspace: options.workspace,
        });
        return { content: JSON.stringify(result), ok: true };
      } catch (error) {
        return { content: JSON.stringify({ error: errorJson(error) }), ok: false };
      }
    },
  };
}
