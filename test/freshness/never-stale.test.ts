/**
 * Issue 16: caches never serve a snippet (or history) older than a write that finished
 * before the read began. The reader keeps its caches warm between reads; the writer is
 * another process on the same SQLite file, or another replica on the same Postgres schema.
 */
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTurnPreparer } from '../../src/agent/prepare-turn.js';
import type { TurnPreparer } from '../../src/agent/prepare-turn.js';
import { memoryIdOf, resolveScope } from '../../src/core/scope.js';
import { createObservationalMemory } from '../../src/memory/observational-memory.js';
import type { ObservationalMemory } from '../../src/memory/observational-memory.js';
import { createWorkingMemory } from '../../src/memory/working-memory.js';
import type { WorkingMemory } from '../../src/memory/working-memory.js';
import { createPostgresRunStore, createPostgresStore } from '../../src/storage/postgres/index.js';
import type { RunStore } from '../../src/storage/run-store.js';
import { createSqliteRunStore } from '../../src/storage/sqlite/sqlite-run-store.js';
import { createSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import type { MemoryStore } from '../../src/storage/store.js';
import { REPO_ROOT } from '../durability/durability-support.js';
import { createPostgresTestSchemas, postgresTestUrl } from '../support/postgres-schema.js';
import { FRESHNESS_SCOPE, freshnessObserver } from './freshness-support.js';

const ROUNDS = 25;
const memoryId = memoryIdOf(resolveScope(FRESHNESS_SCOPE));

/** A writer: resolves once the write has finished (committed) in its process or replica. */
type Writer = (change: { round: number } | { forget: true }) => Promise<void>;

interface Reader {
  readonly preparer: TurnPreparer;
  readonly memory: ObservationalMemory;
  readonly workingMemory: WorkingMemory;
}

function reader(store: MemoryStore, runStore: RunStore): Reader {
  const memory = createObservationalMemory({
    store,
    observer: freshnessObserver(),
    defaultEnabled: true,
    defaults: { observeMinTokens: 1 },
  });
  const workingMemory = createWorkingMemory({ store });
  return {
    preparer: createTurnPreparer({ observationalMemory: memory, workingMemory, runStore }),
    memory,
    workingMemory,
  };
}

/** Writes round after round (a forget now and then), reading right after each write finished. */
async function checkNeverStale(read: Reader, write: Writer): Promise<void> {
  // Warm every cache: snippets, observations, working memory and history.
  await read.preparer.prepareTurn(FRESHNESS_SCOPE);
  let firstKept = 1;
  for (let round = 1; round <= ROUNDS; round++) {
    if (round % 10 === 0) {
      await write({ forget: true });
      firstKept = round;
      const forgotten = await read.preparer.prepareTurn(FRESHNESS_SCOPE);
      expect(forgotten.snippets.observationalMemory).not.toContain('fact-');
      expect(forgotten.snippets.workingMemory).toBe('');
      expect(forgotten.history).toEqual([]);
    }
    await write({ round });
    const turn = await read.preparer.prepareTurn(FRESHNESS_SCOPE);
    expect(turn.snippets.observationalMemory, `round ${round}`).toContain(`fact-${round}.`);
    expect(turn.snippets.observationalMemory).not.toContain(`fact-${firstKept - 1}.`);
    expect(turn.snippets.workingMemory, `round ${round}`).toContain(`${round}`);
    expect(turn.history.map((message) => message.messageId)).toEqual(
      Array.from({ length: round - firstKept + 1 }, (_, index) => `history-${firstKept + index}`),
    );
    expect((await read.workingMemory.get(FRESHNESS_SCOPE, 'round')).value).toBe(String(round));
  }
}

describe('caches: never older than a finished write (issue 16)', { timeout: 120_000 }, () => {
  describe('sqlite, written by another process', () => {
    let directory = '';
    let child: ChildProcess | undefined;
    const replies: Array<{ ready?: boolean; done?: boolean; error?: string }> = [];
    const waiters: Array<() => void> = [];
    const next = async (): Promise<{ ready?: boolean; done?: boolean; error?: string }> => {
      while (replies.length === 0) {
        if (child?.exitCode !== null && child?.exitCode !== undefined)
          throw new Error(`the writer exited with ${child.exitCode}`);
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
      return replies.shift() as { ready?: boolean; done?: boolean; error?: string };
    };
    beforeAll(async () => {
      directory = mkdtempSync(join(tmpdir(), 'hm-never-stale-'));
      child = fork(fileURLToPath(new URL('./never-stale-child.ts', import.meta.url)), [], {
        cwd: REPO_ROOT,
        execArgv: ['--import', 'tsx'],
        env: { ...process.env, NEVER_STALE_DB: join(directory, 'state.db') },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      child.on('message', (message) => {
        replies.push(message as { ready?: boolean });
        waiters.splice(0).forEach((wake) => wake());
      });
      child.on('exit', () => waiters.splice(0).forEach((wake) => wake()));
      expect((await next()).ready).toBe(true);
    });
    afterAll(async () => {
      if (child?.connected) {
        const exited = new Promise((resolve) => child?.once('exit', resolve));
        child.send({ close: true });
        await exited;
      }
      rmSync(directory, { recursive: true, force: true });
    });

    it('serves every snippet, entry and history message written before the read began', async () => {
      const path = join(directory, 'state.db');
      const store = createSqliteStore({ path });
      const runStore = createSqliteRunStore({ path });
      try {
        await checkNeverStale(reader(store, runStore), async (change) => {
          child?.send(change);
          const reply = await next();
          if (reply.error) throw new Error(reply.error);
          expect(reply.done).toBe(true);
        });
      } finally {
        await store.dispose();
        await runStore.dispose();
      }
    });
  });

  const url = postgresTestUrl();
  describe.skipIf(!url)('postgres, written by another replica', () => {
    const schemas = createPostgresTestSchemas(url ?? '');
    afterAll(() => schemas.dropAll());

    it('serves every snippet, entry and history message written before the read began', async () => {
      const schema = schemas.next();
      const connectionString = url ?? '';
      const [readStore, readRuns, writeStore, writeRuns] = await Promise.all([
        createPostgresStore({ connectionString, schema, max: 4 }),
        createPostgresRunStore({ connectionString, schema, max: 2 }),
        createPostgresStore({ connectionString, schema, max: 4 }),
        createPostgresRunStore({ connectionString, schema, max: 2 }),
      ]);
      try {
        const writer = reader(writeStore, writeRuns);
        await checkNeverStale(reader(readStore, readRuns), async (change) => {
          if ('forget' in change) {
            await writer.memory.forget(FRESHNESS_SCOPE);
            await writeRuns.forgetConversation(memoryId);
            return;
          }
          await writer.memory.observe({
            scope: FRESHNESS_SCOPE,
            messages: [{ id: `writer-${change.round}`, role: 'user', content: `fact-${change.round}` }],
          });
          await writer.workingMemory.set(FRESHNESS_SCOPE, 'round', change.round);
          await writeRuns.appendMessages(memoryId, [
            {
              messageId: `history-${change.round}`,
              runId: 'writer',
              role: 'user',
              content: `history-${change.round}`,
              tokenCount: 3,
            },
          ]);
        });
      } finally {
        for (const store of [readStore, readRuns, writeStore, writeRuns]) await store.dispose();
      }
    });
  });
});
