import { describe, expect, it } from 'vitest';
import { parseReflection } from './parse-reflection.js';

const STRUCTURED = `SUMMARY:
User builds a Go CLI.
Prefers tabs.

SUPERSESSIONS:
- [seq:5] replaces [seq:2]: switched from npm to pnpm

CONTRADICTIONS:
- [seq:3] vs [seq:4]: deploy target is unclear`;

describe('parseReflection: legacy and empty', () => {
  it('returns an empty schema-0 reflection for blank output', () => {
    const empty = { summary: '', supersessions: [], contradictions: [], schemaVersion: 0 };
    expect(parseReflection('  \n ')).toEqual(empty);
  });

  it('treats text without a section header as the legacy summary', () => {
    expect(parseReflection('\n Summary of the work: user likes Go.\nSupersessions are none. \n')).toEqual({
      summary: 'Summary of the work: user likes Go.\nSupersessions are none.',
      supersessions: [],
      contradictions: [],
      schemaVersion: 0,
    });
  });
});

describe('parseReflection: section headers', () => {
  it('parses the three sections', () => {
    expect(parseReflection(STRUCTURED)).toEqual({
      summary: 'User builds a Go CLI.\nPrefers tabs.',
      supersessions: [{ newerSeq: 5, olderSeq: 2, reason: 'switched from npm to pnpm' }],
      contradictions: [{ seqA: 3, seqB: 4, detail: 'deploy target is unclear' }],
      schemaVersion: 1,
    });
  });

  it('accepts markdown headings, bold, any case and a colon inside or outside the emphasis', () => {
    const headers = [
      '**SUMMARY:**',
      '**Summary**:',
      '## SUMMARY',
      '## Summary:',
      'SUMMARY:',
      'Summary:',
      '__Summary__',
    ];
    for (const header of [...headers, 'summary']) {
      const parsed = parseReflection(`${header}\nThe summary.\n## Supersessions\n- [seq:2] replaces [seq:1]: why`);
      expect(parsed.schemaVersion, header).toBe(1);
      expect(parsed.summary, header).toBe('The summary.');
      expect(parsed.supersessions, header).toHaveLength(1);
    }
  });

  it('keeps text after the header on the same line', () => {
    expect(parseReflection('**SUMMARY:** User likes Go.\nMore.').summary).toBe('User likes Go.\nMore.');
    expect(parseReflection('SUMMARY: **Tabs** only').summary).toBe('**Tabs** only');
    expect(parseReflection('SUPERSESSIONS: - [seq:3] replaces [seq:1]: x').supersessions).toEqual([
      { newerSeq: 3, olderSeq: 1, reason: 'x' },
    ]);
  });

  it('does not take the title of a markdown heading as content', () => {
    expect(parseReflection('## Summary of decisions\nUses Go.').summary).toBe('Uses Go.');
  });

  it('does not treat a sentence starting with a section name as a header', () => {
    const body = 'First.\nSummary of the work is below.\nSupersessions happen.';
    expect(parseReflection(`SUMMARY:\n${body}`).summary).toBe(body);
  });

  it('keeps a summary line named like a section ("- Contradictions: none so far") in the summary', () => {
    const parsed = parseReflection(
      'SUMMARY:\n- Preferences: tabs\n- Contradictions: none so far\n- Deploy: staging only\n\nSUPERSESSIONS:\n\nCONTRADICTIONS:\n',
    );
    expect(parsed.summary).toBe('- Preferences: tabs\n- Contradictions: none so far\n- Deploy: staging only');
    expect(parsed.contradictions).toEqual([]);
  });

  it('keeps a summary line named like a section with text after it ("Contradictions: none so far.") in the summary (review finding 5)', () => {
    const summary =
      'The user prefers tabs.\nContradictions: none so far.\nThey deploy on Fridays and are allergic to peanuts.';
    expect(parseReflection(`SUMMARY:\n${summary}\n\nSUPERSESSIONS:\n\nCONTRADICTIONS:\n`)).toEqual({
      summary,
      supersessions: [],
      contradictions: [],
      schemaVersion: 1,
    });
    const none = 'The user prefers tabs.\nContradictions: none.\nThey deploy on Fridays.';
    expect(parseReflection(`SUMMARY:\n${none}\n\nCONTRADICTIONS:\n- [seq:1] vs [seq:2]: which day`)).toMatchObject({
      summary: none,
      contradictions: [{ seqA: 1, seqB: 2, detail: 'which day' }],
    });
    const labelled = 'The user prefers tabs.\nSupersessions: the move to spaces was reverted.\nThey use Go.';
    expect(parseReflection(`SUMMARY:\n${labelled}\nSUPERSESSIONS:\n- [seq:3] replaces [seq:1]: back to tabs`)).toEqual({
      summary: labelled,
      supersessions: [{ newerSeq: 3, olderSeq: 1, reason: 'back to tabs' }],
      contradictions: [],
      schemaVersion: 1,
    });
  });

  it('still reads a header followed on its line by a placeholder, a pair line, or a remark with nothing under it', () => {
    const parsed = parseReflection(
      'SUMMARY:\nThe user prefers tabs.\nSUPERSESSIONS: none\nCONTRADICTIONS: - [seq:3] vs [seq:4]: which day\n- [seq:5] vs [seq:6]',
    );
    expect(parsed).toEqual({
      summary: 'The user prefers tabs.',
      supersessions: [],
      contradictions: [
        { seqA: 3, seqB: 4, detail: 'which day' },
        { seqA: 5, seqB: 6, detail: '' },
      ],
      schemaVersion: 1,
    });
    expect(
      parseReflection(
        'SUMMARY:\nThe user prefers tabs.\n\nSUPERSESSIONS: none found.\n\nCONTRADICTIONS: None identified.\n\nLet me know if you need more.',
      ).summary,
    ).toBe('The user prefers tabs.');
    expect(
      parseReflection('SUMMARY:\nUses Go.\nSupersessions: one found.\n- [seq:2] replaces [seq:1]: x').supersessions,
    ).toEqual([{ newerSeq: 2, olderSeq: 1, reason: 'x' }]);
  });

  it('discards lines before the first header', () => {
    expect(parseReflection('Here is my reflection.\nSUMMARY:\nKept.').summary).toBe('Kept.');
  });

  it.each([
    ['numbered', '1. SUMMARY:\nUser prefers spaces.\n2. SUPERSESSIONS:\n- [seq:2] replaces [seq:1]: changed'],
    ['bulleted', '- SUMMARY: User prefers spaces.\n- SUPERSESSIONS:\n  - [seq:2] replaces [seq:1]: changed'],
    ['quoted whole', '> SUMMARY:\n> User prefers spaces.\n>\n> SUPERSESSIONS:\n> - [seq:2] replaces [seq:1]: changed'],
    ['bracketed', '[SUMMARY]\nUser prefers spaces.\n[SUPERSESSIONS]\n[seq:2] replaces [seq:1]: changed'],
    ['dashed', 'SUMMARY -\nUser prefers spaces.\nSUPERSESSIONS —\n[seq:2] replaces [seq:1]: changed'],
  ])('reads %s section headers', (_name, raw) => {
    expect(parseReflection(raw)).toEqual({
      summary: 'User prefers spaces.',
      supersessions: [{ newerSeq: 2, olderSeq: 1, reason: 'changed' }],
      contradictions: [],
      schemaVersion: 1,
    });
  });

  it('takes the text above the first header as the summary when there is no SUMMARY section', () => {
    expect(parseReflection('The user prefers spaces now.\n\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]')).toMatchObject(
      {
        summary: 'The user prefers spaces now.',
        supersessions: [{ newerSeq: 2, olderSeq: 1 }],
        schemaVersion: 1,
      },
    );
    expect(parseReflection('SUMMARY-wise, all is fine.').schemaVersion).toBe(0);
  });

  it('gives an empty summary when only other sections exist', () => {
    const parsed = parseReflection('CONTRADICTIONS:\n- [seq:1] vs [seq:2]: which db');
    expect(parsed.schemaVersion).toBe(1);
    expect(parsed.summary).toBe('');
    expect(parsed.contradictions).toHaveLength(1);
  });
});

describe('parseReflection: supersession and contradiction lines', () => {
  it('accepts bullets, numbering, spaced seq markers, both keywords and all separators', () => {
    const raw = [
      'SUPERSESSIONS:',
      '* [seq: 5] replaces [seq:2] - reason a',
      '• [ seq:6 ] SUPERSEDES [SEQ:3] — reason b',
      '1. [seq:7] replaces [seq:4]',
      '2) [seq:8]replaces[seq:1]: reason d',
    ].join('\n');
    expect(parseReflection(raw).supersessions).toEqual([
      { newerSeq: 5, olderSeq: 2, reason: 'reason a' },
      { newerSeq: 6, olderSeq: 3, reason: 'reason b' },
      { newerSeq: 7, olderSeq: 4, reason: '' },
      { newerSeq: 8, olderSeq: 1, reason: 'reason d' },
    ]);
  });

  it('reads the forms models write: emphasis, code marks, bare seqs, words in brackets, several older seqs, passive', () => {
    const raw = [
      'SUPERSESSIONS:',
      '- **[seq:2] replaces [seq:1]**: switched',
      '- `[seq:4] replaces [seq:3]`',
      '- [seq:6] (spaces) replaces [seq:5] (tabs): changed mind',
      '- seq 8 overrides seq 7',
      '– #10 supersedes #9: dash bullet',
      '- [seq:15] replaces [seq:12], [seq:13] and [seq:14]: all three',
      '- [seq:16] is replaced by [seq:20]: passive',
      'CONTRADICTIONS:',
      '- **[seq:30]** conflicts with **[seq:31]**: which day',
    ].join('\n');
    const parsed = parseReflection(raw);
    expect(parsed.supersessions).toEqual([
      { newerSeq: 2, olderSeq: 1, reason: 'switched' },
      { newerSeq: 4, olderSeq: 3, reason: '' },
      { newerSeq: 6, olderSeq: 5, reason: 'changed mind' },
      { newerSeq: 8, olderSeq: 7, reason: '' },
      { newerSeq: 10, olderSeq: 9, reason: 'dash bullet' },
      { newerSeq: 15, olderSeq: 12, reason: 'all three' },
      { newerSeq: 15, olderSeq: 13, reason: 'all three' },
      { newerSeq: 15, olderSeq: 14, reason: 'all three' },
      { newerSeq: 20, olderSeq: 16, reason: 'passive' },
    ]);
    expect(parsed.contradictions).toEqual([{ seqA: 30, seqB: 31, detail: 'which day' }]);
  });

  it('reads a reflection answered as JSON, and drops code fences and a closing remark', () => {
    expect(
      parseReflection(
        '```json\n{"summary": "User prefers spaces.", "supersessions": [{"newer": 2, "older": 1, "reason": "switched"}], ' +
          '"contradictions": [{"seq_a": 3, "seq_b": 4, "detail": "day"}]}\n```',
      ),
    ).toEqual({
      summary: 'User prefers spaces.',
      supersessions: [{ newerSeq: 2, olderSeq: 1, reason: 'switched' }],
      contradictions: [{ seqA: 3, seqB: 4, detail: 'day' }],
      schemaVersion: 1,
    });
    expect(parseReflection('```\nSUMMARY:\nUser prefers spaces.\n```').summary).toBe('User prefers spaces.');
    expect(parseReflection('SUMMARY:\nUser prefers spaces.\n\nLet me know if you want more detail!').summary).toBe(
      'User prefers spaces.',
    );
    expect(parseReflection('<think>\nweighing it\n</think>\nSUMMARY:\nUser prefers spaces.').summary).toBe(
      'User prefers spaces.',
    );
  });

  it('keeps a reason as written: its code marks, and a "#12" that is not a seq', () => {
    const parsed = parseReflection(
      'SUMMARY:\ns\nSUPERSESSIONS:\n- **[seq:9] replaces [seq:4]**: user now builds with `make __all__` (PR #12)',
    );
    expect(parsed.supersessions).toEqual([
      { newerSeq: 9, olderSeq: 4, reason: 'user now builds with `make __all__` (PR #12)' },
    ]);
    const summary = 'The user works on acme/api.\n\nNote: this project forbids force pushes to main.';
    expect(parseReflection(`SUMMARY:\n${summary}`).summary).toBe(summary);
  });

  it('accepts vs, vs. and versus in contradictions', () => {
    const raw = 'CONTRADICTIONS:\n- [seq:1] vs [seq:2]: a\n- [seq:3] vs. [seq:4] b\n- [seq:5] VERSUS [seq:6]';
    expect(parseReflection(raw).contradictions).toEqual([
      { seqA: 1, seqB: 2, detail: 'a' },
      { seqA: 3, seqB: 4, detail: 'b' },
      { seqA: 5, seqB: 6, detail: '' },
    ]);
  });

  it('ignores placeholders and malformed lines', () => {
    const raw = [
      'SUPERSESSIONS:',
      'None',
      '- (none)',
      '- [seq:x] replaces [seq:2]',
      '- [seq:0] replaces [seq:2]',
      '- [seq:-1] replaces [seq:2]',
      '- [seq:1.5] replaces [seq:2]',
      '- [seq:3] undoes [seq:2]',
      `- [seq:${'9'.repeat(20)}] replaces [seq:2]`,
      'CONTRADICTIONS:',
      '- [seq:1] replaces [seq:2]: wrong section keyword',
    ].join('\n');
    const parsed = parseReflection(raw);
    expect(parsed.supersessions).toEqual([]);
    expect(parsed.contradictions).toEqual([]);
  });

  it('drops exact duplicates and keeps self-references, which the store rejects and counts', () => {
    const raw = [
      'SUPERSESSIONS:',
      '- [seq:4] replaces [seq:4]: self',
      '- [seq:5] replaces [seq:2]: same',
      '- [seq:5] replaces [seq:2]: same',
      '- [seq:5] replaces [seq:2]: other reason',
      'CONTRADICTIONS:',
      '- [seq:3] vs [seq:3]: self',
      '- [seq:1] vs [seq:2]: d',
      '- [seq:1] vs [seq:2]: d',
    ].join('\n');
    const parsed = parseReflection(raw);
    expect(parsed.supersessions).toEqual([
      { newerSeq: 4, olderSeq: 4, reason: 'self' },
      { newerSeq: 5, olderSeq: 2, reason: 'same' },
      { newerSeq: 5, olderSeq: 2, reason: 'other reason' },
    ]);
    expect(parsed.contradictions).toEqual([
      { seqA: 3, seqB: 3, detail: 'self' },
      { seqA: 1, seqB: 2, detail: 'd' },
    ]);
  });

  it('strips invisible characters from the summary, reasons and details', () => {
    const raw = [
      'SUMMARY:',
      'Tabs\u200B only\u{E0041}',
      'SUPERSESSIONS:',
      '- [seq:2] replaces [seq:1]: new\u202E reason',
      'CONTRADICTIONS:',
      '- [seq:3] vs [seq:4]: de\uFEFFtail',
    ].join('\n');
    const parsed = parseReflection(raw);
    expect(parsed.summary).toBe('Tabs only');
    expect(parsed.supersessions[0]?.reason).toBe('new reason');
    expect(parsed.contradictions[0]?.detail).toBe('detail');
  });
});
