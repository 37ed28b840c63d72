/**
 * A stand-in for a model whose settings are missing or wrong: the process starts, and a call
 * that needs the model fails naming the setting to fix.
 * @module
 */
import type { ConfigError } from '../core/errors.js';
import { HarnessMemoryError } from '../core/errors.js';
import type { LanguageModel } from './language-model.js';

/** A model that rejects every call with `CONFIG_INVALID`, saying why no `role` model is configured. */
export function unconfiguredModel(role: 'agent' | 'memory', reason: ConfigError): LanguageModel {
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
