/**
 * Registration of one MCP tool whose arguments the tool checks itself, so a bad argument is a
 * `TOOL_INPUT_INVALID: …` result like every other failure.
 * @module
 */
import type { McpServer, ServerContext, StandardSchemaWithJSON, ToolAnnotations } from '@modelcontextprotocol/server';
import type { z } from 'zod/v4';
import { parseToolArguments } from '../tools/tool.js';
import { runTool } from './_tool-result.js';

/** What {@link registerMemoryTool} registers. */
export interface MemoryToolDefinition<Schema extends z.ZodType> {
  readonly title: string;
  readonly description: string;
  /** Listed as the tool's JSON Schema, and checked before `run`. */
  readonly inputSchema: Schema;
  readonly annotations?: ToolAnnotations;
}

/**
 * Registers tool `name`: `tools/list` shows the JSON Schema of `definition.inputSchema`, and a
 * call runs `run` with the checked arguments and the request's signal (aborted when the client
 * cancels the call or goes away). The SDK's own check is left to pass everything: it would
 * answer `Input validation error: …` without our error code.
 */
export function registerMemoryTool<Schema extends z.ZodType>(
  server: McpServer,
  name: string,
  definition: MemoryToolDefinition<Schema>,
  run: (args: z.output<Schema>, signal: AbortSignal | undefined) => Promise<Record<string, unknown>>,
  onFault: ((error: unknown) => void) | undefined,
): void {
  const { inputSchema, ...listed } = definition;
  server.registerTool(
    name,
    { ...listed, inputSchema: listedOnly(inputSchema) },
    async (input: unknown, context?: ServerContext) =>
      runTool(async () => run(parseToolArguments(name, inputSchema, input ?? {}), context?.mcpReq.signal), onFault),
  );
}

// The schema's JSON Schema converter with a validator that accepts any input as it is.
function listedOnly(schema: z.ZodType): StandardSchemaWithJSON<unknown, unknown> {
  const { jsonSchema } = schema['~standard'] as unknown as StandardSchemaWithJSON['~standard'];
  return {
    '~standard': { version: 1, vendor: 'harness-memory', validate: (value: unknown) => ({ value }), jsonSchema },
  };
}
