/**
 * Observes of many conversations at once share SQLite commits (group commit). Sharing a
 * transaction must not mix scopes, lose a message, or let one scope's failure undo another's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { memoryIdOf, resolveScope } from '../../src/core/scope.js';
import { createObservationalMemory } from '../../src/memory/observational-memory.js';
import type { Observer } from '../../src/memory/model-observer.js';
import { createSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import type { MemoryStore } from '../../src/storage/store.js';
import { audit, messagesObservedAndCleared, range } from './durability-support.js';

const SCOPES = 24;
const TURNS = 15;

describe('durability: concurrent observes of many scopes on one SQLite file', () => {
  let directory: string;
  let path: string;
  let store: MemoryStore;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'harness-memory-group-'));
    path = join(directory, 'state.db');
    store = createSqliteStore({ path });
  });
  afterEach(async () => {
    await store.dispose();
    rmSync(directory, { recursive: true, force: true });
  });

  it('keeps every scope exact while their writes share commits', async () => {
    // Echoes the conversation its messages came from, so a mixed-up scope would show.
    const observer: Observer = {
      async observe(input) {
        return input.messages.map((message) => ({
          content: `${input.scope.conversationId} saw: ${message.content}`,
          importance: 0.5,
        }));
      },
    };
    const memory = createObservationalMemory({
      store,
      observer,
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    const conversation = async (index: number) => {
      for (let turn = 0; turn < TURNS; turn++) {
        const result = await memory.observe({
          scope: { tenantId: 't', conversationId: `c${index}` },
          messages: [{ id: `m${turn}`, role: 'user', content: `c${index} turn ${turn}` }],
        });
        expect(result.status).toBe('applied');
      }
    };
    await Promise.all(range(SCOPES).map((index) => conversation(index - 1)));
    await store.dispose();

    const database = new Database(path, { readonly: true });
    try {
      expect(database.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      database.close();
    }
    const rows = audit(path);
    expect(rows.records).toHaveLength(SCOPES);
    expect(messagesObservedAndCleared(rows)).toEqual([]);
    for (const record of rows.records) {
      expect(record.last_message_seq).toBe(TURNS);
      expect(record.observed_through_message_seq).toBe(TURNS);
    }
    // Each message observed once, by its own scope, in order.
    for (let index = 0; index < SCOPES; index++) {
      const memoryId = memoryIdOf(resolveScope({ tenantId: 't', conversationId: `c${index}` }));
      const contents = rows.observations.filter((row) => row.memory_id === memoryId).map((row) => row.content);
      expect(contents).toEqual(range(TURNS).map((turn) => `c${index} saw: c${index} turn ${turn - 1}`));
    }
    expect(rows.operations.every((row) => row.status === 'applied')).toBe(true);
    store = createSqliteStore({ path });
  });

  it('a scope whose apply fails does not undo the scopes committed with it', async () => {
    const memory = createObservationalMemory({
      store,
      observer: {
        async observe(input) {
          return [{ content: `noted ${input.scope.conversationId}`, importance: 0.5 }];
        },
      },
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    // Observations cannot be stored for c1: its apply throws inside the shared transaction.
    const raw = new Database(path);
    raw.exec(
      `CREATE TRIGGER refuse_c1 BEFORE INSERT ON om_observations WHEN NEW.content = 'noted c1' BEGIN SELECT ` +
        `RAISE(ABORT, 'refused for c1'); END`,
    );
    raw.close();
    const outcomes = await Promise.allSettled(
      range(6).map((index) =>
        memory.observe({
          scope: { tenantId: 't', conversationId: `c${index - 1}` },
          messages: [{ id: 'm1', role: 'user', content: 'hello' }],
        }),
      ),
    );
    expect(outcomes.map((outcome) => outcome.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
    ]);
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).toMatch(/refused for c1/);
    for (const index of [0, 2, 3, 4, 5]) {
      const status = await memory.status({ tenantId: 't', conversationId: `c${index}` });
      expect(status.observationCount).toBe(1);
    }
    // c1 keeps its message unobserved, with its operation waiting for a retry.
    const c1 = await memory.inspect({ tenantId: 't', conversationId: 'c1' });
    expect(c1.observations).toEqual([]);
    expect(c1.operations.at(-1)?.status).toMatch(/queued|failed/);
  });
});
