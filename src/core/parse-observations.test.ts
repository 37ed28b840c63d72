import { describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_OBSERVATION_CHARS,
  DEFAULT_MAX_OBSERVATIONS,
  TRUNCATION_SUFFIX,
  isNothingToObserve,
  parseObservations,
} from './parse-observations.js';
import { parseReflection } from './parse-reflection.js';

describe('parseObservations: plain text', () => {
  it('returns nothing for empty or blank output', () => {
    expect(parseObservations('')).toEqual([]);
    expect(parseObservations(' \n\t\n ')).toEqual([]);
  });

  it('returns the whole trimmed text as one unscored observation without IMPORTANCE lines', () => {
    expect(parseObservations('\n User prefers tabs.\n\nUses pnpm.\n')).toEqual([
      { content: 'User prefers tabs.\n\nUses pnpm.', importance: null },
    ]);
  });

  it('does not treat IMPORTANCE in the middle of a line as a prefix', () => {
    expect(parseObservations('The IMPORTANCE: of tests is high')).toEqual([
      { content: 'The IMPORTANCE: of tests is high', importance: null },
    ]);
  });
});

describe('parseObservations: prefixed format', () => {
  it('starts an observation at every IMPORTANCE line, case-insensitively', () => {
    const raw = [
      'IMPORTANCE: 0.9',
      'User prefers tabs.',
      '',
      'importance:0.4',
      'Temporary branch is wip.',
      '  Importance :  1',
      'Never push to main.',
    ].join('\n');
    expect(parseObservations(raw)).toEqual([
      { content: 'User prefers tabs.', importance: 0.9 },
      { content: 'Temporary branch is wip.', importance: 0.4 },
      { content: 'Never push to main.', importance: 1 },
    ]);
  });

  it('keeps blank lines inside one observation', () => {
    expect(parseObservations('IMPORTANCE:0.7\nFirst paragraph.\n\n\nSecond paragraph.\n\n')).toEqual([
      { content: 'First paragraph.\n\n\nSecond paragraph.', importance: 0.7 },
    ]);
  });

  it('keeps text before the first IMPORTANCE line as its own unscored observation', () => {
    expect(parseObservations('Preamble here.\nIMPORTANCE: 0.5\nFact.')).toEqual([
      { content: 'Preamble here.', importance: null },
      { content: 'Fact.', importance: 0.5 },
    ]);
  });

  it('keeps an explicit zero as zero', () => {
    expect(parseObservations('IMPORTANCE: 0\nA\nIMPORTANCE: 0.0\nB')).toEqual([
      { content: 'A', importance: 0 },
      { content: 'B', importance: 0 },
    ]);
  });

  it('clamps scores to [0, 1]', () => {
    const parsed = parseObservations('IMPORTANCE: 7\nA\nIMPORTANCE: -0.3\nB\nIMPORTANCE: +.25\nC');
    expect(parsed.map((observation) => observation.importance)).toEqual([1, 0, 0.25]);
  });

  it('reads percentages and fractions as scores', () => {
    const parsed = parseObservations('IMPORTANCE: 80%\nA\nIMPORTANCE: 3/10\nB');
    expect(parsed.map((observation) => observation.importance)).toEqual([0.8, 0.3]);
  });

  it('uses text after the number as the first content line', () => {
    const raw = 'IMPORTANCE: 0.8 User prefers tabs.\nAlso in Makefiles.\nIMPORTANCE: 0.6 — Uses pnpm.';
    expect(parseObservations(raw)).toEqual([
      { content: 'User prefers tabs.\nAlso in Makefiles.', importance: 0.8 },
      { content: 'Uses pnpm.', importance: 0.6 },
    ]);
  });

  it('leaves non-numeric scores unscored, reads level words, and never produces NaN or infinities', () => {
    const values = ['NaN', 'Infinity', 'high', '', '9'.repeat(400)];
    const raw = values.map((value, index) => `IMPORTANCE: ${value}\n${'ABCDE'[index]}`).join('\n');
    expect(parseObservations(raw)).toEqual([
      { content: 'A', importance: null },
      { content: 'B', importance: null },
      { content: 'C', importance: 0.8 },
      { content: 'D', importance: null },
      { content: 'E', importance: null },
    ]);
  });

  it('gives each score to the text above it when every score follows its text', () => {
    expect(
      parseObservations(
        'User must never push directly to main.\nIMPORTANCE: 1.0\nSOURCE: 3\n\nUser had coffee.\nIMPORTANCE: 0.1',
      ),
    ).toEqual([
      { content: 'User must never push directly to main.', importance: 1, sourceSeqs: [3] },
      { content: 'User had coffee.', importance: 0.1 },
    ]);
    expect(parseObservations('Single fact.\nIMPORTANCE: 0.7')).toEqual([{ content: 'Single fact.', importance: 0.7 }]);
    // A preamble set apart by a blank line, and text after the last score, keep the usual reading.
    expect(parseObservations('Intro text.\n\nIMPORTANCE: 0.9\nA\n\nIMPORTANCE: 0.3\nB')).toEqual([
      { content: 'Intro text.', importance: null },
      { content: 'A', importance: 0.9 },
      { content: 'B', importance: 0.3 },
    ]);
  });

  it('reads a decimal comma and an exponent as the whole score', () => {
    expect(parseObservations('IMPORTANCE: 0,9\nUser must never push to main.\n\nIMPORTANCE: 9e-1\nUse pnpm.')).toEqual([
      { content: 'User must never push to main.', importance: 0.9 },
      { content: 'Use pnpm.', importance: 0.9 },
    ]);
  });

  it('reads a level word followed by a sentence as content, and one set apart as a score', () => {
    expect(
      parseObservations('IMPORTANCE: 0.7\nRelease checklist:\nImportance: high for security fixes, low for docs'),
    ).toEqual([{ content: 'Release checklist:\nImportance: high for security fixes, low for docs', importance: 0.7 }]);
    expect(parseObservations('Importance: High. User prefers tabs\n\nIMPORTANCE: low - Uses vim')).toEqual([
      { content: 'User prefers tabs', importance: 0.8 },
      { content: 'Uses vim', importance: 0.2 },
    ]);
  });

  it('reads a line starting with "Importance" but holding no score as content, not as a new observation', () => {
    expect(parseObservations('IMPORTANCE: User prefers tabs\nin Go files.')).toEqual([
      { content: 'IMPORTANCE: User prefers tabs\nin Go files.', importance: null },
    ]);
    expect(
      parseObservations('IMPORTANCE: 0.7\nThe user explained why.\nImportance: tests must pass before a merge.'),
    ).toEqual([{ content: 'The user explained why.\nImportance: tests must pass before a merge.', importance: 0.7 }]);
  });

  it('drops observations without content and returns nothing when none remain', () => {
    const kept = [{ content: 'Kept.', importance: 0.4 }];
    expect(parseObservations('IMPORTANCE:0.9\nIMPORTANCE: 0.4\nKept.')).toEqual(kept);
    expect(parseObservations('IMPORTANCE: 0.9\n\nIMPORTANCE: 0.2\n  ')).toEqual([]);
  });

  it('accepts CRLF line endings', () => {
    expect(parseObservations('IMPORTANCE: 0.5\r\nA\r\nIMPORTANCE: 0.6\r\nB')).toEqual([
      { content: 'A', importance: 0.5 },
      { content: 'B', importance: 0.6 },
    ]);
  });
});

describe('parseObservations: junk bounds', () => {
  it('exports the default limits', () => {
    expect(DEFAULT_MAX_OBSERVATIONS).toBe(50);
    expect(DEFAULT_MAX_OBSERVATION_CHARS).toBe(2000);
  });

  it('keeps only the first maxObservations observations', () => {
    const raw = Array.from({ length: 80 }, (_, index) => `IMPORTANCE: 0.5\nfact ${index}`).join('\n');
    const parsed = parseObservations(raw);
    expect(parsed).toHaveLength(50);
    expect(parsed.at(-1)?.content).toBe('fact 49');
    expect(parseObservations(raw, { maxObservations: 2 }).map((observation) => observation.content)).toEqual([
      'fact 0',
      'fact 1',
    ]);
  });

  it('cuts long content at the last whitespace in the final 10% and marks it', () => {
    const content = `${'word '.repeat(30)}tail`;
    const [parsed] = parseObservations(content, { maxObservationChars: 100 });
    expect(parsed?.content).toBe(`${'word '.repeat(19)}word${TRUNCATION_SUFFIX}`);
  });

  it('cuts at exactly the limit on a code point boundary when there is no whitespace', () => {
    const [parsed] = parseObservations('😀'.repeat(30), { maxObservationChars: 10 });
    expect(parsed?.content).toBe(`${'😀'.repeat(10)}${TRUNCATION_SUFFIX}`);
  });

  it('leaves content at the limit untouched', () => {
    expect(parseObservations('x'.repeat(2000))[0]?.content).toBe('x'.repeat(2000));
  });

  it('keeps at most three consecutive copies of a repeated line', () => {
    const raw = `IMPORTANCE: 0.5\nstart\n${'  same line\n'.repeat(10)}end\nsame line`;
    expect(parseObservations(raw)[0]?.content).toBe(`start\n${'  same line\n'.repeat(3)}end\nsame line`);
  });

  it('strips invisible characters from content', () => {
    expect(parseObservations('IMPORTANCE: 0.5\nUser\u200B prefers\u202E tabs\u{E0041}.')).toEqual([
      { content: 'User prefers tabs.', importance: 0.5 },
    ]);
  });
});

describe('parseObservations: real-world answer shapes (issue 12)', () => {
  type Expected = Array<{ content: string; importance: number | null; sourceSeqs?: number[] }>;
  const tabs = 'User prefers tabs over spaces.';
  const go = 'The project is written in Go.';
  // Answers as models write them, large hosted ones and small local ones (llama 3, qwen 2.5, phi).
  const shapes: Array<[name: string, answer: string, expected: Expected]> = [
    [
      'the exact format',
      `IMPORTANCE:0.9\n${tabs}\n\nIMPORTANCE:0.5\n${go}`,
      [
        { content: tabs, importance: 0.9 },
        { content: go, importance: 0.5 },
      ],
    ],
    [
      'bold label, colon inside',
      `**IMPORTANCE:** 0.9\n${tabs}\n\n**IMPORTANCE:** 0.5\n${go}`,
      [
        { content: tabs, importance: 0.9 },
        { content: go, importance: 0.5 },
      ],
    ],
    ['bold label, colon outside', `**Importance**: 0.9\n${tabs}`, [{ content: tabs, importance: 0.9 }]],
    [
      'scored bullets',
      `Observations:\n- 0.9: ${tabs}\n- .5 | ${go}\n* **0.4**: The user runs Linux.`,
      [
        { content: tabs, importance: 0.9 },
        { content: go, importance: 0.5 },
        { content: 'The user runs Linux.', importance: 0.4 },
      ],
    ],
    [
      'bracketed scores on bullets',
      `- [0.9] ${tabs}\n- (0.5) ${go}`,
      [
        { content: tabs, importance: 0.9 },
        { content: go, importance: 0.5 },
      ],
    ],
    [
      'a Markdown table',
      `| Importance | Observation | Source |\n| ---: | --- | --- |\n| 0.9 | ${tabs} | 3 |\n| high | ${go} |  |\n\nLet me know if you need more.`,
      [
        { content: tabs, importance: 0.9, sourceSeqs: [3] },
        { content: go, importance: 0.8 },
      ],
    ],
    [
      'a table with the text first',
      `| Fact | Score |\n|---|---|\n| ${tabs} | 0.9 |`,
      [{ content: tabs, importance: 0.9 }],
    ],
    ['bold label and score', `**Importance: 0.9**\n${tabs}`, [{ content: tabs, importance: 0.9 }]],
    [
      'numbered list',
      `1. IMPORTANCE: 0.9\n   ${tabs}\n2. IMPORTANCE: 0.5\n   ${go}`,
      [
        { content: tabs, importance: 0.9 },
        { content: go, importance: 0.5 },
      ],
    ],
    [
      'numbered list with parentheses',
      `1) Importance: 0.9 - ${tabs}\n2) Importance: 0.5 - ${go}`,
      [
        { content: tabs, importance: 0.9 },
        { content: go, importance: 0.5 },
      ],
    ],
    ['title case label', `Importance: 0.9\n${tabs}`, [{ content: tabs, importance: 0.9 }]],
    [
      'bulleted markers',
      `- IMPORTANCE: 0.9\n  ${tabs}\n- IMPORTANCE: 0.5\n  ${go}`,
      [
        { content: tabs, importance: 0.9 },
        { content: go, importance: 0.5 },
      ],
    ],
    ['bulleted content under the marker', `IMPORTANCE: 0.9\n- ${tabs}`, [{ content: tabs, importance: 0.9 }]],
    [
      'blank lines around the content',
      `IMPORTANCE: 0.9\n\n${tabs}\n\n\nIMPORTANCE: 0.5\n\n${go}\n`,
      [
        { content: tabs, importance: 0.9 },
        { content: go, importance: 0.5 },
      ],
    ],
    [
      'a preamble that is not stored',
      `Here are the observations:\n\nIMPORTANCE: 0.9\n${tabs}`,
      [{ content: tabs, importance: 0.9 }],
    ],
    [
      'a chatty preamble and a heading',
      `Sure! Here is the memory update.\n\n## Observations\n\nIMPORTANCE: 0.9\n${tabs}`,
      [{ content: tabs, importance: 0.9 }],
    ],
    ['a markdown heading as the marker', `### Importance: 0.9\n${tabs}`, [{ content: tabs, importance: 0.9 }]],
    [
      'a bracketed marker with the text after it',
      `[IMPORTANCE: 0.9] ${tabs}\n[IMPORTANCE: 0.5] ${go}`,
      [
        { content: tabs, importance: 0.9 },
        { content: go, importance: 0.5 },
      ],
    ],
    [
      'the score at the end of each bullet',
      `- ${tabs} (importance: 0.9)\n- ${go} (importance: 0.5)`,
      [
        { content: tabs, importance: 0.9 },
        { content: go, importance: 0.5 },
      ],
    ],
    ['an equals sign and a percentage', `IMPORTANCE = 90%\n${tabs}`, [{ content: tabs, importance: 0.9 }]],
    ['a score out of ten', `Importance: 9/10\n${tabs}`, [{ content: tabs, importance: 0.9 }]],
    [
      'a level word',
      `Importance: High\n${tabs}\nImportance: low\n${go}`,
      [
        { content: tabs, importance: 0.8 },
        { content: go, importance: 0.2 },
      ],
    ],
    [
      'an "Observation:" label on the content',
      `IMPORTANCE: 0.9\nObservation: ${tabs}`,
      [{ content: tabs, importance: 0.9 }],
    ],
    [
      'a content line starting with the word Importance',
      `IMPORTANCE: 0.9\n${tabs}\nImportance of this: the user insisted twice.`,
      [{ content: `${tabs}\nImportance of this: the user insisted twice.`, importance: 0.9 }],
    ],
    [
      'cited sources',
      `IMPORTANCE: 0.9\nSOURCE: 12, 14\n${tabs}\n\nIMPORTANCE: 0.5\n${go}\nSources: [seq:3]-[seq:5]`,
      [
        { content: tabs, importance: 0.9, sourceSeqs: [12, 14] },
        { content: go, importance: 0.5, sourceSeqs: [3, 4, 5] },
      ],
    ],
    [
      'sources on the marker line',
      `IMPORTANCE: 0.9 | SOURCE: 7\n${tabs}`,
      [{ content: tabs, importance: 0.9, sourceSeqs: [7] }],
    ],
    [
      'sources written before their scores, each with the observation that follows it',
      `SOURCE: 1\nIMPORTANCE: 0.9\n${tabs}\n\nSOURCE: 2\nIMPORTANCE: 0.5\n${go}`,
      [
        { content: tabs, importance: 0.9, sourceSeqs: [1] },
        { content: go, importance: 0.5, sourceSeqs: [2] },
      ],
    ],
    [
      'scores after their text, under a preamble that is not stored',
      `Here are the observations:\n${tabs}\nIMPORTANCE: 0.9\n${go}\nIMPORTANCE: 0.4`,
      [
        { content: tabs, importance: 0.9 },
        { content: go, importance: 0.4 },
      ],
    ],
    [
      'a bare NONE above scored observations, which is not one itself',
      `NONE\nIMPORTANCE: 0.9\n${tabs}`,
      [{ content: tabs, importance: 0.9 }],
    ],
    [
      '"nothing new, except" a fact scored at its end',
      'Nothing new, except:\n- The user moved to Berlin (importance: 0.9)',
      [{ content: 'The user moved to Berlin', importance: 0.9 }],
    ],
    [
      'a source line that cites nothing is dropped, not kept as text',
      `IMPORTANCE: 0.9\nSOURCE: none\n${tabs}\n\nIMPORTANCE: 0.5\nSOURCE: 0\n${go}\n\nIMPORTANCE: 0.4 | SOURCE: n/a\nAlso this.\n\nIMPORTANCE: 0.3\nSources:\nAnd that.`,
      [
        { content: tabs, importance: 0.9 },
        { content: go, importance: 0.5 },
        { content: 'Also this.', importance: 0.4 },
        { content: 'And that.', importance: 0.3 },
      ],
    ],
    [
      'a source line that is prose stays content',
      `IMPORTANCE: 0.5\n${go}\nSource: the README in the repository root.`,
      [{ content: `${go}\nSource: the README in the repository root.`, importance: 0.5 }],
    ],
    [
      'a code fence around the answer',
      `\`\`\`\nIMPORTANCE: 0.9\n${tabs}\n\`\`\``,
      [{ content: tabs, importance: 0.9 }],
    ],
    [
      'no scores at all, as a list',
      `Observations:\n- ${tabs}\n- ${go}`,
      [
        { content: tabs, importance: null },
        { content: go, importance: null },
      ],
    ],
    ['a bare number after the label', `Importance 0.9\n${tabs}`, [{ content: tabs, importance: 0.9 }]],
    ['nothing to remember', 'NONE', []],
    ['nothing to remember, in words', 'No new observations.', []],
    // Found by a review of what hosted and local models write (2026-12-06).
    [
      "a reasoning model's thinking and the prompt's wrapper echoed",
      `<think>\nThe user states a preference. High importance.\n</think>\n\n<observations>\nIMPORTANCE: 0.9\nSOURCE: 1\n${tabs}\n</observations>`,
      [{ content: tabs, importance: 0.9, sourceSeqs: [1] }],
    ],
    [
      'a closing remark to the reader',
      `IMPORTANCE: 0.9\n${tabs}\n\nLet me know if you would like me to adjust anything!`,
      [{ content: tabs, importance: 0.9 }],
    ],
    [
      'a note after a separator',
      `IMPORTANCE: 0.9\n${tabs}\n\n---\n*These observations capture the durable facts.*`,
      [{ content: tabs, importance: 0.9 }],
    ],
    [
      'a JSON list, fenced',
      '```json\n[{"importance": 0.9, "source": [1], "observation": "' +
        tabs +
        '"}, {"importance": 0.5, "observation": "' +
        go +
        '"}]\n```',
      [
        { content: tabs, importance: 0.9, sourceSeqs: [1] },
        { content: go, importance: 0.5 },
      ],
    ],
    [
      'the same block twice',
      `IMPORTANCE: 0.7\nSOURCE: 1\n${tabs}\n\nIMPORTANCE: 0.9\nSOURCE: 3\n${tabs.toUpperCase()}`,
      [{ content: tabs, importance: 0.9, sourceSeqs: [1, 3] }],
    ],
    [
      'a source with the role after it',
      `IMPORTANCE: 0.95\nSOURCE: 1 (user)\n${tabs}`,
      [{ content: tabs, importance: 0.95, sourceSeqs: [1] }],
    ],
    [
      'a source in words',
      `IMPORTANCE: 0.9\nSOURCE: transcript seq 3.\n${tabs}`,
      [{ content: tabs, importance: 0.9, sourceSeqs: [3] }],
    ],
    [
      '"Importance score" labels',
      `Importance score: 0.9\n${tabs}\n\nImportance score: 0.4\n${go}`,
      [
        { content: tabs, importance: 0.9 },
        { content: go, importance: 0.4 },
      ],
    ],
    ['a level word after the number', `IMPORTANCE: 0.8 (high)\n${tabs}`, [{ content: tabs, importance: 0.8 }]],
    ['a full-width colon', `IMPORTANCE：0.9\n${tabs}`, [{ content: tabs, importance: 0.9 }]],
    [
      'white-circle bullets',
      `◦ IMPORTANCE: 0.9\n  ${tabs}\n◦ IMPORTANCE: 0.5\n  ${go}`,
      [
        { content: tabs, importance: 0.9 },
        { content: go, importance: 0.5 },
      ],
    ],
    [
      '"Observation N" labels over the blocks',
      `**Observation 1**\nIMPORTANCE: 0.9\n${tabs}\n\n**Observation 2**\nIMPORTANCE: 0.5\n${go}`,
      [
        { content: tabs, importance: 0.9 },
        { content: go, importance: 0.5 },
      ],
    ],
    [
      'a preamble without a colon',
      `Based on the transcript, I identified one durable fact.\n\nIMPORTANCE: 0.9\n${tabs}`,
      [{ content: tabs, importance: 0.9 }],
    ],
    ['bold text', `IMPORTANCE: 0.9\n**${tabs}**`, [{ content: tabs, importance: 0.9 }]],
    [
      'scores out of ten',
      `IMPORTANCE: 8\n${tabs}\n\nIMPORTANCE: 3\n${go}`,
      [
        { content: tabs, importance: 0.8 },
        { content: go, importance: 0.3 },
      ],
    ],
    [
      'JSON scores out of ten',
      `[{"importance": 9, "observation": "${tabs}"}, {"importance": 4, "observation": "${go}"}]`,
      [
        { content: tabs, importance: 0.9 },
        { content: go, importance: 0.4 },
      ],
    ],
    [
      'JSON scores in percent, written with %',
      `{"observations": [{"score": "85%", "text": "${tabs}"}, {"score": "0.5", "fact": "${go}"}]}`,
      [
        { content: tabs, importance: 0.85 },
        { content: go, importance: 0.5 },
      ],
    ],
    [
      'a whole number among fractions, clamped as before',
      `IMPORTANCE: 2\n${tabs}\n\nIMPORTANCE: 0.5\n${go}`,
      [
        { content: tabs, importance: 1 },
        { content: go, importance: 0.5 },
      ],
    ],
  ];

  it.each(shapes)('reads %s', (_name, answer, expected) => {
    expect(parseObservations(answer)).toEqual(expected);
  });

  it('merges repeats before the count limit, so a degenerate answer leaves room for the other facts', () => {
    const answer = [
      ...Array.from({ length: 60 }, () => 'IMPORTANCE: 0.5\nThe build uses make.'),
      'IMPORTANCE: 0.9\nUser name is Ana.',
    ].join('\n\n');
    expect(parseObservations(answer)).toEqual([
      { content: 'The build uses make.', importance: 0.5 },
      { content: 'User name is Ana.', importance: 0.9 },
    ]);
  });

  it('keeps legitimate text that looks like the forms it drops (review of the parser changes)', () => {
    const kept: Array<[answer: string, content: string]> = [
      [
        'IMPORTANCE: 0.9\nProduction deploys need approval from Dana.\n\nNote: this applies to the payments service too.',
        'Production deploys need approval from Dana.\n\nNote: this applies to the payments service too.',
      ],
      [
        'IMPORTANCE: 0.9\nTwo repos must never be force-pushed.\n\nThese are the only repos with branch protection off.',
        'Two repos must never be force-pushed.\n\nThese are the only repos with branch protection off.',
      ],
      [
        'IMPORTANCE: 0.8\nStaging is reset nightly.\n\nIf you need data to survive, snapshot it to s3://acme-snap first.',
        'Staging is reset nightly.\n\nIf you need data to survive, snapshot it to s3://acme-snap first.',
      ],
      [
        "IMPORTANCE: 0.8\nUser's log pipeline strips <think> blocks before indexing.",
        "User's log pipeline strips <think> blocks before indexing.",
      ],
      [
        'The user wants these checks run before every release of the mobile app:\n- lint\n- unit tests',
        'The user wants these checks run before every release of the mobile app:\n- lint\n- unit tests',
      ],
      // Whole numbers in brackets cite observations (the snippet's `- [3] text`), and a dose is no score.
      ['IMPORTANCE: 0.8\nKnown facts:\n- [3] The build uses Bazel.', 'Known facts:\n- [3] The build uses Bazel.'],
      ['IMPORTANCE: 0.7\nDose notes:\n- 0.5 mg of melatonin at night', 'Dose notes:\n- 0.5 mg of melatonin at night'],
      // Lists and tables inside an observation are its content (review of the shapes' change).
      [
        'IMPORTANCE: 0.7\nRelease plan:\n- 1.0 - ships in May\n- 0.9 - beta',
        'Release plan:\n- 1.0 - ships in May\n- 0.9 - beta',
      ],
      ['IMPORTANCE: 0.6\nBetas:\n- 0.9: beta one\n- 0.8: beta two', 'Betas:\n- 0.9: beta one\n- 0.8: beta two'],
      [
        '| Date | Weight | Notes |\n| --- | --- | --- |\n| 2026-05-01 | 81 kg | after holiday |',
        '| Date | Weight | Notes |\n| --- | --- | --- |\n| 2026-05-01 | 81 kg | after holiday |',
      ],
      [
        '| Task | Priority | Notes |\n|---|---|---|\n| Fix login | 0.8 | blocks release |',
        '| Task | Priority | Notes |\n|---|---|---|\n| Fix login | 0.8 | blocks release |',
      ],
      [
        'IMPORTANCE: 0.6\n| Service | Owner |\n| --- | --- |\n| api | Dana |',
        '| Service | Owner |\n| --- | --- |\n| api | Dana |',
      ],
    ];
    for (const [answer, content] of kept)
      expect(
        parseObservations(answer).map((item) => item.content),
        answer,
      ).toEqual([content]);
    expect(isNothingToObserve('No information about EU customers may leave the eu-west-1 region.')).toBe(false);
    expect(parseObservations('No information about EU customers may leave the eu-west-1 region.')).toHaveLength(1);
  });

  it('covers at least twenty shapes', () => {
    expect(shapes.length).toBeGreaterThanOrEqual(20);
  });

  it('says when an answer means "nothing to remember", and only then', () => {
    for (const answer of [
      'NONE',
      'None.',
      '**NONE**',
      'No observations.',
      'Nothing to observe.',
      'N/A',
      'NONE\n\nThe segment only contains greetings; nothing durable was discussed.',
      'There are no new durable facts in this segment.',
      'Nothing in this segment is worth remembering.',
      "I didn't find anything worth remembering in this segment.",
      '[]',
      '```json\n[]\n```',
      '<think>\nOnly greetings here.\n</think>\nNONE',
    ])
      expect(isNothingToObserve(answer), answer).toBe(true);
    for (const answer of [
      '',
      'None of the tests pass.',
      'IMPORTANCE: 0.9\nNONE',
      'There are no tests in the repo yet.',
    ])
      expect(isNothingToObserve(answer), answer).toBe(false);
  });

  it('takes "nothing" with a reason after it as nothing, but not a fact that starts with the word', () => {
    for (const answer of [
      'NONE - the segment is small talk, nothing durable.',
      'None. The user only said hello.',
      'NONE (small talk only)',
      'Nothing new to record.',
      'No new observations: the user said thanks.',
      '**None** — greetings only',
    ]) {
      expect(isNothingToObserve(answer), answer).toBe(true);
      expect(parseObservations(answer), answer).toEqual([]);
    }
    for (const answer of [
      'None of the tests pass on Windows.',
      'Nothing should be deployed on Fridays.',
      'IMPORTANCE: 0.9\nNONE - the user has no deadline',
    ])
      expect(isNothingToObserve(answer), answer).toBe(false);
  });

  it('keeps a fact given after "nothing" as an unscored observation (review finding 3)', () => {
    for (const answer of [
      'No new observations, but the user said the deadline is Friday.',
      'Nothing new to record, except that the user moved the deadline to Friday.',
      'There are no new durable facts apart from one: the deadline moved to Friday.',
      'N/A - but note: user is allergic to peanuts',
      'No new facts; the user reconfirmed they are allergic to peanuts.',
      'NONE\n\nHowever, the user mentioned they switched to Postgres.',
    ]) {
      expect(isNothingToObserve(answer), answer).toBe(false);
      expect(parseObservations(answer), answer).toEqual([{ content: answer, importance: null }]);
    }
    expect(parseObservations('Nothing new, except:\n- The user moved to Berlin.')).toEqual([
      { content: 'The user moved to Berlin.', importance: null },
    ]);
  });

  it('still takes "nothing" with only a reason, or a note to the reader, after it as nothing', () => {
    for (const answer of [
      'NONE - small talk only',
      'Nothing to observe.',
      'Nothing to note.',
      'No new observations: the user only greeted',
      'NONE; small talk only',
      'Nothing of note; the user said thanks.',
      'NONE\n\nNote: I skipped the greetings.',
    ]) {
      expect(isNothingToObserve(answer), answer).toBe(true);
      expect(parseObservations(answer), answer).toEqual([]);
    }
  });
});

describe('parseObservations: score spellings (review finding 8)', () => {
  const vim = 'User uses vim.';

  it.each([
    ['HIGH (0.9)', 0.9],
    ['0.85 (critical constraint)', 0.85],
    ['medium-high', 0.65],
    ['medium to high', 0.65],
    ['Very high', 0.9],
    ['fairly low', 0.3],
    ['very critical', 1],
    ['high priority', 0.8],
    ['high - 0.9', 0.9],
    ['0.9 - high', 0.9],
    ['~0.8', 0.8],
    ['about 0.7', 0.7],
    ['9 out of 10', 0.9],
  ])('reads "IMPORTANCE: %s" whole, none of it left in the text', (score, importance) => {
    expect(parseObservations(`IMPORTANCE: ${score}\n${vim}`)).toEqual([{ content: vim, importance }]);
  });

  it.each([
    ['Importance - 0.9', 0.9],
    ['IMPORTANCE (0.9):', 0.9],
    ['IMPORTANCE (high)', 0.8],
    ['IMPORTANCE：０．９', 0.9],
    ['ＩＭＰＯＲＴＡＮＣＥ： 0.7', 0.7],
  ])('reads the marker "%s"', (marker, importance) => {
    expect(parseObservations(`${marker}\n${vim}`)).toEqual([{ content: vim, importance }]);
  });

  it('reads a marker line and its content on one line with a bracketed score', () => {
    expect(parseObservations(`IMPORTANCE (0.9): ${vim}\nIMPORTANCE: HIGH (0.7) - Uses Go.`)).toEqual([
      { content: vim, importance: 0.9 },
      { content: 'Uses Go.', importance: 0.7 },
    ]);
  });

  it('drops a marker whose score cannot be read, with a null importance', () => {
    for (const score of ['???', 'x.x', 'N/A', 'TBD'])
      expect(parseObservations(`IMPORTANCE: ${score}\n${vim}`), score).toEqual([{ content: vim, importance: null }]);
  });

  it('keeps text that only mentions importance as text', () => {
    for (const line of [
      'Importance (as the user put it): tests come first.',
      'Importance - it matters that CI stays green.',
      'Importance-weighted recency ranks the snippet.',
      'Importance (1) tests first, (2) docs.',
      'IMPORTANCE: low-cost hosting is preferred',
      'WICHTIGKEIT: 0.9',
    ])
      expect(parseObservations(`${line}\n${vim}`), line).toEqual([{ content: `${line}\n${vim}`, importance: null }]);
  });
});

describe('parseObservations: long runs of white space', () => {
  // Once quadratic: 3.3 s for a marker followed by 50,000 spaces, a bracket and 50,000 more.
  it('reads a marker line with 200,000 spaces in it in linear time, keeping the text as written', () => {
    const spaces = ' '.repeat(200_000);
    expect(parseObservations(`IMPORTANCE${spaces}(${spaces}\nUser uses vim.`)).toHaveLength(1);
    expect(parseObservations(`IMPORTANCE 0.9${spaces}x\nUser uses vim.`)).toHaveLength(1);
    expect(parseObservations(`IMPORTANCE:   0.9   User  uses   vim.`)).toEqual([
      { content: 'User  uses   vim.', importance: 0.9 },
    ]);
  });
});

describe('parseObservations: SOURCE lists a model wrote to be slow (attack review)', () => {
  // Once exponential: every `seq 1 ` doubled the time of a line that did not match; 26 froze the server 12 s.
  it('reads a SOURCE line of hundreds of `seq 1 ` that ends in junk at once, citing nothing from it', () => {
    for (const word of ['seq 1 ', 'seq: 1 ', 'msgs 1 ', '#1 - ']) {
      const answer = `IMPORTANCE: 0.9\nSOURCE: ${word.repeat(400)}!x\nUser uses vim.`;
      const [first] = parseObservations(answer);
      expect(first?.sourceSeqs ?? [], word).toEqual([]);
    }
  });

  it('still reads the lists models write', () => {
    const cited = (list: string) =>
      parseObservations(`IMPORTANCE: 0.9\nSOURCE: ${list}\nUser uses vim.`)[0]?.sourceSeqs;
    expect(cited('3, 5')).toEqual([3, 5]);
    expect(cited('seq 3 and seq: 5')).toEqual([3, 5]);
    expect(cited('#3-#5')).toEqual([3, 4, 5]);
    expect(cited('messages 3; 4')).toEqual([3, 4]);
    expect(cited('3 – 4 7')).toEqual([3, 4, 7]);
    expect(cited('1 (user), 2 (assistant).')).toEqual([1, 2]);
  });
});

describe('parseObservations: a fence a model wrote to be slow (attack review)', () => {
  // Once cubic in json-answer's fence pattern: 2,000 spaces after the fence took 2 s.
  it('reads an answer of a fence and 200,000 spaces at once, and a fenced JSON answer as before', () => {
    // One fence line and nothing after it: a frame, no observation.
    expect(parseObservations(`\`\`\`${' '.repeat(200_000)}x`)).toEqual([]);
    expect(parseReflection(`\`\`\`${' '.repeat(200_000)}x`).summary).toContain('x');
    expect(parseObservations('```json\n[{"importance": 0.9, "observation": "User uses vim."}]\n```')).toEqual([
      { content: 'User uses vim.', importance: 0.9 },
    ]);
  });
});

describe('parseObservations: JSON answers scored as lines are', () => {
  const rule = 'User must never force-push to main.';
  const deadline = 'The release deadline is Friday.';
  const json = (...items: unknown[]) => JSON.stringify(items);

  // Once read as percentages: 1.2 was stored as 0.012, a 9 among fractions as 0.09.
  it.each([
    ['a score above 1 among fractions', [0.9, 1.2], [0.9, 1]],
    ['a whole number above 1 among fractions', [0.5, 9], [0.5, 1]],
    ['a fraction above 1 among whole numbers', [8.5, 7], [1, 1]],
    ['a score above 10', [85, 0.5], [1, 0.5]],
    ['whole numbers out of ten', [9, 4], [0.9, 0.4]],
    ['whole numbers out of ten, one of them 0', [8, 0], [0.8, 0]],
    ['whole numbers out of ten written as strings', ['8', '3'], [0.8, 0.3]],
    ['a percentage written with %', ['90%', 0.4], [0.9, 0.4]],
    ['a score written as a fraction of ten', ['9/10', 0.4], [0.9, 0.4]],
    ['a level in words', ['high', 0.4], [0.8, 0.4]],
    ['an unreadable score beside whole numbers out of ten', ['???', 8], [null, 0.8]],
  ])('reads %s as the line format does', (_name, scores, expected) => {
    const answer = json({ observation: rule, importance: scores[0] }, { observation: deadline, importance: scores[1] });
    expect(parseObservations(answer)).toEqual([
      { content: rule, importance: expected[0] },
      { content: deadline, importance: expected[1] },
    ]);
    const lines = `IMPORTANCE: ${scores[0]}\n${rule}\n\nIMPORTANCE: ${scores[1]}\n${deadline}`;
    expect(parseObservations(lines)).toEqual(parseObservations(answer));
  });

  // Once the whole answer was stored as one unscored observation of raw JSON.
  it('skips an item without text and keeps the others', () => {
    for (const empty of ['', '   ', null]) {
      const answer = json(
        { observation: rule, importance: 0.9, source: [1] },
        { observation: empty, importance: 0.1 },
        { content: deadline, importance: 0.5 },
      );
      expect(parseObservations(answer), String(empty)).toEqual([
        { content: rule, importance: 0.9, sourceSeqs: [1] },
        { content: deadline, importance: 0.5 },
      ]);
    }
  });

  it('leaves the scores of the other items on the ten-point scale when an item without text is skipped', () => {
    const answer = json({ observation: rule, importance: 9 }, { observation: '', importance: 0.5 });
    expect(parseObservations(answer)).toEqual([{ content: rule, importance: 0.9 }]);
  });

  it('reads a JSON list of items that are not observations as text', () => {
    const answer = json({ note: rule }, { note: deadline });
    expect(parseObservations(answer)).toEqual([{ content: answer, importance: null }]);
  });
});

describe('parseObservations: JSON lists of strings (review: stored as one raw JSON observation)', () => {
  it.each([
    ['a bare list', '["The user uses pnpm", "The user likes tabs"]', ['The user uses pnpm', 'The user likes tabs']],
    ["mem0's facts object", '{"facts": ["The user uses pnpm"]}', ['The user uses pnpm']],
    ['a list under "observations", fenced', '```json\n{"Observations": ["A", "", null, " B "]}\n```', ['A', 'B']],
  ])('reads %s as unscored observations', (_name, answer, contents) => {
    expect(isNothingToObserve(answer)).toBe(false);
    expect(parseObservations(answer)).toEqual(contents.map((content) => ({ content, importance: null })));
  });

  it.each(['{"facts": []}', '[""]', '{"observations": [" ", null]}', '```json\n{"facts": []}\n```'])(
    'takes %s as nothing',
    (answer) => {
      expect(isNothingToObserve(answer)).toBe(true);
      expect(parseObservations(answer)).toEqual([]);
    },
  );

  it('keeps a list that mixes strings with other values as text', () => {
    for (const answer of ['["The user uses pnpm", 3]', '{"facts": ["The user uses pnpm", {"x": 1}]}'])
      expect(parseObservations(answer), answer).toEqual([{ content: answer, importance: null }]);
  });

  it('holds string lists to the same bounds', () => {
    const many = JSON.stringify(Array.from({ length: 80 }, (_, index) => `fact ${index}`));
    expect(parseObservations(many)).toHaveLength(50);
    expect(parseObservations(many, { maxObservations: 2 }).map((item) => item.content)).toEqual(['fact 0', 'fact 1']);
    const [long] = parseObservations(JSON.stringify(['x'.repeat(3000)]));
    expect(long?.content).toBe(`${'x'.repeat(2000)}${TRUNCATION_SUFFIX}`);
  });

  // json-answer's fence pattern takes cubic time on this (2,000 spaces: 2 s a call).
  it('reads a code fence followed by a long run of white space in linear time', () => {
    const answer = `\`\`\`json\n${' '.repeat(60_000)}The user uses vim.`;
    expect(isNothingToObserve(answer)).toBe(false);
    expect(parseObservations(answer)).toEqual([{ content: 'The user uses vim.', importance: null }]);
  });
});

describe('isNothingToObserve: JSON answers', () => {
  // Once refused as empty output, so the operation failed on every attempt.
  it.each([
    ['an empty list of observations in an object', '{"observations": []}'],
    ['an empty list of observations, fenced', '```json\n{"observations": []}\n```'],
    ['a list whose items have no text', '[{"observation": "", "importance": 0.1}, {"observation": null}]'],
    ['an object whose observations have no text', '{"observations": [{"content": " "}]}'],
  ])('takes %s as nothing', (_name, answer) => {
    expect(isNothingToObserve(answer)).toBe(true);
    expect(parseObservations(answer)).toEqual([]);
  });

  it('does not take a JSON list with an observation in it as nothing', () => {
    expect(isNothingToObserve('{"observations": [{"observation": "", "importance": 0.1}, {"fact": "Uses Go."}]}')).toBe(
      false,
    );
  });
});

describe('isNothingToObserve: a fact after the reason', () => {
  // Once lost: a reason word anywhere in the text after "nothing" made all of it a reason, and
  // the cursor moved past the fact.
  const facts = [
    'No new facts; the user said thanks and moved to Berlin.',
    'NONE - small talk, then the user said their deadline is Friday',
    'None. The user only said hello and mentioned they use Neovim.',
    'NONE; greetings, then the user switched the project to Postgres.',
    "Nothing new: small talk, and the user's cat is named Miso.",
    'No new observations, the user is allergic to peanuts.',
    'No new observations: the user said hi, also their timezone is UTC+2.',
    'Nothing of note; the user said thanks, then asked to always use metric units.',
    'N/A - pleasantries; the user said bye, and they are vegetarian.',
    'NONE (small talk) and the user prefers tabs.',
    'There are no new durable facts; the assistant greeted the user, who said they work at Acme.',
    'NONE — chit-chat; then the user said thanks: the API key rotates every 90 days.',
    'NONE, the user said goodbye and that the release ships on 2027-03-01.',
  ];

  it.each(facts)('keeps "%s" as one unscored observation', (answer) => {
    expect(isNothingToObserve(answer)).toBe(false);
    expect(parseObservations(answer)).toEqual([{ content: answer, importance: null }]);
  });

  it.each([
    ['a fact on a later line', 'NONE\n\nThe user moved to Berlin.', 'Berlin'],
    ['a fact after a reason on a later line', 'NONE - greetings only\nThe deadline is Friday.', 'Friday'],
    ['a fact under a note to the reader', 'NONE\n\nNote: greetings only. The user prefers tabs.', 'tabs'],
    ['a list after the reason', 'Nothing new; small talk.\n- User lives in Lisbon.', 'Lisbon'],
  ])('keeps %s', (_name, answer, word) => {
    expect(isNothingToObserve(answer)).toBe(false);
    const observations = parseObservations(answer);
    expect(observations.map((item) => item.importance)).toEqual([null]);
    expect(observations[0]?.content).toContain(word);
  });

  it.each([
    'NONE - the conversation consisted only of greetings and pleasantries.',
    'No new observations. The user just said hello and the assistant replied.',
    'Nothing to record; the exchange was purely social.',
    'NONE. This segment contains only small talk, with no durable facts.',
    'No new observations: the user thanked the assistant and said goodbye.',
    'Nothing new; everything discussed is already in memory.',
    'None — just an acknowledgement ("ok, thanks!").',
    'NONE\n\nThe user and the assistant exchanged greetings, then said goodbye.',
    'No new facts; the assistant only acknowledged the request.',
    'Nothing worth remembering: chit-chat and filler.',
    'NONE, the segment repeats facts already recorded.',
    'N/A - off-topic banter only; nothing durable.',
    '**NONE** (the user only asked how the assistant was doing)',
    "I didn't find anything new; the user's messages were greetings.",
    'NONE\n\nNote: I skipped the greetings and the small talk.',
  ])('takes "%s" as nothing', (answer) => {
    expect(isNothingToObserve(answer)).toBe(true);
    expect(parseObservations(answer)).toEqual([]);
  });
});

describe('isNothingToObserve: long and repeated text', () => {
  // Each of these runs in a few milliseconds; a quadratic step would take seconds and time out.
  const spaces = ' '.repeat(100_000);
  it.each([
    ['spaces after the lead', `NONE;${spaces}thanks`, true],
    ['spaces inside the lead', `There are${spaces}no${spaces}new${spaces}facts`, true],
    ['semicolons', `NONE${';'.repeat(100_000)}`, true],
    ['semicolons, then a fact', `NONE${';'.repeat(100_000)}Berlin`, false],
    ['a reason repeated', `NONE - ${'the user said thanks '.repeat(5_000)}`, true],
    ['a reason repeated, then a fact', `NONE - ${'the user said thanks '.repeat(5_000)}Berlin`, false],
    ['one long word', `NONE - ${'a'.repeat(100_000)}`, false],
    ['notes to the reader', `NONE${'\n\nNote: I skipped the greetings.'.repeat(3_000)}`, true],
  ])('reads %s in linear time', (_name, answer, nothing) => {
    expect(isNothingToObserve(answer)).toBe(nothing);
  });

  // Once quadratic: 0.9 s for 6,250 trailing remarks, each checked against all the lines above it.
  it('drops many trailing remarks to the reader in linear time', () => {
    expect(parseObservations(`User uses vim.${'\n\nNote: I skipped'.repeat(25_000)}`)).toEqual([
      { content: 'User uses vim.', importance: null },
    ]);
  });
});
