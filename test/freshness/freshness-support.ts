/** Pieces shared by the never-stale tests and their writer process. */
import type { Observer } from '../../src/memory/model-observer.js';

/** The scope every never-stale test reads and writes. */
export const FRESHNESS_SCOPE = { tenantId: 'fresh', conversationId: 'conversation', agentId: 'agent' } as const;

/** An observer that turns each message `fact-N` into the observation `The user stated fact-N.` */
export function freshnessObserver(): Observer {
  return {
    async observe(input) {
      return input.messages.map((message) => ({ content: `The user stated ${message.content}.`, importance: 0.9 }));
    },
  };
}
