/**
 * The scopes an older schema left behind in the upgrade tests that fill
 * `unobserved_message_tokens` (SQLite schema 11, Postgres 10): one with messages after its
 * cursor, one with everything observed, and what an append reports once upgraded.
 * @module
 */
import { expect } from 'vitest';
import { memoryIdOf } from '../../src/core/scope.js';
import type { Scope } from '../../src/core/scope.js';
import type { MemoryStore } from '../../src/storage/store.js';

/** A stored scope: its cursor, and its messages' token counts by seq (from 1). */
export interface PendingScope {
  readonly scope: Scope;
  readonly observedThrough: number;
  readonly tokens: readonly number[];
}

/** The two scopes: `pending` has 7 + 11 tokens after its cursor, `observed` none. */
export function pendingScopes(pending: Scope, observed: Scope): readonly PendingScope[] {
  return [
    { scope: pending, observedThrough: 2, tokens: [3, 5, 7, 11] },
    { scope: observed, observedThrough: 1, tokens: [13] },
  ];
}

/** Appends a one-token message to each upgraded scope and checks the unobserved totals reported. */
export async function expectPendingTokensKept(store: MemoryStore, scopes: readonly PendingScope[]): Promise<void> {
  const reported: number[] = [];
  for (const { scope, tokens } of scopes) {
    const result = await store.appendMessages({
      scope,
      memoryId: memoryIdOf(scope),
      messages: [
        { messageKey: `k${tokens.length + 1}`, role: 'user', name: '', toolCallId: '', content: 'new', tokenCount: 1 },
      ],
    });
    reported.push(result.unobservedTokens);
  }
  expect(reported).toEqual([7 + 11 + 1, 1]);
}
