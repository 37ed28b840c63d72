/**
 * The resources of the MCP server: a scope's memory as Markdown, and the tenant's scopes.
 * @module
 */
import { neutralizeMarkup, stripInvisibleInJson } from '../core/sanitize-text.js';
import { workingMemoryKeyText } from '../core/working-memory.js';
import { ResourceNotFoundError, ResourceTemplate } from '@modelcontextprotocol/server';
import type { McpServer, Variables } from '@modelcontextprotocol/server';
import { HarnessMemoryError } from '../core/errors.js';
import { resolveScope } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import type { ObservationalMemory } from '../memory/observational-memory.js';
import type { WorkingMemory } from '../memory/working-memory.js';

/** What the resources read. */
export interface MemoryResourcesDependencies {
  readonly observationalMemory: ObservationalMemory;
  readonly workingMemory: WorkingMemory;
  readonly tenantId: string;
}

/** The most scopes a listing of resources names (the first ones in id order). */
export const MAX_LISTED_SCOPES = 200;

/** `memory://{tenant}/{conversation}/{agent}`, each id percent-encoded. */
export function memoryUri(scope: Scope): string {
  return `memory://${[scope.tenantId, scope.conversationId, scope.agentId].map(encodeURIComponent).join('/')}`;
}

/** Registers both resources on `server`. */
export function registerMemoryResources(server: McpServer, dependencies: MemoryResourcesDependencies): void {
  const { observationalMemory: memory, workingMemory, tenantId } = dependencies;
  const firstScopes = async () => (await memory.listScopes(tenantId, { limit: MAX_LISTED_SCOPES })).items;

  server.registerResource(
    'scope-memory',
    new ResourceTemplate('memory://{tenant}/{conversation}/{agent}', {
      list: async () => ({
        resources: (await firstScopes()).map((item) => ({
          uri: memoryUri(item.scope),
          name: `${item.scope.conversationId} / ${item.scope.agentId}`,
          description: `${item.observationCount} observations, ${item.workingMemoryEntries} working-memory entries`,
          mimeType: 'text/markdown',
        })),
      }),
    }),
    {
      title: 'Memory of a scope',
      description: 'Working memory and observational memory (reflection and observations) of one scope, as Markdown.',
      mimeType: 'text/markdown',
    },
    async (uri, variables) => {
      const scope = scopeOfUri(uri.href, variables);
      // Another tenant's memory does not exist, as far as this server can tell.
      if (scope.tenantId !== tenantId)
        throw new ResourceNotFoundError(uri.href, `No memory scope ${uri.href} is served here.`);
      return { contents: [{ uri: uri.href, mimeType: 'text/markdown', text: await scopeMarkdown(scope) }] };
    },
  );

  server.registerResource(
    'scopes',
    'memory://scopes',
    {
      title: 'Memory scopes',
      description:
        `The tenant's memory scopes (the first ${MAX_LISTED_SCOPES}, by conversation and agent ` + `id), as Markdown.`,
      mimeType: 'text/markdown',
    },
    async (uri) => {
      const scopes = await firstScopes();
      const lines = [
        `# Memory scopes of tenant ${tenantId}`,
        '',
        ...(scopes.length === 0
          ? ['No scope has memory yet.']
          : scopes.map(
              (item) =>
                `- ${memoryUri(item.scope)}: ${item.observationCount} observations, ` +
                `${item.workingMemoryEntries} working-memory entries, ${item.enabled ? 'enabled' : 'disabled'}, ` +
                `last activity ${item.lastActivityAt}`,
            )),
      ];
      return { contents: [{ uri: uri.href, mimeType: 'text/markdown', text: `${lines.join('\n')}\n` }] };
    },
  );

  async function scopeMarkdown(scope: Scope): Promise<string> {
    const [entries, exported] = await Promise.all([workingMemory.entries(scope), memory.export(scope, 'markdown')]);
    // Each key as the snippet shows it (JSON-quoted unless a plain name, so a line break or a
    // Markdown header cannot come through), in a code span no backtick of it can close.
    const working =
      entries.length === 0
        ? ['(none)']
        : entries.map(
            (entry) => `- ${codeSpan(workingMemoryKeyText(entry.key))}: ${stripInvisibleInJson(entry.valueJson)}`,
          );
    // A model reads it: memory text may not close a tag or write a template token, as in
    // `memory_context` and the snippets.
    return neutralizeMarkup([`## Working memory`, '', ...working, '', exported.content].join('\n'));
  }
}

/**
 * `text` as a Markdown code span (CommonMark): fenced by one backtick more than its longest
 * run of them, and padded with a space when it starts or ends with one, so no backtick in it
 * ends the span early.
 */
function codeSpan(text: string): string {
  let longest = 0;
  for (const run of text.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  const fence = '`'.repeat(longest + 1);
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${text}${pad}${fence}`;
}

/**
 * The scope a `memory://` URI names. A client's mistake (an id that is not a scope id, a
 * broken percent-encoding) is the protocol's "invalid params", not a server fault.
 */
function scopeOfUri(href: string, variables: Variables): Scope {
  const text = (name: string): string => {
    const value = variables[name];
    const raw = Array.isArray(value) ? value[0] : value;
    return decodeURIComponent(raw ?? '');
  };
  try {
    return resolveScope({ tenantId: text('tenant'), conversationId: text('conversation'), agentId: text('agent') });
  } catch (error) {
    const reason = HarnessMemoryError.isInstance(error)
      ? error.detail
      : error instanceof URIError
        ? 'an id in it is not valid percent-encoding'
        : undefined;
    if (reason === undefined) throw error;
    throw new ResourceNotFoundError(href, `No memory scope ${href}: ${reason}`);
  }
}
