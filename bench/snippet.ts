import { buildObservationSnippet } from '../src/core/observation-snippet.js';
import type { Observation } from '../src/core/observation.js';
import { parseReflection } from '../src/core/parse-reflection.js';
import { RUNE_TOKEN_ESTIMATOR } from '../src/core/token-estimator.js';
import { measure, report } from './measure.js';

const TOPICS = [
  'prefers tabs',
  'deploys on Fridays',
  'uses Go 1.22',
  'wants short answers',
  'works in Berlin',
  'repo is monorepo',
];

/** Observations shaped like real observer output: 10-40 tokens, mixed importance. */
export function syntheticObservations(count: number): Observation[] {
  return Array.from({ length: count }, (_, index) => {
    const content = `The user ${TOPICS[index % TOPICS.length]} (fact ${index}); ${'detail '.repeat(index % 12)}`.trim();
    return {
      seq: index + 1,
      content,
      tokenCount: RUNE_TOKEN_ESTIMATOR.estimate(content),
      importance: index % 7 === 0 ? null : ((index * 37) % 10) / 10,
      createdAt: '2026-12-02T00:00:00.000Z',
      sourceStartSeq: index + 1,
      sourceEndSeq: index + 1,
      source: 'user',
      sourceMessageSeqs: [],
      operationId: 'op',
    };
  });
}

/** Snippet build for one scope with 1k, 10k and 100k observations (target: median ≤ 1 ms at 10k). */
export async function benchSnippet(): Promise<void> {
  console.log('\n## Snippet build (pure core), budget 900 tokens, with a structured reflection');
  const raw =
    'SUMMARY:\nThe user prefers tabs and deploys on Fridays.\n\nSUPERSESSIONS:\n- [seq:5] replaces [seq:2]: ' +
    'now uses spaces\n\nCONTRADICTIONS:\n- [seq:7] vs [seq:3]: region unclear\n';
  const reflection = { raw, structured: parseReflection(raw), tokenCount: 40, throughSeq: 0, createdAt: '' };
  for (const count of [1_000, 10_000, 100_000]) {
    const observations = syntheticObservations(count);
    const result = await measure(
      `snippet build, ${count.toLocaleString('en')} observations`,
      () => buildObservationSnippet({ observations, reflection, maxTokens: 900, estimator: RUNE_TOKEN_ESTIMATOR }),
      { samples: count >= 100_000 ? 30 : 200, warmup: count >= 100_000 ? 3 : 20 },
    );
    report(result, count === 10_000 ? 'median ≤ 1 ms' : undefined);
  }
}
