import { describe, expect, it } from 'vitest';
import { ConfigError } from '../core/errors.js';
import { buildObserverPrompt, maxReflectorInputTokens } from '../core/memory-prompts.js';
import {
  DEFAULT_OBSERVATION_CONFIG,
  MAX_OBSERVE_MIN_TOKENS,
  MAX_REFLECT_THRESHOLD_TOKENS,
  MAX_SNIPPET_MAX_TOKENS,
} from '../core/observation.js';
import { memoryIdOf } from '../core/scope.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { messages, scriptedObserver, scriptedReflector } from '../../test/support/scripted-models.js';
import { effectiveConfig, validateOverrides, validateThresholds } from './memory-settings.js';
import { createObservationalMemory } from './observational-memory.js';

const scope = { tenantId: 'acme', conversationId: 'c1', agentId: 'assistant' };

function configErrorOf(work: () => unknown): ConfigError {
  try {
    work();
  } catch (error) {
    if (ConfigError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('memory settings: the bounds of the thresholds', () => {
  it('refuses a per-scope reflect_threshold_tokens above the bound, naming the setting and the maximum', () => {
    const error = configErrorOf(() => validateOverrides({ reflectThresholdTokens: 1e15 }));
    expect(error).toMatchObject({ key: 'reflect_threshold_tokens', source: 'observational_memory.enable' });
    expect(error.message).toContain(`reflect_threshold_tokens: must be at most ${MAX_REFLECT_THRESHOLD_TOKENS}`);
    expect(validateOverrides({ reflectThresholdTokens: MAX_REFLECT_THRESHOLD_TOKENS })).toEqual({
      reflectThresholdTokens: MAX_REFLECT_THRESHOLD_TOKENS,
    });
  });

  it('refuses a per-scope observe_min_tokens above the bound, naming the setting and the maximum', () => {
    const error = configErrorOf(() => validateOverrides({ observeMinTokens: MAX_OBSERVE_MIN_TOKENS + 1 }));
    expect(error).toMatchObject({ key: 'observe_min_tokens' });
    expect(error.message).toContain(`observe_min_tokens: must be at most ${MAX_OBSERVE_MIN_TOKENS}`);
    expect(validateOverrides({ observeMinTokens: MAX_OBSERVE_MIN_TOKENS })).toEqual({
      observeMinTokens: MAX_OBSERVE_MIN_TOKENS,
    });
  });

  it("reads a library caller's defaults above the reflect and observe bounds as the bounds", async () => {
    // Embedders (and tests) pass 2 ** 30 to mean "never": the prompts stay bounded all the same.
    expect(
      validateThresholds({ observeMinTokens: 2 ** 30, snippetMaxTokens: 900, reflectThresholdTokens: 2 ** 30 }, 'test'),
    ).toEqual({ observeMinTokens: MAX_OBSERVE_MIN_TOKENS, snippetMaxTokens: 900, reflectThresholdTokens: 100_000 });
    const memory = createObservationalMemory({
      store: createInMemoryStore(),
      defaults: { observeMinTokens: 1e15, reflectThresholdTokens: 1e15 },
    });
    expect((await memory.status(scope)).config).toMatchObject({
      observeMinTokens: MAX_OBSERVE_MIN_TOKENS,
      reflectThresholdTokens: MAX_REFLECT_THRESHOLD_TOKENS,
    });
    // The snippet budget is refused, as before; so is anything not a positive integer.
    expect(() => validateThresholds({ ...DEFAULT_OBSERVATION_CONFIG, snippetMaxTokens: 32_001 }, 'test')).toThrow(
      /snippet_max_tokens: must be at most 32000/,
    );
    const error = configErrorOf(() =>
      validateThresholds({ ...DEFAULT_OBSERVATION_CONFIG, reflectThresholdTokens: 1.5 }, 'test.defaults'),
    );
    expect(error).toMatchObject({ key: 'reflect_threshold_tokens', source: 'test.defaults' });
  });

  it('reads a threshold stored above its bound (before it was checked) as the bound', () => {
    expect(
      effectiveConfig(DEFAULT_OBSERVATION_CONFIG, {
        observeMinTokens: 1e15,
        snippetMaxTokens: Number.MAX_SAFE_INTEGER,
        reflectThresholdTokens: 1e15,
      }),
    ).toEqual({
      observeMinTokens: MAX_OBSERVE_MIN_TOKENS,
      snippetMaxTokens: MAX_SNIPPET_MAX_TOKENS,
      reflectThresholdTokens: MAX_REFLECT_THRESHOLD_TOKENS,
    });
    expect(effectiveConfig(DEFAULT_OBSERVATION_CONFIG, { reflectThresholdTokens: 5 })).toEqual({
      ...DEFAULT_OBSERVATION_CONFIG,
      reflectThresholdTokens: 5,
    });
  });

  it("keeps the reflector's largest prompt within a million tokens at the bounds", () => {
    const largest = effectiveConfig(DEFAULT_OBSERVATION_CONFIG, {
      snippetMaxTokens: Number.MAX_SAFE_INTEGER,
      reflectThresholdTokens: Number.MAX_SAFE_INTEGER,
    });
    expect(maxReflectorInputTokens(largest)).toBe(565_700);
  });
});

describe('memory settings: a scope cannot make the memory-model prompts unbounded', () => {
  it('refuses enable {reflect_threshold_tokens: 1e15} and keeps the scope as it was', async () => {
    const memory = createObservationalMemory({ store: createInMemoryStore(), defaultEnabled: false });
    await expect(memory.setEnabled(scope, true, { reflectThresholdTokens: 1e15 })).rejects.toThrow(
      /reflect_threshold_tokens: must be at most 100000, got 1000000000000000/,
    );
    expect(await memory.status(scope)).toMatchObject({
      enabled: false,
      config: { reflectThresholdTokens: DEFAULT_OBSERVATION_CONFIG.reflectThresholdTokens },
    });
  });

  it("gives the observer at most the bound's unreflected observations when a larger threshold was stored", async () => {
    const store = createInMemoryStore();
    const observer = scriptedObserver('IMPORTANCE: 0.5\nThe user said hello.');
    const memory = createObservationalMemory({
      store,
      observer,
      reflector: scriptedReflector('SUMMARY:\nMany facts.'),
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    // 150 observations of about 1,000 tokens each: 150,000 tokens never reflected.
    const fact = (index: number): string => `Fact ${index}: ${'lorem ipsum '.repeat(333)}`;
    await memory.importObservations(
      scope,
      Array.from({ length: 150 }, (_, index) => ({ content: fact(index) })),
    );
    // Written past the check, as a store of an earlier version could hold it.
    await store.updateSettings({
      scope,
      memoryId: memoryIdOf(scope),
      enabled: true,
      config: { reflectThresholdTokens: 1e15 },
      runId: 'r',
      toolCallId: 't',
      operationId: 'op_old',
    });
    expect((await memory.status(scope)).config.reflectThresholdTokens).toBe(MAX_REFLECT_THRESHOLD_TOKENS);
    await memory.observe({ scope, messages: messages(0, 1) });
    const input = observer.calls[0];
    if (input === undefined) throw new Error('the observer was not called');
    const tokens = input.unreflected.reduce((sum, observation) => sum + observation.tokenCount, 0);
    expect(tokens).toBeGreaterThan(0);
    expect(tokens).toBeLessThanOrEqual(MAX_REFLECT_THRESHOLD_TOKENS);
    // 150,000 tokens of observations are about 600,000 characters; the bound's about 400,000.
    expect(buildObserverPrompt(input).user.length).toBeLessThan(450_000);
  });
});
