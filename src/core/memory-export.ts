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
import { REFLECTION_LINE_PREFIX } from './observation-snippet.js';
import { stripInvisible } from './sanitize-text.js';

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
      reflection_through_seq: input.reflection?.throughSeq ?? 0,
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
  if (reflection !== '') lines.push('## Reflection', '', ...quotedReflection(reflection), '');
  lines.push('## Observations', '');
  if (input.observations.length === 0) lines.push('- (none)');
  for (const observation of input.observations)
    lines.push(`- [${observation.seq}] (${describeProvenance(observation)}) ${itemText(observation.content)}`);
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

// A line that opens an ATX heading, indented or not (`## Summary`, a forged `   ## Supersessions`), with its marker.
const ATX_HEADING = /^[ \t]*#{1,6}(?:[ \t]+|$)/;
// A line that is a thematic break (`***`, `- - -`, `___`) or a setext underline (`===`, `---`)
// under the line before it: either makes a heading or a rule of the lines around it.
const RULE_LINE = /^[ \t]*(?:(?:[-*_][ \t]*){3,}|=+[ \t]*|-+[ \t]*)$/;

/**
 * The reflection's lines for the export, each quoted with `> ` as the snippet quotes them: a
 * quoted line belongs to the quote, so no line a reflector wrote (an indented `## Supersessions`,
 * a setext `Contradictions` over `---`) is a heading or a rule of the export, whose
 * `## Supersessions` and `## Contradictions` stay its only ones. Its own ATX headings
 * (`## Summary`) are put one level below its section (`### Summary`) and its rules escaped, so
 * inside the quote too it reads as one section.
 */
function quotedReflection(reflection: string): string[] {
  return stripInvisible(reflection)
    .split('\n')
    .map((line) => `${REFLECTION_LINE_PREFIX}${inertLine(line.replace(ATX_HEADING, '### '))}`.trimEnd());
}

/**
 * An observation as the text of its list item: further lines indented into the item, and a
 * line that would be a heading or a rule there escaped (`\## …`, `\---`).
 */
function itemText(content: string): string {
  const [first = '', ...rest] = stripInvisible(content).split('\n');
  return [first, ...rest.map((line) => `  ${ATX_HEADING.test(line) ? escapeFirst(line) : inertLine(line)}`)].join('\n');
}

/** `line`, with its first character escaped when the line is a thematic break or a setext underline. */
function inertLine(line: string): string {
  return RULE_LINE.test(line) ? escapeFirst(line) : line;
}

/** `line` with a backslash before its first character that is not a space or a tab. */
function escapeFirst(line: string): string {
  return line.replace(/^([ \t]*)/, '$1\\');
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
