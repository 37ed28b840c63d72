/**
 * When an automatic reflection of a scope failed for good (the reflector refused the memory, or
 * failed through every attempt), the next one waits: until another threshold's worth of
 * observations has come in, or {@link REFLECTION_RETRY_MS} has passed. Without it, every observe
 * above the threshold queued a reflection that failed the same way, asking the reflector
 * (up to its whole input budget) once per turn for as long as the cause lasted. Per process:
 * another process sharing the store backs off after its own first failure.
 * @module
 */

/** How long after a failed automatic reflection the next one may be queued, whatever came in. */
export const REFLECTION_RETRY_MS: number = 10 * 60_000;

/** Scopes whose failure is remembered; the oldest is forgotten past it (it then reflects once more). */
const MAX_SCOPES = 4_096;

/** The scopes whose automatic reflections wait after a failure. */
export interface ReflectionBackoff {
  /** An automatic reflection of `memoryId` failed for good at `unreflectedTokens`. */
  failed(memoryId: string, unreflectedTokens: number, at: Date): void;
  /** A reflection of `memoryId` was applied: its automatic ones go as usual again. */
  succeeded(memoryId: string): void;
  /** Whether an automatic reflection of `memoryId` may be queued now. */
  allows(memoryId: string, unreflectedTokens: number, thresholdTokens: number, at: Date): boolean;
}

/** An empty back-off. */
export function createReflectionBackoff(): ReflectionBackoff {
  const failures = new Map<string, { readonly tokens: number; readonly at: number }>();
  return {
    failed(memoryId, unreflectedTokens, at) {
      failures.delete(memoryId);
      failures.set(memoryId, { tokens: unreflectedTokens, at: at.getTime() });
      for (const oldest of failures.keys()) {
        if (failures.size <= MAX_SCOPES) break;
        failures.delete(oldest);
      }
    },
    succeeded(memoryId) {
      failures.delete(memoryId);
    },
    allows(memoryId, unreflectedTokens, thresholdTokens, at) {
      const failure = failures.get(memoryId);
      if (failure === undefined) return true;
      if (unreflectedTokens >= failure.tokens + thresholdTokens || at.getTime() - failure.at >= REFLECTION_RETRY_MS) {
        failures.delete(memoryId);
        return true;
      }
      return false;
    },
  };
}
