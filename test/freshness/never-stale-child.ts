/**
 * The writer of the never-stale test: another process on the same SQLite file. On each
 * `{ round }` message it stores an observation, a working-memory entry and a history message
 * naming the round (or forgets the conversation on `{ forget: true }`), then answers `done`.
 * @module
 */
import { memoryIdOf, resolveScope } from '../../src/core/scope.js';
import { createObservationalMemory } from '../../src/memory/observational-memory.js';
import { createWorkingMemory } from '../../src/memory/working-memory.js';
import { createSqliteRunStore } from '../../src/storage/sqlite/sqlite-run-store.js';
import { createSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import { FRESHNESS_SCOPE, freshnessObserver } from './freshness-support.js';

const path = process.env['NEVER_STALE_DB'] ?? '';
const store = createSqliteStore({ path });
const runStore = createSqliteRunStore({ path });
const memory = createObservationalMemory({
  store,
  observer: freshnessObserver(),
  defaultEnabled: true,
  defaults: { observeMinTokens: 1 },
});
const workingMemory = createWorkingMemory({ store });
const memoryId = memoryIdOf(resolveScope(FRESHNESS_SCOPE));

process.on('message', (message: { round?: number; forget?: boolean; close?: boolean }) => {
  void (async () => {
    if (message.close) {
      await store.dispose();
      await runStore.dispose();
      process.disconnect();
      return;
    }
    if (message.forget) {
      await memory.forget(FRESHNESS_SCOPE);
      await runStore.forgetConversation(memoryId);
    } else {
      const round = message.round ?? 0;
      await memory.observe({
        scope: FRESHNESS_SCOPE,
        messages: [{ id: `child-${round}`, role: 'user', content: `fact-${round}` }],
      });
      await workingMemory.set(FRESHNESS_SCOPE, 'round', round);
      await runStore.appendMessages(memoryId, [
        { messageId: `history-${round}`, runId: 'child', role: 'user', content: `history-${round}`, tokenCount: 3 },
      ]);
    }
    process.send?.({ done: true });
  })().catch((error: unknown) => {
    process.send?.({ error: String(error) });
  });
});
process.send?.({ ready: true });
