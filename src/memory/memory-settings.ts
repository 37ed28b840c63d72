/** Validation of observational-memory settings given to the service. */
import { ConfigError } from '../core/errors.js';
import type { MemoryMode } from '../core/memory-status.js';
import { MAX_OBSERVE_MIN_TOKENS, MAX_REFLECT_THRESHOLD_TOKENS, MAX_SNIPPET_MAX_TOKENS } from '../core/observation.js';
import type { ObservationConfig } from '../core/observation.js';
import { isTimerMs, MAX_TIMER_DELAY_MS } from '../core/require-option.js';

/** `auto` and `local_coordinator` run memory; `off` disables it; anything else is an error. */
export function resolveMode(mode: MemoryMode | undefined): 'off' | 'local_coordinator' {
  const value = (mode ?? 'auto').trim().toLowerCase();
  if (value === 'off') return 'off';
  if (value === 'auto' || value === 'local_coordinator' || value === '') return 'local_coordinator';
  throw new ConfigError({
    key: 'memory.mode',
    source: 'createObservationalMemory',
    message: `unsupported memory mode "${value}"; valid modes are auto, off, local_coordinator`,
  });
}

const THRESHOLD_KEYS = {
  observeMinTokens: 'observe_min_tokens',
  snippetMaxTokens: 'snippet_max_tokens',
  reflectThresholdTokens: 'reflect_threshold_tokens',
} as const;

/** The most each threshold may be. */
const THRESHOLD_MAXIMUMS: Readonly<Record<keyof typeof THRESHOLD_KEYS, number>> = {
  observeMinTokens: MAX_OBSERVE_MIN_TOKENS,
  snippetMaxTokens: MAX_SNIPPET_MAX_TOKENS,
  reflectThresholdTokens: MAX_REFLECT_THRESHOLD_TOKENS,
};

/**
 * Checks the service's defaults: every threshold a positive integer, the snippet budget at most
 * {@link MAX_SNIPPET_MAX_TOKENS}. A reflect or observe threshold above its bound
 * ({@link MAX_REFLECT_THRESHOLD_TOKENS}, {@link MAX_OBSERVE_MIN_TOKENS}) is read as the bound, as
 * {@link effectiveConfig} reads a stored one: embedders pass a huge one (`2 ** 30`) to mean
 * "never", and the prompts stay bounded either way. The configuration file and the per-scope
 * overrides refuse such a value instead (`schema.ts`, {@link validateOverrides}).
 */
export function validateThresholds(config: ObservationConfig, source: string): ObservationConfig {
  for (const [field, key] of Object.entries(THRESHOLD_KEYS)) {
    const value = (config as unknown as Record<string, unknown>)[field];
    const problem = field === 'snippetMaxTokens' ? thresholdProblem(field, value) : positiveProblem(value);
    if (problem !== undefined) throw new ConfigError({ key, source, message: problem });
  }
  return Object.freeze(effectiveConfig(config, undefined));
}

/** Why `value` cannot be the threshold `field` (not a positive integer, or over its bound), or undefined when it can. */
function thresholdProblem(field: keyof typeof THRESHOLD_KEYS, value: unknown): string | undefined {
  const problem = positiveProblem(value);
  if (problem !== undefined) return problem;
  const max = THRESHOLD_MAXIMUMS[field];
  return (value as number) > max ? `must be at most ${max}, got ${String(value)}` : undefined;
}

function positiveProblem(value: unknown): string | undefined {
  return Number.isSafeInteger(value) && (value as number) > 0
    ? undefined
    : `must be a positive integer, got ${JSON.stringify(value)}`;
}

/**
 * A scope's settings over the defaults. A threshold stored above its bound (before it was
 * checked) is read as the bound, never refused: the scope keeps working as it can.
 */
export function effectiveConfig(
  defaults: ObservationConfig,
  overrides: Partial<ObservationConfig> | undefined,
): ObservationConfig {
  const config = { ...defaults, ...overrides };
  return {
    ...config,
    observeMinTokens: Math.min(config.observeMinTokens, MAX_OBSERVE_MIN_TOKENS),
    snippetMaxTokens: Math.min(config.snippetMaxTokens, MAX_SNIPPET_MAX_TOKENS),
    reflectThresholdTokens: Math.min(config.reflectThresholdTokens, MAX_REFLECT_THRESHOLD_TOKENS),
  };
}

/**
 * Checks per-scope threshold overrides (what a tenant sets with `enable`): known keys, positive
 * integers at most their bounds, or a ConfigError naming the setting and its maximum.
 */
export function validateOverrides(config: Partial<ObservationConfig>): Partial<ObservationConfig> {
  if (typeof config !== 'object' || config === null) {
    throw new ConfigError({ key: 'config', source: 'observational_memory.enable', message: 'must be an object' });
  }
  const result: Record<string, number> = {};
  for (const [field, value] of Object.entries(config)) {
    if (value === undefined) continue;
    const key = (THRESHOLD_KEYS as Record<string, string>)[field];
    if (key === undefined) {
      throw new ConfigError({
        key: field,
        source: 'observational_memory.enable',
        message: `unknown setting; valid settings are ${Object.values(THRESHOLD_KEYS).join(', ')}`,
      });
    }
    const problem = thresholdProblem(field as keyof typeof THRESHOLD_KEYS, value);
    if (problem !== undefined) throw new ConfigError({ key, source: 'observational_memory.enable', message: problem });
    result[field] = value;
  }
  return result as Partial<ObservationConfig>;
}

/** A positive finite number, or a ConfigError naming the option. */
export function positive(value: number, name: string): number {
  if (!Number.isFinite(value) || value <= 0) {
    throw new ConfigError({
      key: name,
      source: 'createObservationalMemory',
      message: `must be a positive number, got ${value}`,
    });
  }
  return value;
}

/**
 * A time in milliseconds that a timer will wait: from `min` to {@link MAX_TIMER_DELAY_MS}, or a
 * ConfigError naming the option (NaN, a string or an overlong time made every call fail at once).
 */
export function timerMs(value: number, name: string, min: number): number {
  if (!isTimerMs(value, min)) {
    throw new ConfigError({
      key: name,
      source: 'createObservationalMemory',
      message: `must be a number of milliseconds from ${min} to ${MAX_TIMER_DELAY_MS}, got ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`,
    });
  }
  return value;
}

/** A number in [0, 1], or a ConfigError naming the option. */
export function unitInterval(value: number, name: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new ConfigError({
      key: name,
      source: 'createObservationalMemory',
      message: `must be a number from 0 to 1, got ${JSON.stringify(value)}`,
    });
  }
  return value;
}
