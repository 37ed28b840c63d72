/**
 * Which observations a newer one repeats, and how the supersession set reaches the copy the
 * snippet shows: edges a mutation sweep found unpinned.
 */
import { describe, expect, it } from 'vitest';
import { observationOf } from '../../test/support/observation-fixture.js';
import { linksAsShown, repeatedSeqsOf, repeatKeyOf, supersededAsShown } from './repeated-observations.js';

describe('repeatKeyOf', () => {
  it('sets case, spacing and end punctuation (a comma too) aside', () => {
    expect(repeatKeyOf('The user prefers  Tabs,')).toBe(repeatKeyOf('the user prefers tabs'));
    expect(repeatKeyOf('The user prefers tabs!;. ')).toBe('the user prefers tabs');
  });
});

describe('repeatedSeqsOf', () => {
  it('builds afresh when the last observation of the same array was replaced', () => {
    const observations = [observationOf(1, 'Uses Go.', 0.9), observationOf(2, 'Uses Rust.', 0.9)];
    expect([...repeatedSeqsOf(observations)]).toEqual([]);
    observations[1] = observationOf(2, 'uses go', 0.9);
    expect([...repeatedSeqsOf(observations)]).toEqual([1]);
  });
});

describe('supersededAsShown', () => {
  // 1 and 3 say the same thing: 3 stands for both.
  const observations = [
    observationOf(1, 'Deploys on Fridays.', 0.9),
    observationOf(2, 'Uses Go.', 0.9),
    observationOf(3, 'deploys on fridays', 0.9),
    observationOf(4, 'Deploys on Mondays.', 0.9),
    observationOf(5, 'Deploys on Tuesdays.', 0.9),
  ];

  it('keeps the newest replacement of the copy shown when two supersessions reach it', () => {
    const shown = supersededAsShown(
      observations,
      new Map([
        [3, 5],
        [1, 4],
      ]),
    );
    expect(shown.get(3)).toBe(5);
    expect(shown.get(1)).toBe(4);
  });

  it('never marks the copy shown as superseded by itself when one copy supersedes another', () => {
    const shown = supersededAsShown(observations, new Map([[1, 3]]));
    expect(shown.has(3)).toBe(false);
    expect(shown.get(1)).toBe(3);
  });
});

describe('linksAsShown', () => {
  const observations = [observationOf(1, 'Deploys on Fridays.', 0.9), observationOf(3, 'deploys on fridays', 0.9)];

  it('leaves a supersession or contradiction between two copies of one fact naming them as found', () => {
    const supersession = { newerSeq: 3, olderSeq: 1, reason: 'restated' };
    const contradiction = { seqA: 1, seqB: 3, detail: 'same fact' };
    expect(linksAsShown(observations, { supersessions: [supersession], contradictions: [contradiction] })).toEqual({
      supersessions: [supersession],
      contradictions: [contradiction],
    });
  });
});
