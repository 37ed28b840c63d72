/**
 * The LLM layer: the `LanguageModel` port, the OpenAI-compatible client, retries, the
 * circuit breaker, the provider registry and the memory-model selection.
 * @module
 */
export type {
  FinishReason,
  LanguageModel,
  LanguageModelCallOptions,
  LanguageModelMessage,
  LanguageModelResult,
  LanguageModelTool,
  LanguageModelToolCall,
  LanguageModelUsage,
} from './language-model.js';
export {
  createOpenAICompatibleModel,
  normalizeBaseUrl,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_MODEL_TIMEOUT_MS,
  PLACEHOLDER_API_KEY,
  type LanguageModelStreamPart,
  type OpenAICompatibleModel,
  type OpenAICompatibleSettings,
} from './openai-compatible.js';
export { withRetries, withoutRetries, DEFAULT_RETRY_POLICY, type RetryPolicy } from './retrying-model.js';
export {
  withCircuitBreaker,
  type CircuitBreakerModel,
  type CircuitBreakerOptions,
  type CircuitState,
} from './circuit-breaker.js';
export {
  BUILT_IN_PROVIDERS,
  isLoopbackUrl,
  listProviders,
  resolveProvider,
  type ProviderDefinition,
  type ResolvedProvider,
} from './provider-registry.js';
export {
  createAgentModel,
  selectMemoryModel,
  DEFAULT_AGENT_MODEL,
  DEFAULT_MEMORY_OPENAI_MODEL,
  type CreateAgentModelOptions,
  type MemoryModelMode,
  type MemoryModelSelection,
  type SelectMemoryModelInput,
} from './memory-model-selection.js';
export type { ModelProviderSettings, ModelSelectionConfig } from './model-selection-config.js';
