/**
 * Observational and working memory for any AI SDK model, as language-model middleware.
 * @module
 */
import { untilStopped } from '../core/until-stopped.js';
import { randomUUID } from 'node:crypto';
import type {
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3Middleware,
  LanguageModelV3StreamPart,
} from '@ai-sdk/provider';
import { createTurnPreparer } from '../agent/prepare-turn.js';
import { HarnessMemoryError } from '../core/errors.js';
import { invalidOption, requireObject, requireOptions } from '../core/require-option.js';
import { memoryIdOf, resolveScope, type ScopeInput } from '../core/scope.js';
import type { TranscriptMessage } from '../core/transcript.js';
import type { ObservationalMemory } from '../memory/observational-memory.js';
import type { WorkingMemory } from '../memory/working-memory.js';
import {
  MEMORY_BLOCK_OPTION,
  identify,
  isMemoryBlock,
  promptToTranscript,
  responseToTranscript,
} from './_prompt-messages.js';
import { SeenIds } from './_seen-ids.js';

/** Where a memory failure happened; the model call went on either way. */
export type MemoryMiddlewarePhase = 'prepare' | 'observe';

/** What {@link createMemoryMiddleware} takes. */
export interface MemoryMiddlewareOptions {
  readonly memory: ObservationalMemory;
  readonly workingMemory: WorkingMemory;
  /** The scope of every call, or a function of the call's params (for example reading `providerOptions`). */
  readonly scope: ScopeInput | ((params: LanguageModelV3CallOptions) => ScopeInput);
  /** Called with every memory failure; the model call is never failed by one. */
  readonly onError?: (error: Error, phase: MemoryMiddlewarePhase) => void | Promise<void>;
  /** Where failures are logged. @default console */
  readonly logger?: { warn(message: string): void };
  /** Message ids remembered per scope, so a resent history is not handed to the store again. @default 10000 */
  readonly maxSeenPerScope?: number;
}

/** What a wrapping hook of {@link MemoryMiddleware} is given (loosely typed: see there). */
export interface MiddlewareCall {
  /* oxlint-disable typescript/no-explicit-any -- one type for ai 6 and ai 7 (see MemoryMiddleware) */
  readonly doGenerate: () => PromiseLike<any>;
  readonly doStream: () => PromiseLike<any>;
  readonly params: any;
  readonly model: any;
  /* oxlint-enable typescript/no-explicit-any */
}

/** The middleware, plus a way to wait for the observations it started. */
export interface MemoryMiddleware {
  readonly specificationVersion: 'v3';
  /* oxlint-disable typescript/no-explicit-any -- The hooks are typed loosely on purpose: ai 6
     takes V3 middleware and ai 7 V4, whose call options and models differ in their literal
     version fields, so no precise type is assignable to both. The hooks are V3 ones, which
     ai 7 accepts at run time (`LanguageModelMiddleware` with any `specificationVersion`). */
  transformParams(options: { type: 'generate' | 'stream'; params: any; model: any }): PromiseLike<any>;
  wrapGenerate(options: MiddlewareCall): PromiseLike<any>;
  wrapStream(options: MiddlewareCall): PromiseLike<any>;
  /* oxlint-enable typescript/no-explicit-any */
  /** Resolves when every observation started so far has finished (or failed). */
  flush(): Promise<void>;
}

/**
 * Creates AI SDK middleware that puts the working-memory and observational-memory snippets in
 * front of every call (exactly what the harness's runner injects, replacing its own earlier
 * block), and after each call hands the messages it has not seen, with the response, to
 * `memory.observe` off the critical path: a generate result returns at once, a stream passes
 * through untouched and observation starts when it ends.
 * @example
 * const scope = { tenantId: 'acme', conversationId: 'c1' };
 * const middleware = createMemoryMiddleware({ memory, workingMemory, scope });
 * const model = wrapLanguageModel({ model: openai('gpt-5-mini'), middleware });
 */
export function createMemoryMiddleware(options: MemoryMiddlewareOptions): MemoryMiddleware {
  const maxSeen = checkMiddlewareOptions(options);
  const { memory } = options;
  const logger = options.logger ?? console;
  const preparer = createTurnPreparer({
    observationalMemory: memory,
    workingMemory: options.workingMemory,
    historyMaxTokens: 0,
  });
  const pending = new Set<Promise<void>>();
  const seenIds = new SeenIds(maxSeen);

  // Neither a throwing logger nor an onError that throws or rejects may fail the model call
  // (or, as an unhandled rejection, end the process).
  const report = (error: unknown, phase: MemoryMiddlewarePhase): void => {
    const failure = error instanceof Error ? error : new Error(String(error));
    try {
      logger.warn(`harness-memory: ${phase} failed, the model call went on without it: ${failure.message}`);
    } catch {
      // The log sink is gone; onError may still hear of it.
    }
    try {
      const handled: unknown = options.onError?.(failure, phase);
      if (handled instanceof Promise) handled.catch(() => undefined);
    } catch {
      // As above.
    }
  };

  const scopeOf = (params: LanguageModelV3CallOptions) =>
    resolveScope(typeof options.scope === 'function' ? options.scope(params) : options.scope);

  // The scope's generation when a call began, so a forget during the call stores nothing of it
  // (the forgotten messages would come back otherwise). Undefined when it could not be read.
  const generationOf = async (params: LanguageModelV3CallOptions): Promise<number | undefined> => {
    try {
      return await memory.generation(scopeOf(params));
    } catch {
      return undefined;
    }
  };

  const observe = (
    params: LanguageModelV3CallOptions,
    content: readonly LanguageModelV3Content[],
    generation: Promise<number | undefined>,
  ): void => {
    const task = (async () => {
      const scope = scopeOf(params);
      const messages = identify([...promptToTranscript(params.prompt), ...responseToTranscript(content)]);
      const memoryId = memoryIdOf(scope);
      const began = await generation;
      // Ids are known per generation: after a forget every message is handed over again, as a
      // new process would. With the generation unread none is trusted (the store skips what
      // it holds).
      const seen = began === undefined ? undefined : seenIds.of(memoryId, began);
      const fresh: TranscriptMessage[] = seen
        ? messages.filter((message) => !seen.has(message.id as string))
        : messages;
      if (fresh.length === 0) return;
      const result = await memory.observe({
        scope,
        runId: `ai-sdk-${randomUUID()}`,
        messages: fresh,
        ...(began === undefined ? {} : { generation: began }),
      });
      // The scope was forgotten during the call: nothing was stored, and nothing of it may be.
      if (result.status === 'skipped' && result.reason === 'forgotten') return;
      // Nothing was stored: the messages must be handed over again once the scope observes.
      if (result.status === 'skipped' && (result.reason === 'disabled' || result.reason === 'mode_off')) return;
      // Under which generation they were stored is unknown: noted under none, they are handed over again.
      if (began === undefined) return;
      seenIds.add(
        memoryId,
        began,
        fresh.map((message) => message.id as string),
      );
    })().catch((error: unknown) => report(error, 'observe'));
    pending.add(task);
    void task.finally(() => pending.delete(task));
  };

  const middleware: Required<Pick<LanguageModelV3Middleware, 'transformParams' | 'wrapGenerate' | 'wrapStream'>> &
    Pick<MemoryMiddleware, 'specificationVersion' | 'flush'> = {
    specificationVersion: 'v3',

    async transformParams({ params }) {
      const prompt = params.prompt.filter((message) => !isMemoryBlock(message));
      try {
        // A call its caller gave up on does not wait for memory: the model call that follows
        // fails at once with the caller's abort.
        const turn = await untilStopped(preparer.prepareTurn(scopeOf(params)), params.abortSignal);
        for (const failure of turn.failures) report(failure.error, 'prepare');
        const block = turn.messages.map((message) => ({
          role: 'system' as const,
          content: message.content ?? '',
          providerOptions: { [MEMORY_BLOCK_OPTION]: { block: true } },
        }));
        // After the caller's own leading system messages: memory never comes before instructions.
        const lead = prompt.findIndex((message) => message.role !== 'system');
        const at = lead < 0 ? prompt.length : lead;
        return { ...params, prompt: [...prompt.slice(0, at), ...block, ...prompt.slice(at)] };
      } catch (error) {
        // Aborted by the caller: no failure of memory's, the model call fails with the abort.
        if (!params.abortSignal?.aborted) report(error, 'prepare');
        return { ...params, prompt };
      }
    },

    async wrapGenerate({ doGenerate, params }) {
      const generation = generationOf(params);
      const result = await doGenerate();
      observe(params, result.content, generation);
      return result;
    },

    async wrapStream({ doStream, params }) {
      const generation = generationOf(params);
      const result = await doStream();
      const content = new StreamContent();
      // A stream that ends whole hands over the prompt and the answer; one cancelled by its
      // reader, broken off by the connection or carrying an error part hands over the prompt
      // alone: half an answer is not what the model said, and the user's words must not be
      // lost with it (a one-message call is never sent again).
      const stream = observedStream(result.stream as ReadableStream<LanguageModelV3StreamPart>, content, (whole) =>
        observe(params, whole ? content.parts() : [], generation),
      );
      return { ...result, stream };
    },

    async flush() {
      while (pending.size > 0) await Promise.all(pending);
    },
  };
  return middleware;
}

/**
 * A scope given as ids is checked when the middleware is made, as every other option (`OPTION_INVALID`):
 * without a conversation id it would fail every model call's memory, one warning at a time.
 */
export function checkStaticScope(factory: string, scope: unknown): void {
  if (typeof scope === 'function') return;
  try {
    resolveScope(scope as ScopeInput);
  } catch (error) {
    const problem = HarnessMemoryError.isInstance(error) ? error.detail : String(error);
    throw invalidOption(
      factory,
      'scope',
      `is not a valid scope: ${problem}`,
      'Pass { tenantId, conversationId, agentId } with a conversationId, or (params) => ({ ... }).',
    );
  }
}

/** Checks the options; returns how many message ids per scope are remembered. */
function checkMiddlewareOptions(options: MemoryMiddlewareOptions): number {
  requireOptions('createMemoryMiddleware', options, 'Pass { memory, workingMemory, scope }.');
  requireObject(
    'createMemoryMiddleware',
    'memory',
    options.memory,
    ['observe', 'snippet'],
    'Pass the service from createObservationalMemory({ store }).',
  );
  requireObject(
    'createMemoryMiddleware',
    'workingMemory',
    options.workingMemory,
    ['snippet'],
    'Pass the service from createWorkingMemory({ store }).',
  );
  if (options.scope === null || (typeof options.scope !== 'object' && typeof options.scope !== 'function')) {
    throw invalidOption(
      'createMemoryMiddleware',
      'scope',
      'is required (scope ids, or a function of the call params)',
      'Pass { tenantId, conversationId, agentId } or (params) => ({ ... }).',
    );
  }
  checkStaticScope('createMemoryMiddleware', options.scope);
  const maxSeen = options.maxSeenPerScope ?? 10_000;
  if (!Number.isSafeInteger(maxSeen) || maxSeen < 1)
    throw invalidOption(
      'createMemoryMiddleware',
      'maxSeenPerScope',
      `must be a positive integer, got ${JSON.stringify(maxSeen)}`,
      'Leave it out for 10000.',
    );
  return maxSeen;
}

/**
 * The stream passed through part for part, unbuffered, calling `ended` once: with `true` when
 * it ended whole, `false` when its reader cancelled it, reading it failed, or it carried an
 * error part.
 */
function observedStream(
  source: ReadableStream<LanguageModelV3StreamPart>,
  content: StreamContent,
  ended: (whole: boolean) => void,
): ReadableStream<LanguageModelV3StreamPart> {
  const reader = source.getReader();
  let done = false;
  const end = (whole: boolean): void => {
    if (done) return;
    done = true;
    ended(whole && !content.failed);
  };
  return new ReadableStream<LanguageModelV3StreamPart>(
    {
      async pull(controller) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (error) {
          end(false);
          controller.error(error);
          return;
        }
        if (next.done) {
          end(true);
          controller.close();
          return;
        }
        content.add(next.value);
        controller.enqueue(next.value);
      },
      async cancel(reason) {
        end(false);
        await reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/** Gathers a stream's text, files and tool calls into the content a generate call would have answered. */
class StreamContent {
  readonly #texts = new Map<string, string>();
  readonly #others: LanguageModelV3Content[] = [];
  /** Whether the stream carried an error part: what came before it is not a whole answer. */
  failed = false;

  add(part: LanguageModelV3StreamPart): void {
    if (part.type === 'text-delta') this.#texts.set(part.id, (this.#texts.get(part.id) ?? '') + part.delta);
    else if (part.type === 'file' || part.type === 'tool-call' || part.type === 'tool-result') this.#others.push(part);
    else if (part.type === 'error') this.failed = true;
  }

  parts(): LanguageModelV3Content[] {
    return [...[...this.#texts.values()].map((text) => ({ type: 'text' as const, text })), ...this.#others];
  }
}
