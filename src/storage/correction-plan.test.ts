import { describe, expect, it } from 'vitest';
import { HarnessMemoryError } from '../core/errors.js';
import type { Observation } from '../core/observation.js';
import { planCorrection } from './correction-plan.js';

const existing: Observation = {
  seq: 3,
  content: 'The user prefers tabs.',
  tokenCount: 6,
  importance: 0.4,
  createdAt: '2026-01-01T00:00:00.000Z',
  sourceStartSeq: 1,
  sourceEndSeq: 2,
  source: 'user',
  sourceMessageSeqs: [],
  operationId: 'op-observe',
};

describe('planCorrection of an observation the reflection covers', () => {
  it('keeps the reflection when the text stays and only the importance changes', () => {
    const plan = planCorrection(
      existing,
      { kind: 'replace', content: existing.content, tokenCount: existing.tokenCount, importance: 0.9 },
      5,
      'op-correct',
    );
    expect(plan).toMatchObject({ dropsReflection: false, activeTokensDelta: 0, unreflectedTokensDelta: 0 });
    expect(plan.observation).toMatchObject({ content: existing.content, importance: 0.9, operationId: 'op-correct' });
    expect(plan.payload).toEqual({ seq: 3, action: 'replace', importance: 0.9 });
    expect(plan.dropsLinks).toBe(false);
  });

  it('keeps the stored text, its tokens, the reflection and the links when the content is left out', () => {
    const plan = planCorrection(existing, { kind: 'replace', importance: null }, 5, 'op-correct');
    expect(plan).toMatchObject({ dropsReflection: false, dropsLinks: false, activeTokensDelta: 0 });
    expect(plan.observation).toMatchObject({ content: existing.content, tokenCount: 6, importance: null });
  });

  it('refuses a replacement with neither content nor importance, naming content', () => {
    let error: unknown;
    try {
      planCorrection(existing, { kind: 'replace' } as never, 5, 'op-correct');
    } catch (thrown) {
      error = thrown;
    }
    expect(HarnessMemoryError.isInstance(error) && [error.code, error.data['field']]).toEqual([
      'OBSERVATION_INVALID',
      'content',
    ]);
  });

  it('drops the reflection when the text changes or the observation is deleted', () => {
    const replaced = planCorrection(
      existing,
      { kind: 'replace', content: 'The user prefers spaces.', tokenCount: 6 },
      5,
      'op-correct',
    );
    expect(replaced).toMatchObject({ dropsReflection: true, dropsLinks: true });
    expect(replaced.payload).toMatchObject({ reflection_dropped: true, importance: 0.4 });
    expect(planCorrection(existing, { kind: 'delete' }, 5, 'op-correct').dropsReflection).toBe(true);
  });
});
