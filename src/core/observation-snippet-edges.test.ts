/**
 * Edges of the snippet's budget and layout that a mutation sweep found unpinned: the share
 * bounds (a third for the warnings, a third of the rest for the fresh observations), the
 * reflection's cut, headers left without items, the trim a non-sub-additive estimator forces,
 * the order of the warnings and the line costs remembered between turns.
 */
import { describe, expect, it } from 'vitest';
import { observationOf } from '../../test/support/observation-fixture.js';
import type { Observation, StoredReflection } from './observation.js';
import { planObservationSnippet, SNIPPET_FRAME_LINES } from './observation-snippet.js';
import type { ObservationSnippetPlan, SnippetLinks } from './observation-snippet.js';
import { parseReflection } from './parse-reflection.js';
import { RUNE_TOKEN_ESTIMATOR, RuneTokenEstimator } from './token-estimator.js';
import type { TokenEstimator } from './token-estimator.js';

const [
  OPEN_TAG,
  CLOSE_TAG,
  PREAMBLE,
  SUPERSESSIONS_HEADER,
  CONTRADICTIONS_HEADER,
  REFLECTION_HEADER,
  OBSERVATIONS_HEADER,
  TRUNCATED_MARKER,
] = SNIPPET_FRAME_LINES as [string, string, string, string, string, string, string, string];

const estimator = RUNE_TOKEN_ESTIMATOR;
/** What a line costs in the snippet: itself and its line break. */
const cost = (line: string): number => estimator.estimate(`${line}\n`);
/** What the tags and the first line cost: the budget minus this is what the sections share. */
const WRAPPER = cost(OPEN_TAG) + cost(PREAMBLE) + estimator.estimate(CLOSE_TAG);
const NO_LINKS: SnippetLinks = { supersessions: [], contradictions: [] };

function reflectionOf(summary: string, throughSeq: number): StoredReflection {
  const raw = `SUMMARY:\n${summary}`;
  return {
    raw,
    structured: parseReflection(raw),
    tokenCount: estimator.estimate(raw),
    throughSeq,
    createdAt: '2026-01-01T00:00:00.000Z',
  };
}

/** A summary of `count` lines that cost one token each when quoted (`> a`). */
const oneTokenLines = (count: number): string => Array.from({ length: count }, () => 'a').join('\n');

function plan(
  observations: readonly Observation[],
  reflection: StoredReflection | null,
  maxTokens: number,
  links: SnippetLinks = NO_LINKS,
  withEstimator: TokenEstimator = estimator,
): ObservationSnippetPlan {
  return planObservationSnippet({ observations, reflection, links, maxTokens, estimator: withEstimator });
}

/** The lines of a section, from its header to the blank line or closing tag after it. */
function section(text: string, header: string): string[] {
  const lines = text.split('\n');
  const start = lines.indexOf(header);
  if (start < 0) return [];
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((line) => line === '' || line === CLOSE_TAG);
  return rest.slice(0, end < 0 ? rest.length : end);
}

describe('snippet edges: the reflection', () => {
  it('keeps every whole line that fits when it is cut, and no section at all when none fits', () => {
    const reflection = reflectionOf(oneTokenLines(200), 0);
    for (let room = 0; room <= 60; room++) {
      const { text } = plan([], reflection, WRAPPER + room);
      // Room for the header, the marker and the blank line after the section; each line costs 1.
      const lines = room - cost(REFLECTION_HEADER) - cost(TRUNCATED_MARKER) - cost('');
      if (lines <= 0) expect(text, `room ${room}`).toBe('');
      else
        expect(section(text, REFLECTION_HEADER), `room ${room}`).toEqual([
          ...Array(lines).fill('> a'),
          TRUNCATED_MARKER,
        ]);
    }
  });

  it('cuts a first line too long for its room to within one token of that room', () => {
    const reflection = reflectionOf('word '.repeat(400).trim(), 0);
    for (let room = 20; room <= 60; room++) {
      const [cut] = section(plan([], reflection, WRAPPER + room).text, REFLECTION_HEADER);
      const lineRoom = room - cost(REFLECTION_HEADER) - cost(TRUNCATED_MARKER) - cost('');
      expect(cost(cut as string), `room ${room}`).toBeGreaterThanOrEqual(lineRoom - 1);
      expect(cost(cut as string), `room ${room}`).toBeLessThanOrEqual(lineRoom);
    }
  });

  it('drops the blank lines of a reflection it cuts', () => {
    const summary = Array.from({ length: 60 }, (_, index) => `Paragraph ${index} of the summary.`).join('\n\n');
    const { text } = plan([], reflectionOf(summary, 0), 150);
    expect(text).toContain(TRUNCATED_MARKER);
    expect(section(text, REFLECTION_HEADER)).not.toContain('>');
  });

  it('shows a reflection whole when it just fits and no observation is newer than it', () => {
    const summary = oneTokenLines(40);
    const older = [observationOf(1, 'The user prefers tabs.', 0.9)];
    const reflection = reflectionOf(summary, 1);
    // The reflection's lines and the blank line after them.
    const whole = WRAPPER + cost(REFLECTION_HEADER) + 40 + cost('');
    for (const observations of [[], older]) {
      const { text } = plan(observations, reflection, whole);
      expect(text).not.toContain(TRUNCATED_MARKER);
      expect(section(text, REFLECTION_HEADER)).toEqual(Array(40).fill('> a'));
    }
  });
});

describe('snippet edges: observations newer than the reflection', () => {
  it('keeps them up to a third of what the warnings leave, and gives the reflection the rest', () => {
    const fresh = Array.from({ length: 30 }, (_, index) =>
      observationOf(index + 2, `Fresh fact number ${index + 2}: the user changed a setting again.`, 0.9),
    );
    const reflection = reflectionOf(oneTokenLines(400), 1);
    for (let maxTokens = 200; maxTokens <= 240; maxTokens++) {
      const room = maxTokens - WRAPPER;
      const reserve = Math.floor(room / 3);
      const lines = room - reserve - cost(REFLECTION_HEADER) - cost(TRUNCATED_MARKER) - cost('');
      const { text } = plan(fresh, reflection, maxTokens);
      expect(
        section(text, REFLECTION_HEADER).filter((line) => line === '> a'),
        `budget ${maxTokens}`,
      ).toHaveLength(lines);
    }
  });

  it('shows a fresh observation that fits its reserve, whatever the length of the reflection', () => {
    const observations = [observationOf(1, 'Older fact.', 0.9), observationOf(2, 'The user moved to Berlin.', 0.9)];
    for (let count = 1; count <= 120; count++) {
      const included = plan(observations, reflectionOf(oneTokenLines(count), 1), 150).includedSeqs;
      expect(included.has(2), `a reflection of ${count} lines`).toBe(true);
    }
  });

  it('reserves room for a fact repeated since the reflection once, as for one copy', () => {
    const reflection = reflectionOf(oneTokenLines(300), 10);
    const copy = 'The user deploys on Fridays only, from the staging branch.';
    const once = plan([observationOf(12, copy, 0.9)], reflection, 200).text;
    const twice = plan([observationOf(11, copy, 0.9), observationOf(12, copy, 0.9)], reflection, 200).text;
    expect(twice).toBe(once);
  });
});

describe('snippet edges: the warnings', () => {
  const observations = [observationOf(1, 'Deploys on Fridays.', 0.9), observationOf(2, 'Deploys on Mondays.', 0.9)];
  const links: SnippetLinks = {
    supersessions: [],
    contradictions: [{ seqA: 1, seqB: 2, detail: 'the deploy day differs between two statements' }],
  };
  // The contradiction warnings with the blank line that sets them apart.
  const warnings =
    cost('') +
    cost(CONTRADICTIONS_HEADER) +
    cost('- the deploy day differs between two statements (observations [1] vs [2]) — confirm which applies');

  it('shows them within a third of the budget, rounded down, the blank line before them counted', () => {
    expect(plan(observations, null, 3 * warnings, links).text).toContain(CONTRADICTIONS_HEADER);
    expect(plan(observations, null, 3 * warnings - 1, links).text).not.toContain(CONTRADICTIONS_HEADER);
    expect(plan(observations, null, 3 * warnings - 2, links).text).not.toContain(CONTRADICTIONS_HEADER);
  });

  it('lists contradictions and supersessions newest first, whatever order they were found in', () => {
    const four = [
      observationOf(1, 'Tabs.', 0.9),
      observationOf(2, 'Spaces.', 0.9),
      observationOf(3, 'Friday deploys.', 0.9),
      observationOf(4, 'Monday deploys.', 0.9),
    ];
    const { text } = plan(four, null, 600, {
      supersessions: [
        { newerSeq: 2, olderSeq: 1, reason: 'indentation' },
        { newerSeq: 4, olderSeq: 3, reason: 'deploy day' },
      ],
      contradictions: [
        { seqA: 1, seqB: 2, detail: 'first' },
        { seqA: 3, seqB: 4, detail: 'second' },
      ],
    });
    expect(section(text, CONTRADICTIONS_HEADER)).toEqual([
      '- second (observations [3] vs [4]) — confirm which applies',
      '- first (observations [1] vs [2]) — confirm which applies',
    ]);
    expect(section(text, SUPERSESSIONS_HEADER)).toEqual([
      '- deploy day (observation [4] supersedes [3])',
      '- indentation (observation [2] supersedes [1])',
    ]);
  });

  it('warns of a supersession whose newer observation is shown, the older one not', () => {
    const replaced = observationOf(1, 'The user prefers tabs for indentation in every file. '.repeat(8), 0.9);
    const { text, includedSeqs } = plan([replaced, observationOf(2, 'Spaces now.', 0.9)], null, 120, {
      supersessions: [{ newerSeq: 2, olderSeq: 1, reason: 'switched' }],
      contradictions: [],
    });
    expect([...includedSeqs]).toEqual([2]);
    expect(section(text, SUPERSESSIONS_HEADER)).toEqual(['- switched (observation [2] supersedes [1])']);
  });
});

describe('snippet edges: no header without its items', () => {
  it('never shows a section header alone, whatever the budget', () => {
    const observations = Array.from({ length: 12 }, (_, index) =>
      observationOf(index + 1, `Fact ${index + 1}: the user said something worth keeping.`, 0.5 + index / 40),
    );
    const links: SnippetLinks = {
      supersessions: [{ newerSeq: 12, olderSeq: 3, reason: 'changed' }],
      contradictions: [{ seqA: 5, seqB: 11, detail: 'a long detail of the conflict between the two facts stated' }],
    };
    const reflection = reflectionOf('Line one of the summary.\nLine two of the summary.', 6);
    const headers = [REFLECTION_HEADER, OBSERVATIONS_HEADER, CONTRADICTIONS_HEADER, SUPERSESSIONS_HEADER];
    for (let maxTokens = 0; maxTokens <= 400; maxTokens++) {
      const lines = plan(observations, reflection, maxTokens, links).text.split('\n');
      lines.forEach((line, index) => {
        if (!headers.includes(line)) return;
        const next = lines[index + 1] ?? '';
        expect(/^(?:> |- )/.test(next), `budget ${maxTokens}: "${line}" then "${next}"`).toBe(true);
      });
    }
  });
});

describe('snippet edges: an estimator that is not sub-additive', () => {
  // Every part costs what the runes say, the whole snippet (both tags) 12 more: the parts' sum no
  // longer bounds the whole, so the final text is trimmed.
  const penalised: TokenEstimator = {
    estimate: (text) =>
      RUNE_TOKEN_ESTIMATOR.estimate(text) + (text.includes(OPEN_TAG) && text.includes(CLOSE_TAG) ? 12 : 0),
  };

  it('trims whole observations, reports only those left, and drops a header left alone', () => {
    const observations = Array.from({ length: 4 }, (_, index) =>
      observationOf(index + 1, `Observation ${index + 1} with enough words to cost a few tokens.`, 0.9),
    );
    for (let maxTokens = 40; maxTokens <= 160; maxTokens++) {
      const result = plan(observations, null, maxTokens, NO_LINKS, penalised);
      expect(penalised.estimate(result.text)).toBeLessThanOrEqual(maxTokens);
      const shown = section(result.text, OBSERVATIONS_HEADER).map((line) => Number(/^- \[(\d+)\]/.exec(line)?.[1]));
      expect(
        [...result.includedSeqs].sort((a, b) => a - b),
        `budget ${maxTokens}`,
      ).toEqual(shown);
      if (result.text.includes(OBSERVATIONS_HEADER)) expect(shown.length, `budget ${maxTokens}`).toBeGreaterThan(0);
    }
  });
});

describe('snippet edges: line costs remembered between turns', () => {
  it('does not remember the cost of a line marked superseded for when it is no longer superseded', () => {
    const observations = [
      observationOf(1, 'The user prefers tabs in Go files and spaces elsewhere.', 0.9),
      observationOf(2, 'The user moved to Berlin.', 0.9),
    ];
    const superseding: SnippetLinks = {
      supersessions: [{ newerSeq: 2, olderSeq: 1, reason: 'changed' }],
      contradictions: [],
    };
    const turns = new RuneTokenEstimator();
    plan(observations, null, 400, superseding, turns);
    for (let maxTokens = 40; maxTokens <= 120; maxTokens++) {
      const fresh = plan(observations, null, maxTokens, NO_LINKS, new RuneTokenEstimator());
      expect(plan(observations, null, maxTokens, NO_LINKS, turns).text, `budget ${maxTokens}`).toBe(fresh.text);
    }
  });
});

describe('snippet edges: an array changed in place', () => {
  it('selects from the observations as they are when the last one was replaced, as from a new array', () => {
    const observations = [
      observationOf(1, 'The user prefers tabs.', 0.9),
      observationOf(2, 'A very long note the user later shortened. '.repeat(10), 0.9),
    ];
    plan(observations, null, 1_000);
    observations[1] = observationOf(2, 'Shortened note.', 0.9);
    for (let maxTokens = 40; maxTokens <= 120; maxTokens++) {
      expect(plan(observations, null, maxTokens).text, `budget ${maxTokens}`).toBe(
        plan([...observations], null, maxTokens).text,
      );
    }
  });
});
