/**
 * Tool results of the MCP server: JSON as text (what every client shows) and as
 * `structuredContent`; failures as `isError` results naming the code, never thrown.
 * @module
 */
import { HarnessMemoryError } from '../core/errors.js';
import { isServerFailure, serverFailureText, tenantErrorData, tenantErrorText } from '../core/public-error-text.js';

/** The result shape MCP tools return (a subset of the SDK's `CallToolResult`). */
export interface McpToolResult {
  [key: string]: unknown;
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** A successful result carrying `value`. */
export function toolResult(value: Record<string, unknown>): McpToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value };
}

/** A failed result: `CODE: message`, with the code and data as structured content. */
export function toolFailure(error: unknown): McpToolResult {
  if (HarnessMemoryError.isInstance(error) && isServerFailure(error)) {
    // A store's failure names the database file, schema or address: the code only, the
    // detail in the server's log (the caller reports it).
    const message = serverFailureText(error.code);
    return {
      isError: true,
      content: [{ type: 'text', text: `${error.code}: ${message}` }],
      structuredContent: { error: { code: error.code, message } },
    };
  }
  if (HarnessMemoryError.isInstance(error)) {
    // As the HTTP API says it: no model server address, no secret a provider quoted back.
    const message = tenantErrorText(error);
    return {
      isError: true,
      content: [{ type: 'text', text: `${error.code}: ${message}` }],
      structuredContent: { error: { code: error.code, message, data: tenantErrorData(error) } },
    };
  }
  // Anything else is a bug or a store fault: its details stay in the server's log.
  return {
    isError: true,
    content: [{ type: 'text', text: 'INTERNAL: the memory server failed; see its log' }],
    structuredContent: { error: { code: 'INTERNAL', message: 'the memory server failed; see its log' } },
  };
}

/** Runs a tool body, turning a thrown error into a failed result (and reporting unexpected ones). */
export async function runTool(
  body: () => Promise<Record<string, unknown>>,
  onFault: ((error: unknown) => void) | undefined,
): Promise<McpToolResult> {
  try {
    return toolResult(await body());
  } catch (error) {
    if (isServerFailure(error)) onFault?.(error);
    return toolFailure(error);
  }
}
