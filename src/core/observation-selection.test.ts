import { describe, expect, it } from 'vitest';
import type { Observation } from './observation.js';
import { scoreObservation, selectObservationIndices } from './observation-snippet.js';
import { repeatKeyOf } from './repeated-observations.js';
import { renderDataLines } from './sanitize-text.js';
import { RUNE_TOKEN_ESTIMATOR } from './token-estimator.js';
import type { TokenEstimator } from './token-estimator.js';
import { seededRandom } from '../../test/support/seeded-random.js';

/** A second estimator, so a config change can switch what lines cost. */
const WORD_ESTIMATOR: TokenEstimator = { estimate: (text) => (text === '' ? 0 : text.split(/\s+/).length + 1) };

/**
 * The definition the selection must meet, computed over the whole log every time: every
 * observation scored, taken in score order (the older first among equals) when both its
 * stored token count and its rendered line fit what is left of the budget, which then
 * loses the line's cost; one that a newer observation repeats word for word never taken.
 * A fact repeated word for word stands as its newest copy: a supersession naming any copy of
 * either side supersedes the older side's newest copy by the newer side's, unless the older
 * side's is the newer of the two (restated after the change).
 */
function fullSelection(
  observations: readonly Observation[],
  superseded: ReadonlyMap<number, number>,
  budget: number,
  estimator: TokenEstimator,
): number[] {
  const count = observations.length;
  // An observation a newer one repeats word for word is never taken; the newest copy stands for it.
  const repeated = new Uint8Array(count);
  const standing = new Int32Array(count);
  const newest = new Map<string, number>();
  for (let index = count - 1; index >= 0; index--) {
    const observation = observations[index] as Observation;
    let key = repeatKeys.get(observation);
    if (key === undefined) repeatKeys.set(observation, (key = repeatKeyOf(observation.content)));
    const newer = newest.get(key);
    if (newer === undefined) newest.set(key, index);
    else repeated[index] = 1;
    standing[index] = newer ?? index;
  }
  // The logs here number their observations from 1 without gaps.
  const isCopy = (seq: number): boolean => repeated[seq - 1] === 1;
  const standingSeq = (seq: number): number => (standing[seq - 1] as number) + 1;
  const shownSuperseded = new Map<number, number>();
  const put = (older: number, newer: number): void => {
    const known = shownSuperseded.get(older);
    if (known === undefined || newer > known) shownSuperseded.set(older, newer);
  };
  for (const [older, newer] of superseded) {
    if (isCopy(older)) put(older, newer);
    if (!isCopy(older) && !isCopy(newer)) put(older, newer);
    else if (standingSeq(older) < standingSeq(newer)) put(standingSeq(older), standingSeq(newer));
  }
  const scores = new Float64Array(count);
  const costs = new Float64Array(count);
  const floors = new Float64Array(count);
  let smallest = Number.POSITIVE_INFINITY;
  for (let index = 0; index < count; index++) {
    const observation = observations[index] as Observation;
    const replacedBy = shownSuperseded.get(observation.seq);
    scores[index] = scoreObservation(observation.importance, count - 1 - index, replacedBy !== undefined);
    costs[index] = lineCost(observation, replacedBy, estimator);
    floors[index] = Math.max(observation.tokenCount, costs[index] as number);
    smallest = Math.min(smallest, floors[index] as number);
  }
  // A binary heap of every index, highest score first (the older first among equals).
  const heap = new Int32Array(count);
  for (let index = 0; index < count; index++) heap[index] = index;
  const down = (start: number, size: number): void => {
    let at = start;
    const item = heap[at] as number;
    const itemScore = scores[item] as number;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= size) break;
      let childItem = heap[child] as number;
      let childScore = scores[childItem] as number;
      const right = child + 1;
      if (right < size) {
        const rightItem = heap[right] as number;
        const rightScore = scores[rightItem] as number;
        if (rightScore > childScore || (rightScore === childScore && rightItem < childItem)) {
          child = right;
          childItem = rightItem;
          childScore = rightScore;
        }
      }
      if (itemScore > childScore || (itemScore === childScore && item < childItem)) break;
      heap[at] = childItem;
      at = child;
    }
    heap[at] = item;
  };
  for (let index = (count >> 1) - 1; index >= 0; index--) down(index, count);
  // How many observations not yet taken or passed over have each floor (token counts are
  // whole numbers): once the budget left is below the lowest, nothing more can fit.
  const left: number[] = [];
  for (let index = 0; index < count; index++) left[floors[index] as number] = (left[floors[index] as number] ?? 0) + 1;
  const chosen: number[] = [];
  let remaining = budget;
  for (let size = count; size > 0 && remaining >= smallest; size--) {
    const top = heap[0] as number;
    heap[0] = heap[size - 1] as number;
    down(0, size - 1);
    left[floors[top] as number] = (left[floors[top] as number] as number) - 1;
    while (smallest < left.length && !left[smallest]) smallest++;
    if (repeated[top] === 1 || (floors[top] as number) > remaining) continue;
    remaining -= costs[top] as number;
    chosen.push(top);
  }
  return chosen.sort((a, b) => a - b);
}

const repeatKeys = new WeakMap<Observation, string>();
const plainCosts = new Map<TokenEstimator, number[]>();
const markedCosts = new Map<TokenEstimator, Map<string, number>>();

/** What an observation's rendered line costs (memoized: the oracle renders the same lines on every step). */
function lineCost(observation: Observation, replacedBy: number | undefined, estimator: TokenEstimator): number {
  if (replacedBy === undefined) {
    let costs = plainCosts.get(estimator);
    if (!costs) plainCosts.set(estimator, (costs = []));
    return (costs[observation.seq] ??= render(observation, '', estimator));
  }
  let costs = markedCosts.get(estimator);
  if (!costs) markedCosts.set(estimator, (costs = new Map()));
  const key = `${observation.seq}:${replacedBy}`;
  let cost = costs.get(key);
  if (cost === undefined) costs.set(key, (cost = render(observation, `(superseded by [${replacedBy}]) `, estimator)));
  return cost;
}

function render(observation: Observation, marker: string, estimator: TokenEstimator): number {
  return estimator.estimate(`- [${observation.seq}] ${marker}${renderDataLines(observation.content, '  ')}\n`);
}

const WORDS = [
  'the',
  'user',
  'prefers',
  'tabs',
  'deploys',
  'on',
  'Fridays',
  'in',
  'Berlin',
  'ok',
  'uses',
  'Go',
  '1.22',
  'monorepo',
  'review',
];

function content(next: () => number): string {
  // Mostly 3 to 60 words, as observers write; now and then a single word, which a nearly spent budget can still take.
  const words = next() < 0.03 ? 1 : 3 + Math.floor(next() ** 3 * 58);
  const parts = Array.from({ length: words }, () => WORDS[Math.floor(next() * WORDS.length)] as string);
  if (next() < 0.1) parts.splice(Math.floor(words / 2), 0, '\n-');
  return parts.join(' ');
}

describe('snippet: the bounded selection equals a full re-selection (issue 16)', () => {
  it('on every step of 10,000 appends, repeated facts, supersessions of any copy and config changes', () => {
    const next = seededRandom(16);
    const log: Observation[] = [];
    const superseded = new Map<number, number>();
    // Seqs of observations that repeat an earlier one word for word, and the supersessions naming such a copy.
    const copies: number[] = [];
    let copySupersessions = 0;
    let budget = 900;
    let estimator = RUNE_TOKEN_ESTIMATOR;
    let steps = 0;
    while (log.length < 10_000) {
      steps++;
      const roll = next();
      if (roll < 0.8) {
        // An observe operation appends one to four observations at once.
        const count = Math.min(10_000 - log.length, 1 + Math.floor(next() * 4));
        for (let added = 0; added < count; added++) {
          // Now and then the observer records an earlier fact again, in other case or punctuation.
          const again = log.length > 0 && next() < 0.08 ? log[Math.floor(next() * log.length)] : undefined;
          if (again) copies.push(log.length + 1);
          const text = again ? `${next() < 0.5 ? again.content.toUpperCase() : again.content}.` : content(next);
          // Scores in tenths, so equal scores (ties broken by age) are common.
          const importance = next() < 0.15 ? null : Math.round(next() * 10) / 10;
          log.push({
            seq: log.length + 1,
            content: text,
            importance,
            tokenCount: RUNE_TOKEN_ESTIMATOR.estimate(text),
            createdAt: '',
            sourceStartSeq: 1,
            sourceEndSeq: 1,
            source: 'user',
            sourceMessageSeqs: [],
            operationId: 'op',
          });
        }
      } else if (roll < 0.9 && log.length > 1) {
        const newer = 2 + Math.floor(next() * (log.length - 1));
        const copy = copies[Math.floor(next() * copies.length)];
        // Half of them name a copy (or the original a copy repeats), as a reflector shown both may.
        if (copy !== undefined && next() < 0.5) {
          const older =
            next() < 0.5
              ? copy
              : log.findIndex(
                  (item) => repeatKeyOf(item.content) === repeatKeyOf((log[copy - 1] as Observation).content),
                ) + 1;
          if (older < log.length) {
            superseded.set(older, older + 1 + Math.floor(next() * (log.length - older)));
            copySupersessions++;
          }
        } else superseded.set(1 + Math.floor(next() * (newer - 1)), newer);
      } else if (roll < 0.98) {
        budget = [0, 1, 7, 60, 300, 900, 900, 2_500, 8_000][Math.floor(next() * 9)] as number;
      } else {
        estimator = estimator === RUNE_TOKEN_ESTIMATOR ? WORD_ESTIMATOR : RUNE_TOKEN_ESTIMATOR;
      }
      const bounded = selectObservationIndices(log, superseded, budget, estimator);
      const full = fullSelection(log, superseded, budget, estimator);
      if (bounded.length !== full.length || bounded.some((index, position) => index !== full[position])) {
        expect({ step: steps, observations: log.length, budget, bounded }).toEqual({
          step: steps,
          observations: log.length,
          budget,
          bounded: full,
        });
      }
    }
    expect(log.length).toBe(10_000);
    expect(copySupersessions).toBeGreaterThan(100);
    // A full re-selection on each of 10,000 steps is quadratic by design: 12-24 s alone on
    // this 2-core machine, more beside the suite's other files under load.
  }, 180_000);
});
