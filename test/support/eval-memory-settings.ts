/**
 * The settings of the eval's conversation memory as its tests use them: an in-memory store,
 * no run store or history, the reference's thresholds and a 1 ms retry delay.
 */
import { RUNE_TOKEN_ESTIMATOR } from '../../src/core/token-estimator.js';
import type { MemoryBaselineSettings } from '../../src/eval/_conversation-memory.js';
import type { LanguageModel } from '../../src/llm/language-model.js';
import { createWorkingMemory } from '../../src/memory/working-memory.js';
import { createInMemoryStore } from '../../src/storage/in-memory-store.js';

/** Settings for `model`, with `overrides` on top (a store of its own gets its working memory). */
export function evalMemorySettings(
  model: LanguageModel,
  overrides: Partial<MemoryBaselineSettings> = {},
): MemoryBaselineSettings {
  const store = overrides.store ?? createInMemoryStore();
  return {
    model,
    store,
    workingMemory: createWorkingMemory({ store }),
    runStore: undefined,
    historyMaxTokens: 0,
    thresholds: { observeMinTokens: 1, snippetMaxTokens: 900, reflectThresholdTokens: 4000 },
    redactSecrets: true,
    toolImportanceCap: undefined,
    leaseMs: 300_000,
    retryDelayMs: 1,
    keep: false,
    estimator: RUNE_TOKEN_ESTIMATOR,
    ...overrides,
  };
}
