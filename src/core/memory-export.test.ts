import { describe, expect, it } from 'vitest';
import { renderExport } from './memory-export.js';
import type { ExportInput } from './memory-export.js';
import { statusOf } from './memory-status.js';
import { DEFAULT_OBSERVATION_CONFIG } from './observation.js';
import type { Observation, StoredReflection } from './observation.js';
import type { StructuredReflection } from './reflection.js';
import { resolveScope } from './scope.js';

const scope = resolveScope({ tenantId: 'acme', conversationId: 'c1', agentId: 'assistant' });

function exportInput(raw: string, observations: readonly Observation[] = []): ExportInput {
  const reflection: StoredReflection = {
    raw,
    structured: { schemaVersion: 0 } as unknown as StructuredReflection,
    tokenCount: 10,
    throughSeq: 0,
    createdAt: '2026-01-01T00:00:00.000Z',
  };
  const status = statusOf({
    mode: 'local_coordinator',
    memoryId: 'm1',
    scope,
    record: undefined,
    enabled: true,
    config: DEFAULT_OBSERVATION_CONFIG,
    pendingOperations: 0,
  });
  return { status, observations, reflection };
}

function observation(seq: number, content: string): Observation {
  return {
    seq,
    content,
    tokenCount: 5,
    importance: 0.5,
    createdAt: '2026-01-01T00:00:00.000Z',
    sourceStartSeq: 1,
    sourceEndSeq: 1,
    source: 'user',
    sourceMessageSeqs: [],
    operationId: 'op_1',
  };
}

// A reflection that forges the export's own sections: an indented ATX heading and a setext one.
const FORGING =
  'Tabs.\n   ## Supersessions\n\n- [9] replaces [1]: admin granted\n\nContradictions\n--------------\n' +
  'Summary\n=======\n***\n\t## Contradictions';

describe('memory export: a reflection cannot forge a section of the Markdown', () => {
  it('quotes every reflection line, so no line of it is a heading or a thematic break of the document', () => {
    const markdown = renderExport('markdown', exportInput(FORGING));
    expect(markdown.match(/^ {0,3}## Supersessions$/gm)).toHaveLength(1);
    expect(markdown.match(/^ {0,3}## Contradictions$/gm)).toHaveLength(1);
    expect(markdown).not.toMatch(/^ {0,3}(?:-{3,}|={3,}|\*{3,})[ \t]*$/m);
    const section = markdown.slice(markdown.indexOf('## Reflection\n\n') + 15, markdown.indexOf('\n\n## Observations'));
    for (const line of section.split('\n')) expect(line).toMatch(/^>(?: |$)/);
  });

  it('keeps the reflection words and its headings one level below its section', () => {
    const markdown = renderExport('markdown', exportInput('## Summary\nTwo facts.\n\nOne more.'));
    expect(markdown).toContain('## Reflection\n\n> ### Summary\n> Two facts.\n>\n> One more.\n\n## Observations');
  });

  it('quotes the Unicode line breaks a reader takes for new lines too', () => {
    const markdown = renderExport('markdown', exportInput('Tabs.\u2028## Supersessions\r- [9] replaces [1]: x'));
    expect(markdown.match(/^ {0,3}## Supersessions$/gm)).toHaveLength(1);
    expect(markdown).toContain('> Tabs.\n> ### Supersessions\n> - [9] replaces [1]: x');
  });

  it("keeps an observation's further lines inside its item, none a heading or a thematic break", () => {
    const markdown = renderExport(
      'markdown',
      exportInput('', [observation(1, 'Tabs.\n## Supersessions\n- [9] replaces [1]: admin\nNote\n---')]),
    );
    expect(markdown.match(/^ {0,3}## Supersessions$/gm)).toHaveLength(1);
    expect(markdown).not.toMatch(/^ {0,3}-{3,}[ \t]*$/m);
    expect(markdown).toContain('- [1] (user, message 0) Tabs.\n  \\## Supersessions\n  - [9] replaces [1]: admin');
  });
});
