/**
 * The settings the model selection reads, as a plain type of the llm layer: the loaded
 * `HarnessConfig` (from `harness-memory/config`) has this shape, so it can be passed as is,
 * while the llm layer depends on `core` alone.
 * @module
 */

/** A named OpenAI-compatible provider, as `[providers.NAME]` defines it. */
export interface ModelProviderSettings {
  readonly baseUrl: string;
  readonly apiKeyEnv?: string;
  readonly model?: string;
}

/** What {@link selectMemoryModel} and {@link createAgentModel} read from the configuration. */
export interface ModelSelectionConfig {
  readonly memory: {
    readonly llmMode: string | undefined;
    readonly llmProvider: string;
    readonly llmModel: string;
    readonly llmBaseUrl: string;
    readonly llmApiKey: string;
  };
  readonly model: {
    readonly name: string;
    readonly provider: string;
    readonly baseUrl: string;
  };
  readonly openai: {
    readonly apiKey: string;
    readonly baseUrl: string;
  };
  readonly providers: Readonly<Record<string, ModelProviderSettings>>;
  /** Where each setting came from (`memory.llm_mode` → a file path or env variable name). */
  readonly sources: Readonly<Record<string, string>>;
}
