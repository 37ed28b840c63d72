/**
 * The payloads the stores write for the operation log, formed in one place so every adapter
 * logs the same keys with the same meaning. They are shown as they are (`GET …/operations`,
 * `harness memory show`), so they are wire JSON: snake_case keys.
 * @module
 */
import type { ObservationConfig } from '../core/observation.js';

/** The payload of an `enable`/`disable` operation: `{"enabled":bool}`, with the overrides it set. */
export function settingsPayload(
  enabled: boolean,
  config: Partial<ObservationConfig> | undefined,
): Record<string, unknown> {
  if (config === undefined) return { enabled };
  const wire: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) wire[snakeCase(key)] = value;
  return { enabled, config: wire };
}

/**
 * The payload of an `observe` operation: what the caller gave, with `messages` (the messages
 * this observe stored: history it repeated is not counted) and `unobserved_tokens` (all the
 * scope's unobserved tokens after it) set by the store.
 */
export function observePayload(
  given: Readonly<Record<string, unknown>>,
  appended: { readonly inserted: number; readonly unobservedTokens: number },
): Record<string, unknown> {
  return { ...given, messages: appended.inserted, unobserved_tokens: appended.unobservedTokens };
}

function snakeCase(key: string): string {
  return key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}
