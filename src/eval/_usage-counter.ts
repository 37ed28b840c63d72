/**
 * Token counting for the eval: a model wrapper that sums what its calls used, and the
 * count of a prompt when the server reports none.
 */
import type { TokenEstimator } from '../core/token-estimator.js';
import type { LanguageModel, LanguageModelMessage, LanguageModelResult } from '../llm/language-model.js';

/** Tokens a model used, summed over calls. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/**
 * The input tokens of a call as the server reported them; estimated from the messages when
 * it reported none (some OpenAI-compatible servers send no usage).
 */
export function inputTokensOf(
  result: LanguageModelResult,
  messages: readonly LanguageModelMessage[],
  estimator: TokenEstimator,
): number {
  return result.usage.inputTokens > 0
    ? result.usage.inputTokens
    : messages.reduce((sum, message) => sum + estimator.estimate(message.content), 0);
}

/**
 * `model`, with every successful call's usage added to `usage`. Failed calls add nothing:
 * providers do not report usage for them.
 */
export function withUsageCounter(model: LanguageModel, usage: TokenUsage, estimator: TokenEstimator): LanguageModel {
  return {
    specificationVersion: 'v1',
    provider: model.provider,
    modelId: model.modelId,
    async doGenerate(options) {
      const result = await model.doGenerate(options);
      usage.inputTokens += inputTokensOf(result, options.messages, estimator);
      usage.outputTokens += result.usage.outputTokens > 0 ? result.usage.outputTokens : estimator.estimate(result.text);
      return result;
    },
  };
}
