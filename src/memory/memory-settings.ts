/** Validation of observational-memory settings given to the service. */
import { ConfigError } from '../core/errors.js';
import type { MemoryMode } from '../core/memory-status.js';
import { MAX_SNIPPET_MAX_TOKENS } from '../core/observation.js';
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

/** Checks that every threshold is a positive integer, and the snippet budget at most {@link MAX_SNIPPET_MAX_TOKENS}. */
export function validateThresholds(config: ObservationConfig, source: string): ObservationConfig {
  for (const [field, key] of Object.entries(THRESHOLD_KEYS)) {
    const problem = thresholdProblem(field, (config as unknown as Record<string, unknown>)[field]);
    if (problem !== undefined) throw new ConfigError({ key, source, message: problem });
  }
  return Object.freeze({ ...config });
}

/** Why `value` cannot be the threshold `field`, or undefined when it can. */
function thresholdProblem(field: string, value: unknown): string | undefined {
  if (!Number.isSafeInteger(value) || (value as number) <= 0)
    return `must be a positive integer, got ${JSON.stringify(value)}`;
  if (field === 'snippetMaxTokens' && (value as number) > MAX_SNIPPET_MAX_TOKENS)
    return `must be at most ${MAX_SNIPPET_MAX_TOKENS}, got ${String(value)}`;
  return undefined;
}

/**
 * A scope's settings over the defaults. A snippet budget stored above the bound (before it
 * was checked) is read as the bound.
 */
export function effectiveConfig(
  defaults: ObservationConfig,
  overrides: Partial<ObservationConfig> | undefined,
): ObservationConfig {
  const config = { ...defaults, ...overrides };
  return config.snippetMaxTokens > MAX_SNIPPET_MAX_TOKENS
    ? { ...config, snippetMaxTokens: MAX_SNIPPET_MAX_TOKENS }
    : config;
}

/** Checks per-scope threshold overrides: known keys, positive integers. */
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
    const problem = thresholdProblem(field, value);
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
