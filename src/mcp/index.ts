/**
 * `harness-memory/mcp`: the MCP server over both memories.
 * @module
 */
export { createMemoryMcpServer } from './memory-mcp-server.js';
export type { MemoryMcpServerOptions } from './memory-mcp-server.js';
export { memoryUri } from './mcp-memory-resources.js';
