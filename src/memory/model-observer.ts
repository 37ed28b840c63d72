import { HarnessMemoryError } from '../core/errors.js';
import { buildObserverPrompt, buildReflectorPrompt } from '../core/memory-prompts.js';
import { isRepetitive } from '../core/repetitive-text.js';
import { requireObject } from '../core/require-option.js';
import { redactAndCut } from '../core/redact-secrets.js';
import { stripInvisible } from '../core/sanitize-text.js';
import { stripReasoning } from '../core/strip-reasoning.js';
import type { MemoryPrompt, PromptMessage } from '../core/memory-prompts.js';
import type { Observation, ObservationConfig, ParsedObservation, StoredReflection } from '../core/observation.js';
import { isNothingToObserve, parseObservations } from '../core/parse-observations.js';
import type { Contradiction } from '../core/reflection.js';
import type { Scope } from '../core/scope.js';
import { utf8Length } from '../core/working-memory.js';
import type { LanguageModel, LanguageModelResult } from '../llm/language-model.js';

/** What the observer is given. */
export interface ObserverInput {
  readonly scope: Scope;
  readonly config: ObservationConfig;
  readonly messages: readonly PromptMessage[];
  readonly reflection: StoredReflection | null;
  /** Observations not yet covered by the reflection. */
  readonly unreflected: readonly Observation[];
  /** The model to ask instead of the observer's own (the run's, when memory follows it). */
  readonly modelId?: string;
  readonly abortSignal?: AbortSignal;
}

/** What the reflector is given. */
export interface ReflectorInput {
  readonly scope: Scope;
  readonly config: ObservationConfig;
  readonly reflection: StoredReflection | null;
  /** The observations not yet reflected, oldest first and bounded. */
  readonly observations: readonly Observation[];
  /**
   * Earlier observations still in force (already reflected, not superseded) that a new one
   * may supersede or contradict, chosen and bounded by the configuration.
   */
  readonly references?: readonly Observation[];
  /**
   * Contradictions of earlier reflections still open (no supersession has settled them),
   * newest first and bounded with the references; both observations of each are among
   * `references`. A contradiction is settled by listing a supersession of one side.
   */
  readonly contradictions?: readonly Contradiction[];
  /** The model to ask instead of the reflector's own (the run's, when memory follows it). */
  readonly modelId?: string;
  readonly abortSignal?: AbortSignal;
}

/**
 * Turns new transcript into scored observations. An empty list means the observer found
 * nothing worth remembering: the messages count as observed.
 */
export interface Observer {
  observe(input: ObserverInput): Promise<ParsedObservation[]>;
}

/** Compresses observations into a reflection; returns the raw reflection text. */
export interface Reflector {
  reflect(input: ReflectorInput): Promise<string>;
}

/** Bounds on what a model may hand back. */
export interface ModelOutputLimits {
  /** Largest answer accepted, in bytes. @default 65536 */
  maxOutputBytes?: number;
  /** Most observations kept from one answer. @default 50 */
  maxObservations?: number;
  /** Longest observation, in characters. @default 2000 */
  maxObservationChars?: number;
}

/**
 * Marks the observers and reflectors made here: they hold their answers to their own
 * `ModelOutputLimits`, so the worker's bounds for those of a library user's own (which would
 * cut them to the defaults) are not applied again.
 */
export const BOUNDED_OUTPUT: unique symbol = Symbol('harness-memory.bounded-output');

/** True for an observer or reflector made by {@link createModelObserver} or {@link createModelReflector}. */
export function hasBoundedOutput(maker: Observer | Reflector): boolean {
  return (maker as unknown as Record<symbol, unknown>)[BOUNDED_OUTPUT] === true;
}

/** Largest model answer accepted by default (64 KiB). */
export const DEFAULT_MAX_OUTPUT_BYTES = 65536;

/**
 * An observer backed by a language model, with the reference's prompt contract. An answer
 * saying there is nothing to remember (`NONE`) observes nothing; an answer with no
 * observation in it otherwise is refused (`MODEL_OUTPUT_INVALID`, reason `empty`).
 */
export function createModelObserver(model: LanguageModel, limits: ModelOutputLimits = {}): Observer {
  requireObject(
    'createModelObserver',
    'model',
    model,
    ['doGenerate'],
    'Pass a LanguageModel, such as createOpenAICompatibleModel({ baseURL, modelId }).',
  );
  const observer: Observer = {
    async observe(input) {
      const text = await ask(model, 'observer', buildObserverPrompt(input), input, limits);
      if (isNothingToObserve(text)) return [];
      const observations = parseObservations(text, {
        ...(limits.maxObservations !== undefined ? { maxObservations: limits.maxObservations } : {}),
        ...(limits.maxObservationChars !== undefined ? { maxObservationChars: limits.maxObservationChars } : {}),
      });
      if (observations.length === 0) {
        // Not empty: what came back tells a model that answers in another format from one
        // that says nothing.
        const excerpt = JSON.stringify(redactAndCut(stripInvisible(text), 80, '…'));
        throw outputError(
          'observer',
          'empty',
          `observer answered without any observation in a known format (it began ${excerpt}); nothing was stored`,
        );
      }
      return observations;
    },
  };
  return Object.defineProperty(observer, BOUNDED_OUTPUT, { value: true });
}

/** A reflector backed by a language model. */
export function createModelReflector(model: LanguageModel, limits: ModelOutputLimits = {}): Reflector {
  requireObject(
    'createModelReflector',
    'model',
    model,
    ['doGenerate'],
    'Pass a LanguageModel, such as createOpenAICompatibleModel({ baseURL, modelId }).',
  );
  const reflector: Reflector = {
    async reflect(input) {
      return ask(model, 'reflector', buildReflectorPrompt(input), input, limits);
    },
  };
  return Object.defineProperty(reflector, BOUNDED_OUTPUT, { value: true });
}

/** Sends a memory prompt and returns the accepted answer text. */
async function ask(
  model: LanguageModel,
  role: 'observer' | 'reflector',
  prompt: MemoryPrompt,
  call: { readonly modelId?: string | undefined; readonly abortSignal?: AbortSignal | undefined },
  limits: ModelOutputLimits,
): Promise<string> {
  const result = await model.doGenerate({
    messages: [
      { role: 'system', content: prompt.system },
      { role: 'user', content: prompt.user },
    ],
    ...(call.modelId ? { modelId: call.modelId } : {}),
    ...(call.abortSignal ? { abortSignal: call.abortSignal } : {}),
  });
  return acceptOutput(role, result, limits.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES);
}

/**
 * Rejects answers that must not be stored: cut off by the token limit, refused or
 * filtered, empty, larger than the cap, or (a reflection) mostly the same lines repeated.
 * Returns the trimmed text otherwise.
 */
export function acceptOutput(role: 'observer' | 'reflector', result: LanguageModelResult, maxBytes: number): string {
  if (result.finishReason === 'length') {
    throw outputError(
      role,
      'truncated',
      `${role} answer was cut off by the token limit (finish_reason length); nothing was stored`,
    );
  }
  if (result.finishReason === 'content-filter' || result.finishReason === 'refusal' || result.refusal) {
    throw outputError(
      role,
      'refused',
      `${role} model refused or was filtered (${result.finishReason}); nothing was stored`,
    );
  }
  const bytes = utf8Length(result.text);
  if (bytes > maxBytes) {
    throw outputError(
      role,
      'too_large',
      `${role} answer is ${bytes} bytes, over the ${maxBytes}-byte cap; nothing was stored`,
    );
  }
  // Thinking a reasoning model wrote into its answer is not what it concluded: never stored.
  const text = stripReasoning(result.text).trim();
  if (text === '') throw outputError(role, 'empty', `${role} returned empty output`);
  // A reflection replaces the last one whole: a model caught in a loop must not erase it.
  if (role === 'reflector' && isRepetitive(text)) {
    throw outputError(
      role,
      'repetitive',
      `${role} answer is mostly the same lines repeated; nothing was stored, the last reflection is kept`,
    );
  }
  return text;
}

function outputError(role: string, reason: string, message: string): HarnessMemoryError {
  return new HarnessMemoryError({
    code: 'MODEL_OUTPUT_INVALID',
    component: role,
    message: `${message}.`,
    data: { role, reason },
  });
}
