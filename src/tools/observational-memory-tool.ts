/**
 * The `observational_memory` tool: enable, disable, inspect, export and reflect a scope's
 * observational memory.
 * @module
 */
import { z } from 'zod/v4';
import { requireObject, requireOptions } from '../core/require-option.js';
import { statusOf, statusToJson } from '../core/memory-status.js';
import type { MemoryStatus } from '../core/memory-status.js';
import { DEFAULT_OBSERVATION_CONFIG } from '../core/observation.js';
import type { ObservationConfig } from '../core/observation.js';
import { memoryIdOf } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import type { ObservationalMemory } from '../memory/observational-memory.js';
import { writeExport } from './export-path.js';
import { actionSchema, defineTool, toolScope } from './tool.js';
import type { Tool } from './tool.js';

/** Name of the observational memory tool. */
export const OBSERVATIONAL_MEMORY_TOOL_NAME = 'observational_memory';

/** Warning returned by every action when no memory service is configured. */
export const MEMORY_NOT_CONFIGURED_WARNING = 'observational memory manager is not configured';

const OBSERVATIONAL_MEMORY_ACTIONS = ['enable', 'disable', 'status', 'export', 'reflect_now'] as const;

const threshold = z.number().int().min(1);
const exportFormat = z.string().optional().describe('json (default) or markdown');
const exportPath = z
  .string()
  .optional()
  .describe(
    'A new file under .harness/observational-memory/ in the workspace (existing files are never replaced); ' +
      'defaults to .harness/observational-memory/<tenant>/<conversation>/<agent>/memory-<timestamp>.<json|md>',
  );

const observationalMemoryInput = z.object({
  action: actionSchema(OBSERVATIONAL_MEMORY_ACTIONS).describe('enable, disable, status, export or reflect_now'),
  config: z
    .object({
      observe_min_tokens: threshold.optional(),
      snippet_max_tokens: threshold.optional(),
      reflect_threshold_tokens: threshold.optional(),
    })
    .strict()
    .optional()
    .describe('Per-scope thresholds in tokens (enable only)'),
  format: exportFormat,
  path: exportPath,
  // The reference harness reads these nested under `export`; its docs show them top level.
  export: z
    .object({ format: exportFormat, path: exportPath })
    .optional()
    .describe('Alternative to the top-level format and path'),
});

/** Options of {@link createObservationalMemoryTool}. */
export interface ObservationalMemoryToolOptions {
  /** Without it every action succeeds with a `mode: "off"` status and a warning. */
  memory?: ObservationalMemory;
  /** Clock for default export file names. @default () => new Date() */
  now?: () => Date;
  /**
   * Files an export must never be, whatever their names: the store's database and the configuration files.
   * @default []
   */
  protectedPaths?: readonly string[];
}

/**
 * Creates the `observational_memory` tool. Every result has `status` (snake_case);
 * `export` adds `export: {path, format, bytes}` with `path` relative to the workspace, and
 * `reflect_now` adds `reflected`.
 * @example
 * const tool = createObservationalMemoryTool({ memory });
 * await tool.execute({ action: 'export', format: 'markdown' }, { runId: 'r1', workspace: process.cwd() });
 */
export function createObservationalMemoryTool(options: ObservationalMemoryToolOptions): Tool {
  requireOptions(
    'createObservationalMemoryTool',
    options,
    'Pass { memory } (or {} for a tool that reports memory as off).',
  );
  requireObject(
    'createObservationalMemoryTool',
    'memory',
    options.memory,
    ['status', 'setEnabled', 'export', 'reflectNow'],
    'Pass the service from createObservationalMemory({ store, model }), or leave it out.',
    true,
  );
  const { memory } = options;
  return defineTool({
    name: OBSERVATIONAL_MEMORY_TOOL_NAME,
    description:
      'Enables, disables, reports, exports or reflects the observational memory of the current conversation.',
    inputSchema: observationalMemoryInput,
    async execute(args, context) {
      const scope = toolScope(context);
      if (memory === undefined)
        return { status: statusToJson(offStatus(scope)), warnings: [MEMORY_NOT_CONFIGURED_WARNING] };
      const meta = { runId: context.runId, toolCallId: context.toolCallId };
      switch (args.action) {
        case 'enable':
          return { status: statusToJson(await memory.setEnabled(scope, true, toConfig(args.config), meta)) };
        case 'disable':
          return { status: statusToJson(await memory.setEnabled(scope, false, undefined, meta)) };
        case 'status':
          return { status: statusToJson(await memory.status(scope)) };
        case 'reflect_now': {
          const result = await memory.reflectNow(scope, meta);
          return { status: statusToJson(result.status), reflected: result.reflected };
        }
        case 'export': {
          // Render first (read-only), so a failed export creates no directories.
          const result = await memory.export(scope, args.format ?? args.export?.format);
          const destination = await writeExport({
            workspace: context.workspace,
            requestedPath: args.path ?? args.export?.path,
            scope,
            format: result.format,
            content: result.content,
            ...(options.now ? { now: options.now } : {}),
            ...(options.protectedPaths ? { protectedPaths: options.protectedPaths } : {}),
          });
          return {
            status: statusToJson(result.status),
            export: { path: destination.relativePath, format: result.format, bytes: result.bytes },
          };
        }
      }
    },
  });
}

function toConfig(
  config:
    | {
        observe_min_tokens?: number | undefined;
        snippet_max_tokens?: number | undefined;
        reflect_threshold_tokens?: number | undefined;
      }
    | undefined,
): Partial<ObservationConfig> | undefined {
  if (config === undefined) return undefined;
  return {
    ...(config.observe_min_tokens === undefined ? {} : { observeMinTokens: config.observe_min_tokens }),
    ...(config.snippet_max_tokens === undefined ? {} : { snippetMaxTokens: config.snippet_max_tokens }),
    ...(config.reflect_threshold_tokens === undefined
      ? {}
      : { reflectThresholdTokens: config.reflect_threshold_tokens }),
  };
}

function offStatus(scope: Scope): MemoryStatus {
  return statusOf({
    mode: 'off',
    memoryId: memoryIdOf(scope),
    scope,
    record: undefined,
    enabled: false,
    config: DEFAULT_OBSERVATION_CONFIG,
    pendingOperations: 0,
  });
}
