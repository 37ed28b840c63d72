/**
 * Builds the harness for a command. Commands that never call a model still work when no
 * model is configured: they get placeholder models that fail clearly if ever called.
 * @module
 */
import { ConfigError, HarnessMemoryError } from '../core/errors.js';
import type { LanguageModel } from '../llm/language-model.js';
import { createHarness } from '../server/create-harness.js';
import { createJsonLogger } from '../server/fault-log.js';
import type { Harness } from '../server/create-harness.js';
import type { CliContext } from './context.js';

/** Options of {@link openHarness}. */
export interface OpenHarnessOptions {
  /** Run the background memory worker (`serve`, `run`). @default false */
  readonly startWorker?: boolean;
  /** Fall back to placeholder models when model configuration is missing. @default false */
  readonly modelsOptional?: boolean;
  /** Told why a model fell back to a placeholder. */
  readonly onModelMissing?: (error: ConfigError) => void;
}

/** Builds the harness from the context's configuration and environment. */
export async function openHarness(context: CliContext, options: OpenHarnessOptions = {}): Promise<Harness> {
  // Faults go to the command's stderr, as JSON lines.
  const base = {
    config: context.config(),
    env: context.env,
    startWorker: options.startWorker ?? false,
    logger: createJsonLogger(context.stderr),
  };
  if (!options.modelsOptional) return createHarness(base);
  try {
    return await createHarness(base);
  } catch (error) {
    if (!isModelConfigError(error)) throw error;
    options.onModelMissing?.(error);
    try {
      return await createHarness({ ...base, agentModel: unconfiguredModel('agent', error) });
    } catch (second) {
      if (!isModelConfigError(second)) throw second;
      return createHarness({
        ...base,
        agentModel: unconfiguredModel('agent', error),
        memoryModel: unconfiguredModel('memory', second),
      });
    }
  }
}

/** A configuration error from choosing a model (not from storage or the server settings). */
export function isModelConfigError(error: unknown): error is ConfigError {
  return error instanceof ConfigError && /^(model\.|memory\.llm_|providers\.)/.test(error.key);
}

/** A model that explains, when called, why no model is configured. */
function unconfiguredModel(role: 'agent' | 'memory', reason: ConfigError): LanguageModel {
  const detail = reason.detail;
  return {
    specificationVersion: 'v1',
    provider: 'unconfigured',
    modelId: '(not configured)',
    doGenerate() {
      return Promise.reject(
        new HarnessMemoryError({
          code: 'CONFIG_INVALID',
          component: 'config',
          message: `this needs the ${role} model, which is not configured: ${detail}`,
          data: { key: reason.key, source: reason.source },
        }),
      );
    },
  };
}
