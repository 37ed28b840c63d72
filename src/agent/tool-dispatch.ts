/**
 * Tool dispatch of the agent loop: the tools offered to the model, and one call run with the
 * run's resolved scope. A failing or unknown tool becomes a tool result the model reads,
 * never a failed run.
 * @module
 */
import type { Scope } from '../core/scope.js';
import { untilStopped } from '../core/until-stopped.js';
import type { LanguageModelTool } from '../llm/language-model.js';
import type { Tool } from '../tools/tool.js';
import type { RunErrorJson } from './_run-errors.js';

/** Who a tool call is for. */
export interface ToolCallTarget {
  readonly runId: string;
  readonly toolCallId: string;
  readonly scope: Scope;
  /** The run's signal: the tool gets it, and the call stops waiting for the tool once it aborts. */
  readonly signal?: AbortSignal;
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
  /** A tool's failure as the model reads it back. */
  readonly shownError: (error: unknown, target: ToolCallTarget) => RunErrorJson;
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
      let parsed: unknown;
      try {
        parsed = args.trim() === '' ? {} : JSON.parse(args);
      } catch (error) {
        // A model's answer cut at its token limit, most often: the model can send it again.
        const reason = error instanceof Error ? error.message : String(error);
        return failure('TOOL_INPUT_INVALID', `the arguments of tool "${name}" are not valid JSON (${reason})`);
      }
      // Cancelled before the tool started (during its tool.call.started event): it never runs.
      if (target.signal?.aborted) return failure('RUN_CANCELLED', 'the run was cancelled before the tool ran');
      let result: unknown;
      try {
        // The resolved scope goes as it is; the ids stay for tools that read them.
        const execution = tool.execute(parsed, {
          scope: target.scope,
          tenantId: target.scope.tenantId,
          conversationId: target.scope.conversationId,
          agentId: target.scope.agentId,
          runId: target.runId,
          toolCallId: target.toolCallId,
          workspace: options.workspace,
          ...(target.signal ? { signal: target.signal } : {}),
        });
        // A hand-written tool may return a plain value: taken as it is. A cancelled run does not
        // wait for a tool that ignores its signal (it is left to finish on its own).
        result = await untilStopped(Promise.resolve(execution), target.signal);
      } catch (error) {
        return { content: JSON.stringify({ error: options.shownError(error, target) }), ok: false };
      }
      let content: string | undefined;
      try {
        content = JSON.stringify(result);
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        return failure('TOOL_OUTPUT_INVALID', `tool "${name}" returned a value that is not JSON (${reason})`);
      }
      // A tool that returns nothing (a notification, a log line) did its work.
      return { content: content ?? 'null', ok: true };
    },
  };
}

function failure(code: string, message: string): ToolCallOutcome {
  return { content: JSON.stringify({ error: { code, message } }), ok: false };
}
