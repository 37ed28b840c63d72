import type { MemoryStatus } from './memory-status.js';
import { configToJson, observationToJson, statusToJson, structuredReflectionToJson } from './memory-status.js';
import type { Observation, StoredReflection } from './observation.js';
import { HarnessMemoryError } from './errors.js';

/** Formats `export` accepts. */
export type ExportFormat = 'json' | 'markdown';
/** The valid export formats, in the order error messages list them. */
export const EXPORT_FORMATS: readonly ExportFormat[] = ['json', 'markdown'];

/** Normalises a requested format: trimmed, lowercased, empty means `json`. */
export function parseExportFormat(format: unknown): ExportFormat {
  const value = typeof format === 'string' ? format.trim().toLowerCase() : format === undefined || format === null ? '' : String(format);
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
  if (reflection !== '') lines.push('## Reflection', '', reflection, '');
  lines.push('## Observations', '');
  if (input.observations.length === 0) lines.push('- (none)');
  for (const observation of input.observations) lines.push(`- [${observation.seq}] ${observation.content.replace(/\n/g, '\n  ')}`);
  return `${lines.join('\n')}\n`;
}
