/**
 * Observers and reflectors of a library user's own: what they hand back is held to what the
 * model observer and reflector guarantee, whatever the store.
 */
import { describe, expect, it } from 'vitest';
import { ModelCallError } from '../core/errors.js';
import { useSqliteTestFiles } from '../../test/support/sqlite-test-files.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import { createModelObserver, createModelReflector } from './model-observer.js';
import type { Observer, Reflector } from './model-observer.js';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { createObservationalMemory } from './observational-memory.js';

const files = useSqliteTestFiles('hm-custom-observer-');
const scope = { tenantId: 't', conversationId: 'c', agentId: 'a' };

function memoryWith(observer: Observer, reflector?: Reflector) {
  return createObservationalMemory({
    store: files.track(createSqliteStore({ path: files.path })),
    observer,
    ...(reflector ? { reflector } : {}),
    defaultEnabled: true,
    defaults: { observeMinTokens: 1 },
    maxOperationAttempts: 1,
  });
}

const observeOnce = (memory: ReturnType<typeof memoryWith>) =>
  memory.observe({ scope, messages: [{ id: 'm1', role: 'user', content: 'I prefer tabs over spaces.' }] });

describe("an observer of the user's own", () => {
  it('has its importances clamped to [0, 1], long content cut and at most 50 observations kept', async () => {
    const memory = memoryWith({
      observe: async () => [
        { content: 'too important', importance: 5 },
        { content: 'below zero', importance: -1 },
        { content: 'infinite', importance: Number.POSITIVE_INFINITY },
        { content: 'unscored', importance: null },
        { content: 'x '.repeat(50_000), importance: 0.5 },
        ...Array.from({ length: 3_000 }, (_, index) => ({ content: `extra ${index}`, importance: 0.1 })),
      ],
    });
    await observeOnce(memory);
    const exported = JSON.parse((await memory.export(scope, 'json')).content) as {
      observations: Array<{ content: string; importance: number }>;
    };
    expect(exported.observations).toHaveLength(50);
    const [important, below, infinite, unscored, long] = exported.observations;
    expect([important?.importance, below?.importance, infinite?.importance]).toEqual([1, 0, 1]);
    expect(unscored?.importance ?? null).toBeNull();
    expect(Array.from(long?.content ?? '').length).toBeLessThanOrEqual(2_000 + ' …[truncated]'.length);
    expect(long?.content).toMatch(/…\[truncated\]$/);
  });

  it.each([
    ['NaN', [{ content: 'x', importance: Number.NaN }], /observation 0 has importance NaN/],
    ['a string importance', [{ content: 'x', importance: '0.9' }], /observation 0 has importance "0.9"/],
    ['content that is not a string', [{ content: 42, importance: 0.5 }], /observation 0 has no string content/],
    ['an answer that is not an array', { content: 'x' }, /not an array/],
  ])('is refused with MODEL_OUTPUT_INVALID for %s, and nothing is stored', async (_, answer, message) => {
    const memory = memoryWith({ observe: async () => answer as never });
    await expect(observeOnce(memory)).rejects.toMatchObject({ code: 'MODEL_OUTPUT_INVALID', message });
    expect((await memory.status(scope)).observationCount).toBe(0);
  });
});

describe("a reflector of the user's own", () => {
  it('is refused when it answers something other than a string, or more than 64 KiB', async () => {
    for (const answer of [42, `SUMMARY:\n${'y'.repeat(70_000)}`]) {
      const memory = memoryWith(
        { observe: async () => [{ content: 'User prefers tabs.', importance: 0.9 }] },
        { reflect: async () => answer as never },
      );
      await observeOnce(memory);
      await expect(memory.reflectNow(scope)).rejects.toMatchObject({ code: 'MODEL_OUTPUT_INVALID' });
      expect((await memory.status(scope)).reflectionPresent).toBe(false);
    }
  });
});

describe("a reflector of the user's own caught in a loop", () => {
  it('is refused as repetitive, and the last reflection is kept', async () => {
    let answer = 'SUMMARY:\n- The user prefers tabs.\nSUPERSESSIONS:\n- none\nCONTRADICTIONS:\n- none';
    const memory = memoryWith(
      { observe: async () => [{ content: 'User prefers tabs.', importance: 0.9 }] },
      { reflect: async () => answer },
    );
    await observeOnce(memory);
    await memory.reflectNow(scope);
    answer = `SUMMARY:\n${'- The user likes tabs.\n'.repeat(2_000)}`;
    await memory.observe({ scope, messages: [{ id: 'm2', role: 'user', content: 'Tabs, always.' }] });
    await expect(memory.reflectNow(scope)).rejects.toMatchObject({
      code: 'MODEL_OUTPUT_INVALID',
      data: { role: 'reflector', reason: 'repetitive' },
    });
    const exported = JSON.parse((await memory.export(scope, 'json')).content) as { reflection: string };
    expect(exported.reflection).toContain('The user prefers tabs.');
    expect(exported.reflection).not.toContain('likes tabs');
  });
});

describe('drain', () => {
  it('rejects with DRAIN_TIMEOUT, the pending count and the time, when operations outlast it', async () => {
    const memory = createObservationalMemory({
      store: files.track(createSqliteStore({ path: files.path })),
      observer: {
        observe: async () => {
          throw new ModelCallError({ message: 'HTTP 503', statusCode: 503 });
        },
      },
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
      retryDelayMs: 600_000,
    });
    await observeOnce(memory).catch(() => undefined);
    await expect(memory.drain(scope, { timeoutMs: 0 })).rejects.toMatchObject({
      code: 'DRAIN_TIMEOUT',
      data: { pending: 1, timeoutMs: 0 },
    });
  });
});

describe('one observe call on a store without appendMessagesAndClaim (the in-memory store)', () => {
  it('runs its own operation once, as on SQLite: a retryable failure leaves it queued, not used up', async () => {
    let calls = 0;
    const memory = createObservationalMemory({
      store: createInMemoryStore(),
      observer: {
        observe: async () => {
          calls += 1;
          throw new ModelCallError({ message: 'HTTP 503', statusCode: 503 });
        },
      },
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
      maxOperationAttempts: 2,
      retryDelayMs: 0,
    });
    await expect(observeOnce(memory)).rejects.toMatchObject({ code: 'MODEL_CALL_FAILED' });
    expect(calls).toBe(1);
    const [operation] = (await memory.operationPage(scope)).items;
    expect(operation).toMatchObject({ status: 'queued', attempt: 1 });
  });
});

describe('the model observer and reflector', () => {
  it('keep the limits they were made with, above the defaults', async () => {
    const long = `IMPORTANCE: 0.9\n${'word '.repeat(800)}`;
    const model = createMockLanguageModel((options) =>
      options.messages[0]?.content.includes('structured reflection') ? `SUMMARY:\n${'y'.repeat(80_000)}` : long,
    );
    const memory = createObservationalMemory({
      store: files.track(createSqliteStore({ path: files.path })),
      observer: createModelObserver(model, { maxObservationChars: 5_000 }),
      reflector: createModelReflector(model, { maxOutputBytes: 200_000 }),
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    await observeOnce(memory);
    const exported = JSON.parse((await memory.export(scope, 'json')).content) as {
      observations: Array<{ content: string }>;
    };
    expect(exported.observations[0]?.content.length).toBeGreaterThan(3_000);
    await memory.reflectNow(scope);
    expect((await memory.status(scope)).reflectionPresent).toBe(true);
  });
});
