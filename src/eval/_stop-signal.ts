/**
 * Stopping an eval at once: the memory model's calls are aborted with the eval's signal, and
 * the memory work in flight is not waited for.
 */
import type { LanguageModel } from '../llm/language-model.js';

/** `model`, with each call aborted when `signal` aborts (as well as by its own `abortSignal`). */
export function withStopSignal(model: LanguageModel, signal: AbortSignal | undefined): LanguageModel {
  if (signal === undefined) return model;
  return {
    specificationVersion: 'v1',
    provider: model.provider,
    modelId: model.modelId,
    async doGenerate(options) {
      const controller = new AbortController();
      const unlink = [signal, options.abortSignal].map((source) => link(source, controller));
      try {
        return await model.doGenerate({ ...options, abortSignal: controller.signal });
      } finally {
        for (const dispose of unlink) dispose();
      }
    },
  };
}

/** Aborts `controller` when `source` aborts; returns a function that removes the listener. */
function link(source: AbortSignal | undefined, controller: AbortController): () => void {
  if (source === undefined) return () => {};
  const abort = (): void => controller.abort(source.reason);
  if (source.aborted) abort();
  else source.addEventListener('abort', abort, { once: true });
  return () => source.removeEventListener('abort', abort);
}
