/**
 * Forgetting a conversation: what the scope remembers (observations, reflection, working
 * memory) and its run history. The one operation the HTTP API and the CLI both call.
 * @module
 */
import { memoryIdOf } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import type { ObservationalMemory } from '../memory/observational-memory.js';
import type { RunStore } from '../storage/run-store.js';

/** What {@link forgetConversation} erases from. */
export interface ForgetConversationTarget {
  readonly observationalMemory: Pick<ObservationalMemory, 'forget'>;
  readonly runStore: Pick<RunStore, 'forgetConversation'>;
}

/**
 * Erases both memories of `scope`, then its conversation history. Each store gives the
 * scope a new generation, so work started before the forget stores nothing more; export
 * files already written are not touched.
 * @example
 * ```ts
 * import { resolveScope } from 'harness-memory';
 * import { forgetConversation } from 'harness-memory/agent';
 * import { loadConfig } from 'harness-memory/config';
 * import { createHarness } from 'harness-memory/server';
 *
 * const harness = await createHarness({ config: loadConfig() });
 * await forgetConversation(harness, resolveScope({ conversationId: 'c1' }));
 * ```
 */
export async function forgetConversation(target: ForgetConversationTarget, scope: Scope): Promise<void> {
  await target.observationalMemory.forget(scope);
  await target.runStore.forgetConversation(memoryIdOf(scope));
}
