import type { Scope } from './scope.js';
import type { StructuredReflection } from './reflection.js';

/** Per-scope thresholds of observational memory, in estimated tokens. */
export interface ObservationConfig {
  /** Unobserved transcript tokens needed before the observer runs. @default 1200 */
  readonly observeMinTokens: number;
  /** Budget of the whole `<observational-memory>` snippet. @default 900 */
  readonly snippetMaxTokens: number;
  /** Observation tokens added since the last reflection that trigger a reflection. @default 4000 */
  readonly reflectThresholdTokens: number;
}

/**
 * The largest snippet budget (`snippet_max_tokens`) a scope or the configuration may set: a
 * snippet is injected into every turn and kept per scope, and a budget without a bound made
 * it the whole scope.
 */
export const MAX_SNIPPET_MAX_TOKENS = 32_000;

/**
 * The largest `reflect_threshold_tokens` a scope or the configuration may set. Both memory-model
 * prompts grow with it: the observer's, sent at every observe, carries the unreflected
 * observations up to it and the reflection clipped to it (about 2 × it, plus a batch); the
 * reflector's up to 1,700 + 5 × it + 2 × `snippet_max_tokens` tokens (`maxReflectorInputTokens`:
 * the reflection, and new observations up to 4 × it). At 100,000 that is at most 565,700 tokens,
 * still within the largest context windows (1 M tokens) and 24 times the default's 23,500;
 * above about 190,000 no model could take the reflector's prompt at all. The default is 4,000.
 */
export const MAX_REFLECT_THRESHOLD_TOKENS = 100_000;

/**
 * The largest `observe_min_tokens` a scope or the configuration may set. It sizes no prompt
 * (each observer call takes one batch, `maxBatchTokens`, whatever the threshold): the bound only
 * refuses a value no scope can mean (10^15: a scope that is never observed is disabled instead),
 * at a million tokens of unobserved transcript, as long as the largest context windows. The
 * default is 1,200.
 */
export const MAX_OBSERVE_MIN_TOKENS = 1_000_000;

/** The longest model id a run or an observe may name. */
export const MAX_MODEL_ID_LENGTH = 200;

/** The spec's thresholds: 1200 / 900 / 4000. */
export const DEFAULT_OBSERVATION_CONFIG: ObservationConfig = Object.freeze({
  observeMinTokens: 1200,
  snippetMaxTokens: 900,
  reflectThresholdTokens: 4000,
});

/**
 * Where an observation came from: the roles of the transcript messages it was made from
 * (`user`, `assistant`, `tool`; `mixed` for several roles, or for rows stored before
 * provenance was recorded), or `client` (written by the client directly) and `import`
 * (bulk import).
 */
export type ObservationSource = 'user' | 'assistant' | 'tool' | 'mixed' | 'client' | 'import';

/** Every {@link ObservationSource}, in the order documentation lists them. */
export const OBSERVATION_SOURCES: readonly ObservationSource[] = Object.freeze([
  'user',
  'assistant',
  'tool',
  'mixed',
  'client',
  'import',
]);

/** Default cap on the importance of an observation made only from tool output. */
export const DEFAULT_TOOL_IMPORTANCE_CAP = 0.6;

/** One durable fact the observer extracted from the transcript. */
export interface Observation {
  /** Position in the scope, from 1, never reused. */
  readonly seq: number;
  readonly content: string;
  readonly tokenCount: number;
  /** In [0, 1], or `null` when the observer gave no usable score (scored as 0.5). */
  readonly importance: number | null;
  /** ISO 8601 UTC. */
  readonly createdAt: string;
  /** Message sequence numbers (per scope) of the transcript span it came from. */
  readonly sourceStartSeq: number;
  readonly sourceEndSeq: number;
  /** The roles of the messages it came from (see {@link ObservationSource}). */
  readonly source: ObservationSource;
  /** The message seqs the observer cited for it, within the batch, ascending; empty when it cited none. */
  readonly sourceMessageSeqs: readonly number[];
  /** The operation that produced it. */
  readonly operationId: string;
}

/** An observation parsed from observer output, before it is stored. */
export interface ParsedObservation {
  readonly content: string;
  readonly importance: number | null;
  /** Transcript seqs the observer cited on a `SOURCE:` line, as written (not yet checked against the batch). */
  readonly sourceSeqs?: readonly number[];
  /**
   * Seqs of earlier observations it corrects or changes, as the observer wrote them on a
   * `REPLACES:` line (checked against what the observer was shown before use): the
   * correction is stored with at least their importance.
   */
  readonly replacesSeqs?: readonly number[];
}

/** The stored reflection of a scope: the raw text and its parsed form, parsed once. */
export interface StoredReflection {
  readonly raw: string;
  readonly structured: StructuredReflection;
  readonly tokenCount: number;
  /** The highest observation seq the reflection covers. */
  readonly throughSeq: number;
  readonly createdAt: string;
}

/** Everything stored for one scope except its observations, messages and operations. */
export interface MemoryRecord {
  readonly memoryId: string;
  readonly scope: Scope;
  /** Explicitly enabled or disabled; `null` follows the current `default_enabled`. */
  readonly enabled: boolean | null;
  /** Increases on every change; used for compare-and-swap and cache validation. */
  readonly stateVersion: number;
  /** Per-scope overrides; unset fields follow the current defaults. */
  readonly config: Partial<ObservationConfig>;
  /** Highest message seq observed; 0 when none. */
  readonly observedThroughMessageSeq: number;
  /** Highest message seq received; 0 when none. */
  readonly lastMessageSeq: number;
  /** Tokens of the messages received and not yet observed (after the cursor), kept by every append and apply. */
  readonly unobservedMessageTokens: number;
  readonly observationCount: number;
  /** Highest observation seq assigned; 0 when none. */
  readonly lastObservationSeq: number;
  readonly activeObservationTokens: number;
  /** Tokens of the observations after the reflection's `throughSeq`; of them all when there is no reflection. */
  readonly unreflectedObservationTokens: number;
  /**
   * The reflection in force: null before the first, and from a correction (or deletion) of an
   * observation it covers until the next, so no reflection states what was removed.
   */
  readonly reflection: StoredReflection | null;
  /**
   * Supersessions stored in the scope's supersession set: reflections add them, a correction
   * drops those naming its observation, `forget` drops them all.
   */
  readonly supersessionCount: number;
  /** Contradictions stored in the scope's supersession set, resolved or not (kept as supersessions are). */
  readonly contradictionCount: number;
  /**
   * References reflections made that were dropped when applied (unknown seq, backwards supersession,
   * self-reference).
   */
  readonly rejectedReferenceCount: number;
  /** Observations replaced or deleted by hand so far: caches of the observations compare it. */
  readonly correctionCount: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}
