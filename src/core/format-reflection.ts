/**
 * Writing a structured reflection back as the text the reflector is asked for.
 * @module
 */
import type { StructuredReflection } from './reflection.js';

/** `SUMMARY:` / `SUPERSESSIONS:` / `CONTRADICTIONS:` text that `parseReflection` reads back the same. */
export function formatReflection(reflection: StructuredReflection): string {
  const line = (text: string): string => (text === '' ? '' : `: ${text.replace(/\s+/g, ' ').trim()}`);
  return [
    'SUMMARY:',
    reflection.summary,
    '',
    'SUPERSESSIONS:',
    ...reflection.supersessions.map(
      (item) => `- [seq:${item.newerSeq}] replaces [seq:${item.olderSeq}]${line(item.reason)}`,
    ),
    '',
    'CONTRADICTIONS:',
    ...reflection.contradictions.map((item) => `- [seq:${item.seqA}] vs [seq:${item.seqB}]${line(item.detail)}`),
  ].join('\n');
}
