import { describe, expect, it } from 'vitest';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createModelObserver, createModelReflector } from './model-observer.js';
import { createObservationalMemory } from './observational-memory.js';
import { createReflectionBackoff, REFLECTION_RETRY_MS } from './reflection-backoff.js';

const scope = { tenantId: 't', conversationId: 'c', agentId: 'a' };
/** 20 tokens an observation (after its importance line): the threshold of 40 is reached at the second observe. */
const OBSERVATION = 'IMPORTANCE: 0.9\nThe user said something fairly long and durable about the project layout, twice.';

/** A memory whose reflector answers `reflect()` (a refusal, say), with a clock the test moves. */
function memoryWith(reflect: () => string) {
  let clock = Date.parse('2026-12-07T10:00:00Z');
  const observer = createMockLanguageModel(OBSERVATION);
  const reflector = createMockLanguageModel(() => reflect());
  const memory = createObservationalMemory({
    store: createInMemoryStore(),
    observer: createModelObserver(observer),
    reflector: createModelReflector(reflector),
    defaultEnabled: true,
    defaults: { observeMinTokens: 1, reflectThresholdTokens: 40 },
    retryDelayMs: 0,
    now: () => new Date(clock),
  });
  let turn = 0;
  const observe = () =>
    memory.observe({ scope, runId: 'r', messages: [{ id: `m${++turn}`, role: 'user', content: `turn ${turn}` }] });
  return { memory, observe, reflector, advance: (ms: number) => (clock += ms) };
}

describe('reflection back-off', () => {
  it('asks a reflector that refused the memory again only after another threshold of observations', async () => {
    const { observe, reflector } = memoryWith(() => 'NONE');
    await observe();
    await observe();
    expect(reflector.calls).toHaveLength(1);
    // Each observe adds 20 tokens: the next reflection waits for 40 more than the failed one saw.
    await observe();
    expect(reflector.calls).toHaveLength(1);
    await observe();
    expect(reflector.calls).toHaveLength(2);
    for (let more = 0; more < 6; more++) await observe();
    // Ten observes, five reflections (at 40, 80, 120, 160 and 200 tokens), not nine.
    expect(reflector.calls).toHaveLength(5);
  });

  it('tries again once the back-off time has passed, and a reflection that works ends the back-off', async () => {
    let answer = 'NONE';
    const { memory, observe, reflector, advance } = memoryWith(() => answer);
    await observe();
    await observe();
    expect(reflector.calls).toHaveLength(1);
    advance(REFLECTION_RETRY_MS);
    answer = 'SUMMARY:\n- The user described the project layout.\nSUPERSESSIONS:\n- none\nCONTRADICTIONS:\n- none';
    await observe();
    expect(reflector.calls).toHaveLength(2);
    expect((await memory.inspect(scope)).reflection?.raw).toContain('project layout');
  });
});

describe('createReflectionBackoff', () => {
  it('holds a failed scope back by tokens or time, and forgets it on success', () => {
    const backoff = createReflectionBackoff();
    const at = new Date('2026-12-07T10:00:00Z');
    const later = (ms: number) => new Date(at.getTime() + ms);
    expect(backoff.allows('s', 100, 60, at)).toBe(true);
    backoff.failed('s', 100, at);
    expect(backoff.allows('other', 100, 60, at)).toBe(true);
    expect(backoff.allows('s', 159, 60, later(1_000))).toBe(false);
    expect(backoff.allows('s', 160, 60, later(1_000))).toBe(true);
    backoff.failed('s', 160, at);
    expect(backoff.allows('s', 160, 60, later(REFLECTION_RETRY_MS - 1))).toBe(false);
    expect(backoff.allows('s', 160, 60, later(REFLECTION_RETRY_MS))).toBe(true);
    backoff.failed('s', 200, at);
    backoff.succeeded('s');
    expect(backoff.allows('s', 200, 60, at)).toBe(true);
  });
});
