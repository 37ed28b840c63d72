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

/** The spec's thresholds: 1200 / 900 / 4000. */
export const DEFAULT_OBSERVATION_CONFIG: ObservationConfig = Object.freeze({
  observeMinTokens: 1200,
  snippetMaxTokens: 900,
  reflectThresholdTokens: 4000,
});

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
  /** The operation that produced it. */
  readonly operationId: string;
}

/** An observation parsed from observer output, before it is stored. */
export interface ParsedObservation {
  readonly content: string;
  readonly importance: number | null;
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
  readonly observationCount: number;
  /** Highest observation seq assigned; 0 when none. */
  readonly lastObservationSeq: number;
  readonly activeObservationTokens: number;
  /** Observation tokens added after the last reflection's `throughSeq`. */
  readonly unreflectedObservationTokens: number;
  readonly reflection: StoredReflection | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}
