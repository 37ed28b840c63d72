import { describe, expect, it } from 'vitest';
import { observationOf } from '../../test/support/observation-fixture.js';
import type { StoredReflection } from './observation.js';
import { planObservationSnippet, REFLECTION_TRUNCATED_MARKER } from './observation-snippet.js';
import type { SnippetLinks } from './observation-snippet.js';
import { parseReflection } from './parse-reflection.js';
import { RUNE_TOKEN_ESTIMATOR } from './token-estimator.js';

const observation = observationOf;

function reflection(raw: string, throughSeq: number): StoredReflection {
  return {
    raw,
    structured: parseReflection(raw),
    tokenCount: RUNE_TOKEN_ESTIMATOR.estimate(raw),
    throughSeq,
    createdAt: '2026-01-01T00:00:00.000Z',
  };
}

describe('snippet: no part crowds out the others', () => {
  it('keeps room for observations newer than a verbose reflection (one of ~1,000 tokens, budget 900)', () => {
    const summary = Array.from(
      { length: 84 },
      (_, index) => `- Project detail number ${index}: something about the codebase.`,
    ).join('\n');
    const older = Array.from({ length: 20 }, (_, index) => observation(index + 1, `older fact ${index + 1}`, 0.95));
    const fresh = Array.from({ length: 5 }, (_, index) =>
      observation(21 + index, `NEW_FACT_${index + 1}: the user changed the deploy day to ${index + 1}`, 0.95),
    );
    const stored = reflection(`SUMMARY:\n${summary}\nSUPERSESSIONS:\nnone\nCONTRADICTIONS:\nnone`, 20);
    expect(stored.tokenCount).toBeGreaterThan(900);
    const plan = planObservationSnippet({
      observations: [...older, ...fresh],
      reflection: stored,
      maxTokens: 900,
      estimator: RUNE_TOKEN_ESTIMATOR,
    });
    expect([...plan.includedSeqs].filter((seq) => seq > 20).sort((a, b) => a - b)).toEqual([21, 22, 23, 24, 25]);
    for (let index = 1; index <= 5; index++) expect(plan.text).toContain(`NEW_FACT_${index}:`);
    // The reflection still takes what the fresh observations leave.
    expect(plan.text).toContain(REFLECTION_TRUNCATED_MARKER);
    expect(plan.text).toContain('> - Project detail number 0:');
    expect(RUNE_TOKEN_ESTIMATOR.estimate(plan.text)).toBeLessThanOrEqual(900);
  });

  it('shows a whole reflection that fits, and reserves nothing when no observation is newer', () => {
    const stored = reflection('SUMMARY:\n' + 'a long line of the summary '.repeat(150), 3);
    const observations = [observation(1, 'one', 0.9), observation(2, 'two', 0.9), observation(3, 'three', 0.9)];
    const plan = planObservationSnippet({
      observations,
      reflection: stored,
      maxTokens: 900,
      estimator: RUNE_TOKEN_ESTIMATOR,
    });
    // Nothing newer than the reflection: it may take the budget as before.
    expect(plan.text).toContain(REFLECTION_TRUNCATED_MARKER);
    expect(plan.includedSeqs.size).toBe(0);
  });

  it('lists active contradictions first, and a supersession only when the snippet shows one of its observations', () => {
    // 48 preference changes, each superseding the one before, then an open contradiction.
    const observations = Array.from({ length: 48 }, (_, index) =>
      observation(index + 1, `User now prefers indentation style number ${index + 1} for module ${index + 1}`, 0.9),
    );
    const links: SnippetLinks = {
      supersessions: Array.from({ length: 47 }, (_, index) => ({
        newerSeq: index + 2,
        olderSeq: index + 1,
        reason: 'the user changed the indentation preference for this module again',
      })),
      contradictions: [{ seqA: 48, seqB: 2, detail: 'deploy day unclear' }],
    };
    const plan = planObservationSnippet({
      observations,
      reflection: reflection('SUMMARY:\nThe user is building a billing service in Go.', 48),
      links,
      maxTokens: 900,
      estimator: RUNE_TOKEN_ESTIMATOR,
    });
    expect(plan.text).toContain('⚠️ Unresolved contradictions:\n- deploy day unclear (observations [48] vs [2])');
    expect(plan.text.indexOf('⚠️ Unresolved contradictions:')).toBeLessThan(plan.text.indexOf('⚠️ Preference changes'));
    const cited = [...plan.text.matchAll(/observation \[(\d+)\] supersedes \[(\d+)\]/g)];
    for (const [, newer, older] of cited)
      expect(plan.includedSeqs.has(Number(newer)) || plan.includedSeqs.has(Number(older))).toBe(true);
    const warnings = plan.text.slice(plan.text.indexOf('⚠️'));
    // The warnings take a small share of the budget, not most of it.
    expect(RUNE_TOKEN_ESTIMATOR.estimate(warnings)).toBeLessThanOrEqual(900 / 3);
    expect(plan.includedSeqs.has(48)).toBe(true);
    expect(RUNE_TOKEN_ESTIMATOR.estimate(plan.text)).toBeLessThanOrEqual(900);
  });

  it('shows the observations before a warning about them in a tight budget (60 tokens)', () => {
    const plan = planObservationSnippet({
      observations: [
        observation(1, 'Use tabs everywhere in this repository please', 0.9),
        observation(2, 'The build uses make', 0.5),
      ],
      reflection: reflection('SUMMARY:\nS\n\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]: x\n\nCONTRADICTIONS:\n', 2),
      maxTokens: 60,
      estimator: RUNE_TOKEN_ESTIMATOR,
    });
    expect(plan.includedSeqs.has(2)).toBe(true);
    expect(plan.text).toContain('- [2] The build uses make');
    expect(plan.text).toContain('> S');
    expect(RUNE_TOKEN_ESTIMATOR.estimate(plan.text)).toBeLessThanOrEqual(60);
  });
});
