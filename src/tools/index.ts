/**
 * Memory tools for agents: `working_memory` and `observational_memory`, plus the pieces to
 * define more.
 * @module
 */
export { defineTool, toolScope } from './tool.js';
export type { Tool, ToolContext, ToolDefinition } from './tool.js';
export { WORKING_MEMORY_TOOL_NAME, createWorkingMemoryTool } from './working-memory-tool.js';
export {
  DEFAULT_REVIEW_PROMPT,
  MEMORY_NOT_CONFIGURED_WARNING,
  OBSERVATIONAL_MEMORY_TOOL_NAME,
  REVIEW_NOT_CONFIGURED_WARNING,
  createModelReviewer,
  createObservationalMemoryTool,
} from './observational-memory-tool.js';
export type { ObservationalMemoryToolOptions, Reviewer } from './observational-memory-tool.js';
export {
  EXPORT_DIRECTORY,
  MAX_EXPORT_PATH_LENGTH,
  resolveExportPath,
  writeExport,
  writeFileAtomic,
  writeNewFile,
} from './export-path.js';
export type { ResolveExportPathOptions, ResolvedExportPath } from './export-path.js';
