/**
 * A raw MCP `subscriptions/listen` request (protocol 2026-07-28), whose answer is an event
 * stream that stays open: for tests of what holds connections and stream slots.
 * @module
 */

/** The headers of a listen request. */
export const MCP_LISTEN_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'subscriptions/listen',
};

/** The JSON-RPC body of a listen request with the given id. */
export function mcpListenBody(id: number, clientName = 'harness-memory-test'): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'subscriptions/listen',
    params: {
      notifications: { toolsListChanged: true },
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: clientName, version: '1' },
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  });
}
