/**
 * A {@link LanguageModel} over any OpenAI-compatible chat completions server (OpenAI,
 * OpenRouter, Ollama, vLLM, LiteLLM, …), built on the `openai` SDK with its retries off.
 * @module
 */
import OpenAI, { APIError, APIUserAbortError } from 'openai';
import { requireCount, requireOptions, requireString, requireTimerMs } from '../core/require-option.js';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { ConfigError, ModelCallError } from '../core/errors.js';
import { maskPasswords } from '../core/mask-passwords.js';
import { boundedFetch } from './_bounded-fetch.js';
import { parseCompletion, StreamAssembler, toChatMessages, toChatTools } from './_chat-completions.js';
import { toModelCallError } from './_model-call-errors.js';
import type {
  LanguageModel,
  LanguageModelCallOptions,
  LanguageModelResult,
  LanguageModelStreamPart,
} from './language-model.js';

export type { LanguageModelStreamPart } from './language-model.js';

/** Whole-call timeout of a model call, in milliseconds (the reference's 90 s). */
export const DEFAULT_MODEL_TIMEOUT_MS = 90_000;
/** Largest response body read by default (16 MiB); see {@link OpenAICompatibleSettings.maxResponseBytes}. */
export const DEFAULT_MAX_RESPONSE_BYTES: number = 16 * 1024 * 1024;
/** API key sent when none is given; local servers usually ignore it. */
export const PLACEHOLDER_API_KEY = 'not-needed';

/**
 * Settings of {@link createOpenAICompatibleModel}. Every optional one also takes `undefined`
 * (`apiKey: process.env.OPENAI_API_KEY` under `exactOptionalPropertyTypes`).
 */
export interface OpenAICompatibleSettings {
  /** Server base URL, with or without a trailing `/v1` (for example `http://127.0.0.1:11434`). */
  readonly baseURL: string;
  /** Model id sent as `model`, unless a call gives its own `modelId`. */
  readonly modelId: string;
  /** Provider name reported by the model. @default "openai-compatible" */
  readonly provider?: string | undefined;
  /** Sent as `Authorization: Bearer …`. @default "not-needed" */
  readonly apiKey?: string | undefined;
  /** Whole-call timeout in milliseconds, reading the body included. @default 90000 */
  readonly timeout?: number | undefined;
  /** Extra headers on every request. @default {} */
  readonly headers?: Readonly<Record<string, string>> | undefined;
  /** The fetch implementation, for tests or proxies. @default globalThis.fetch */
  readonly fetch?: typeof globalThis.fetch | undefined;
  /** When true, `doGenerate` streams the answer and assembles it. @default false */
  readonly stream?: boolean | undefined;
  /** Body field for `maxOutputTokens`; some older servers know only `max_tokens`. @default "max_completion_tokens" */
  readonly maxTokensParameter?: 'max_tokens' | 'max_completion_tokens' | undefined;
  /**
   * Most bytes of a successful response read: past it the call stops reading, drops the
   * connection and fails with a `ModelCallError` that is not retryable. A streamed answer counts
   * its whole event stream, several times the size of its text. (Of a failed response, the first
   * 64 KiB are read for the error.) @default 16777216 (16 MiB)
   */
  readonly maxResponseBytes?: number | undefined;
}

/** An OpenAI-compatible model: a {@link LanguageModel} that can also stream. */
export interface OpenAICompatibleModel extends LanguageModel {
  /** The normalised base URL, ending in `/v1`. */
  readonly baseURL: string;
  /**
   * Streams the answer. The last part is `finish` with the assembled result; a stream cut
   * before the model finished throws a retryable `ModelCallError` instead.
   */
  doStream(options: LanguageModelCallOptions): AsyncIterable<LanguageModelStreamPart>;
}

/**
 * Normalises a base URL so the SDK reaches `<origin><path>/v1/chat/completions` exactly once:
 * trims spaces and trailing slashes, drops a pasted `/chat/completions`, adds `/v1` when the path
 * names no API version (`/v1`, `/v4`, `/v1beta/openai` are kept as they are).
 * Throws a `ConfigError` for anything that is not an http(s) URL.
 * @example normalizeBaseUrl('http://127.0.0.1:11434/') // 'http://127.0.0.1:11434/v1'
 */
export function normalizeBaseUrl(baseUrl: string): string {
  const trimmed = baseUrl.trim();
  let parsed: URL | undefined;
  try {
    parsed = new URL(trimmed);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    throw new ConfigError({
      key: 'baseURL',
      source: 'model settings',
      message:
        `must be an http(s) URL such as https://api.openai.com/v1 or http://127.0.0.1:11434 (got ` +
        `${JSON.stringify(maskPasswords(trimmed))})`,
    });
  }
  // Both would be dropped from every request without a word: fetch refuses credentials in a
  // URL, and the client appends its paths to the base, so a query would end up mid-path.
  const dropped =
    parsed.username !== '' || parsed.password !== ''
      ? "must not hold a user name or password: give the key as the model's API key (apiKey, api_key_env, " +
        'HARNESS_MEMORY_LLM_API_KEY)'
      : parsed.search !== '' || parsed.hash !== ''
        ? 'must not hold a query string or fragment'
        : undefined;
  if (dropped !== undefined)
    throw new ConfigError({
      key: 'baseURL',
      source: 'model settings',
      message: `${dropped} (got ${JSON.stringify(maskPasswords(trimmed))})`,
    });
  const path = parsed.pathname.replace(/\/+$/, '').replace(/\/chat\/completions$/, '');
  // A path that names an API version already (`/v1`, `/v1beta/openai`, `/api/paas/v4`) is
  // the server's own base: appending `/v1` to it would reach a path that does not exist.
  const versioned = path.split('/').some((segment) => API_VERSION_SEGMENT.test(segment));
  return `${parsed.origin}${versioned ? path : `${path}/v1`}`;
}

const API_VERSION_SEGMENT = /^v\d+(?:(?:alpha|beta|preview)\d*)?$/iu;

/**
 * Creates a model over an OpenAI-compatible server. The SDK's own retries are off
 * (`maxRetries: 0`): wrap the model with `withRetries` for the single retry layer.
 * Every failure is a `ModelCallError` that says whether retrying can help.
 * @example
 * ```ts
 * import { createOpenAICompatibleModel } from 'harness-memory/llm';
 *
 * const model = createOpenAICompatibleModel({ baseURL: 'http://127.0.0.1:11434', modelId: 'llama3.2' });
 * const { text } = await model.doGenerate({ messages: [{ role: 'user', content: 'Hi' }] });
 * console.log(text);
 * ```
 */
export function createOpenAICompatibleModel(settings: OpenAICompatibleSettings): OpenAICompatibleModel {
  const factory = 'createOpenAICompatibleModel';
  requireOptions(factory, settings, 'Pass { baseURL, modelId }.');
  requireString(
    factory,
    'baseURL',
    settings.baseURL,
    'Pass the server URL, such as https://api.openai.com/v1 or http://127.0.0.1:11434.',
  );
  requireString(factory, 'modelId', settings.modelId, 'Pass the model id the server knows, such as gpt-4.1-mini.');
  const baseURL = normalizeBaseUrl(settings.baseURL);
  const url = `${baseURL}/chat/completions`;
  const timeoutMs = requireTimerMs(factory, 'timeout', settings.timeout, 1) ?? DEFAULT_MODEL_TIMEOUT_MS;
  const maxResponseBytes =
    requireCount(factory, 'maxResponseBytes', settings.maxResponseBytes) ?? DEFAULT_MAX_RESPONSE_BYTES;
  const errorBodies = new WeakMap<object, string>();
  const client = new OpenAI({
    baseURL,
    apiKey: settings.apiKey || PLACEHOLDER_API_KEY,
    // Explicit nulls keep the SDK from reading OPENAI_ORG_ID and friends from the environment.
    adminAPIKey: null,
    organization: null,
    project: null,
    webhookSecret: null,
    timeout: timeoutMs,
    maxRetries: 0,
    logLevel: 'off',
    defaultHeaders: { ...settings.headers },
    fetch: boundedFetch(settings.fetch ?? globalThis.fetch, { url, maxResponseBytes, errorBodies }),
  });

  function requestBody(options: LanguageModelCallOptions): ChatCompletionCreateParamsNonStreaming {
    const maxTokens = options.maxOutputTokens;
    return {
      model: options.modelId ?? settings.modelId,
      messages: toChatMessages(options.messages),
      ...(options.tools?.length ? { tools: toChatTools(options.tools) } : {}),
      ...(maxTokens === undefined
        ? {}
        : settings.maxTokensParameter === 'max_tokens'
          ? { max_tokens: maxTokens }
          : { max_completion_tokens: maxTokens }),
      ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
    };
  }

  /** Links the caller's signal with our whole-call deadline; maps every failure. */
  function startCall(options: LanguageModelCallOptions) {
    const controller = new AbortController();
    const caller = options.abortSignal;
    const abort = (): void => controller.abort();
    const timer = setTimeout(abort, timeoutMs);
    caller?.addEventListener('abort', abort, { once: true });
    if (caller?.aborted) abort();
    return {
      signal: controller.signal,
      /** Our timeout or the caller stopped the call (the SDK ends a stream it aborted without an error). */
      stopped: (): boolean => controller.signal.aborted,
      fail: (error: unknown) =>
        toModelCallError(error, {
          url,
          timeoutMs,
          aborted: caller?.aborted ?? false,
          abortReason: caller?.reason,
          timedOut: controller.signal.aborted && !(caller?.aborted ?? false),
          responseBody: error instanceof APIError && error.headers ? errorBodies.get(error.headers) : undefined,
          placeholderKey: settings.apiKey ? undefined : PLACEHOLDER_API_KEY,
          apiKey: settings.apiKey || undefined,
        }),
      end: (): void => {
        clearTimeout(timer);
        caller?.removeEventListener('abort', abort);
      },
    };
  }

  async function* doStream(options: LanguageModelCallOptions): AsyncGenerator<LanguageModelStreamPart> {
    const call = startCall(options);
    try {
      const stream = await client.chat.completions.create(
        { ...requestBody(options), stream: true, stream_options: { include_usage: true } },
        { signal: call.signal },
      );
      const assembler = new StreamAssembler(url);
      for await (const chunk of stream) yield* assembler.add(chunk);
      if (call.stopped()) throw new APIUserAbortError();
      yield { type: 'finish', result: assembler.finish() };
    } catch (error) {
      throw call.fail(error);
    } finally {
      call.end();
    }
  }

  async function doGenerate(options: LanguageModelCallOptions): Promise<LanguageModelResult> {
    if (settings.stream) {
      for await (const part of doStream(options)) if (part.type === 'finish') return part.result;
      // Unreachable: doStream either yields `finish` last or throws.
      throw new ModelCallError({ message: `The stream from ${url} ended without a result.`, url, retryable: true });
    }
    const call = startCall(options);
    try {
      const body: unknown = await client.chat.completions.create(requestBody(options), { signal: call.signal });
      return parseCompletion(body, url);
    } catch (error) {
      throw call.fail(error);
    } finally {
      call.end();
    }
  }

  return {
    specificationVersion: 'v1',
    provider: settings.provider ?? 'openai-compatible',
    modelId: settings.modelId,
    baseURL,
    doGenerate,
    doStream,
  };
}
