import type { MemoryStatus } from './memory-status.js';
import {
  configToJson,
  describeProvenance,
  observationToJson,
  reflectionLinksToJson,
  statusToJson,
  structuredReflectionToJson,
} from './memory-status.js';
import type { Observation, StoredReflection } from './observation.js';
import { EMPTY_REFLECTION_LINKS } from './reflection-links.js';
import type { ReflectionLinks } from './reflection-links.js';
import { HarnessMemoryError } from './errors.js';

/** Formats `export` accepts. */
export type ExportFormat = 'json' | 'markdown';
/** The valid export formats, in the order error messages list them. */
export const EXPORT_FORMATS: readonly ExportFormat[] = ['json', 'markdown'];

/** Normalises a requested format: trimmed, lowercased, empty means `json`. */
export function parseExportFormat(format: unknown): ExportFormat {
  const value =
    typeof format === 'string'
      ? format.trim().toLowerCase()
      : format === undefined || format === null
        ? ''
        : String(format);
  if (value === '') return 'json';
  if (value === 'json' || value === 'markdown') return value;
  throw new HarnessMemoryError({
    code: 'EXPORT_INVALID',
    component: 'export',
    message: `unsupported export format "${value.slice(0, 40)}"; valid formats are ${EXPORT_FORMATS.join(', ')}.`,
    data: { format: value.slice(0, 40) },
  });
}

/** What an export is made of. */
export interface ExportInput {
  readonly status: MemoryStatus;
  readonly observations: readonly Observation[];
  readonly reflection: StoredReflection | null;
  /** The scope's active supersession set. @default none */
  readonly links?: ReflectionLinks;
}

/** Renders a scope's memory as pretty JSON or as the reference's Markdown. */
export function renderExport(format: ExportFormat, input: ExportInput): string {
  return format === 'json' ? renderJson(input) : renderMarkdown(input);
}

function renderJson(input: ExportInput): string {
  const structured = input.reflection?.structured;
  return JSON.stringify(
    {
      config: configToJson(input.status.config),
      observations: input.observations.map(observationToJson),
      reflection: input.reflection?.raw ?? '',
      structured_reflection: structured ? structuredReflectionToJson(structured) : null,
      reflection_links: reflectionLinksToJson(input.links ?? EMPTY_REFLECTION_LINKS),
      status: statusToJson(input.status),
    },
    null,
    2,
  );
}

function renderMarkdown(input: ExportInput): string {
  const { status } = input;
  const updated = status.updatedAt === null ? 'never' : `${status.updatedAt.slice(0, 19)}Z`;
  const lines = [
    '# Observational Memory Export',
    '',
    `- tenant_id: \`${status.scope.tenantId}\``,
    `- conversation_id: \`${status.scope.conversationId}\``,
    `- agent_id: \`${status.scope.agentId}\``,
    `- enabled: \`${status.enabled}\``,
    `- observations: \`${status.observationCount}\``,
    `- updated_at: \`${updated}\``,
    '',
  ];
  const reflection = input.reflection?.raw.trim() ?? '';
  // A reflection written under Markdown headings (`## Summary`, `## Supersessions`) keeps them
  // one level below its own section, so the export's `## Supersessions` and `## Contradictions`
  // stay its only ones.
  if (reflection !== '') lines.push('## Reflection', '', reflection.replace(/^#{1,6}[ \t]+/gm, '### '), '');
  lines.push('## Observations', '');
  if (input.observations.length === 0) lines.push('- (none)');
  for (const observation of input.observations)
    lines.push(
      `- [${observation.seq}] (${describeProvenance(observation)}) ${observation.content.replace(/\n/g, '\n  ')}`,
    );
  lines.push('', ...linkSections(input.links ?? EMPTY_REFLECTION_LINKS));
  return `${lines.join('\n')}\n`;
}

/** The supersession set as Markdown: `## Supersessions` and `## Contradictions`, each `- (none)` when empty. */
export function linkSections(links: ReflectionLinks): string[] {
  const lines = ['## Supersessions', ''];
  if (links.supersessions.length === 0) lines.push('- (none)');
  for (const item of links.supersessions)
    lines.push(
      `- [${item.newerSeq}] replaces ` +
        `[${item.olderSeq}]${oneLine(item.reason) === '' ? '' : `: ${oneLine(item.reason)}`}`,
    );
  lines.push('', '## Contradictions', '');
  if (links.contradictions.length === 0) lines.push('- (none)');
  for (const item of links.contradictions)
    lines.push(`- [${item.seqA}] vs [${item.seqB}]${oneLine(item.detail) === '' ? '' : `: ${oneLine(item.detail)}`}`);
  return lines;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
