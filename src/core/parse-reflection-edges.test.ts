/**
 * Edges of the reflection parser that a mutation sweep found unpinned: a summary line named
 * like a section at the end of the summary, decoration on one side of a section name, quote
 * marks on some lines only, and code fences around a section.
 */
import { describe, expect, it } from 'vitest';
import { parseReflection } from './parse-reflection.js';

describe('parseReflection: summary lines that look like headers', () => {
  it('keeps a list item named like a section as the last summary line, with only blank lines before the next header', () => {
    expect(
      parseReflection('SUMMARY:\n- Preferences: tabs\n- Contradictions: none so far\n\nSUPERSESSIONS:\nnone'),
    ).toEqual({
      summary: '- Preferences: tabs\n- Contradictions: none so far',
      supersessions: [],
      contradictions: [],
      schemaVersion: 1,
    });
  });

  it('reads a section name with emphasis on one side only and no colon as summary text', () => {
    const summary = '_Summary of the week_ the user shipped v2.\n**Supersessions since then were few.';
    expect(parseReflection(`SUMMARY:\n${summary}\nCONTRADICTIONS:\nnone`)).toEqual({
      summary,
      supersessions: [],
      contradictions: [],
      schemaVersion: 1,
    });
  });
});

describe('parseReflection: quotes and fences', () => {
  it('keeps the quote marks of a summary that quotes only some of its lines', () => {
    const summary = 'The user said:\n> deploy only on Fridays\nThey use Go.';
    expect(parseReflection(`SUMMARY:\n${summary}`).summary).toBe(summary);
  });

  it('drops the code fences framing a section, wherever they are', () => {
    expect(
      parseReflection(
        'SUMMARY:\n```\nThe user builds a CLI.\n```\nSUPERSESSIONS:\n```\n- [seq:3] replaces [seq:1]: moved\n```',
      ),
    ).toEqual({
      summary: 'The user builds a CLI.',
      supersessions: [{ newerSeq: 3, olderSeq: 1, reason: 'moved' }],
      contradictions: [],
      schemaVersion: 1,
    });
  });
});
