/**
 * The Postgres read lane (decision 11), side by side in one run: `prepareTurn` on stores whose
 * pool has the lane (a turn's reads pipelined on one connection) and on stores that send
 * every read to a pooled connection of its own (`readLane: false`). One scope of 2,000
 * observations, 20 entries and 500 messages; rounds of 200 reads alternate between the two
 * sides, so both see the same phases of the machine.
 * @module
 */
import pg from 'pg';
import { createTurnPreparer } from '../src/agent/prepare-turn.js';
import type { TurnPreparer } from '../src/agent/prepare-turn.js';
import { memoryIdOf, resolveScope } from '../src/core/scope.js';
import { createObservationalMemory } from '../src/memory/observational-memory.js';
import { createWorkingMemory } from '../src/memory/working-memory.js';
import { createPostgresRunStore, createPostgresStore } from '../src/storage/postgres/index.js';
import type { ConversationMessage } from '../src/storage/run-store.js';
import { percentile } from './measure.js';
import { populateScope } from './populate-scope.js';

const ROUNDS = 16;
const READS_PER_ROUND = 200;

interface Side {
  readonly name: string;
  readonly preparer: TurnPreparer;
  readonly times: number[];
  close(): Promise<void>;
}

async function openSide(url: string, schema: string, lane: boolean): Promise<Side & { populate(): Promise<void> }> {
  const pool = new pg.Pool({ connectionString: url, max: 8 });
  const store = await createPostgresStore({ pool, schema, readLane: lane });
  const runStore = await createPostgresRunStore({ pool, schema, readLane: lane });
  const scope = resolveScope({ tenantId: 'bench', conversationId: 'read-lane' });
  const observationalMemory = createObservationalMemory({
    store,
    observer: { observe: async () => [] },
    defaultEnabled: true,
  });
  const workingMemory = createWorkingMemory({ store });
  return {
    name: lane ? 'read lane' : 'a pooled connection per read',
    preparer: createTurnPreparer({ observationalMemory, workingMemory, runStore }),
    times: [],
    async populate() {
      await populateScope(store, scope, 2_000, 20);
      const messages: ConversationMessage[] = Array.from({ length: 500 }, (_, index) => ({
        messageId: `m${index}`,
        runId: `run-${Math.floor(index / 2)}`,
        role: index % 2 === 0 ? 'user' : 'assistant',
        content: 'We talked about the deploy window and the reviewer again. '.repeat(2),
        tokenCount: 30,
      }));
      await runStore.appendMessages(memoryIdOf(scope), messages);
    },
    async close() {
      await store.dispose();
      await runStore.dispose();
      await pool.end();
    },
  };
}

/** Prints the pre-turn read with and without the read lane, and their ratio. */
export async function benchReadLane(url: string, schema: string): Promise<void> {
  console.log(
    '\n## Postgres read lane: prepareTurn, steady (2,000 observations, 20 entries, 500 messages), ' +
      `${ROUNDS} alternating rounds of ${READS_PER_ROUND}`,
  );
  const withLane = await openSide(url, schema, true);
  const without = await openSide(url, schema, false);
  try {
    await withLane.populate();
    const input = { tenantId: 'bench', conversationId: 'read-lane' };
    for (let round = -1; round < ROUNDS; round++) {
      for (const side of round % 2 === 0 ? [withLane, without] : [without, withLane]) {
        for (let index = 0; index < READS_PER_ROUND; index++) {
          const start = process.hrtime.bigint();
          await side.preparer.prepareTurn(input);
          if (round >= 0) side.times.push(Number(process.hrtime.bigint() - start) / 1e6);
        }
      }
    }
    const figures = [withLane, without].map((side) => {
      const sorted = [...side.times].sort((a, b) => a - b);
      const median = percentile(sorted, 0.5);
      const p99 = percentile(sorted, 0.99);
      console.log(
        `${`postgres: pre-turn read, ${side.name}`.padEnd(58)}  median ${median.toFixed(3).padStart(8)} ms  ` +
          `p99 ${p99.toFixed(3).padStart(8)} ms`,
      );
      return { median, p99 };
    });
    const [lane, pooled] = figures as [{ median: number; p99: number }, { median: number; p99: number }];
    console.log(
      `   the lane's reads take ×${(lane.median / pooled.median).toFixed(2)} the time at the median, ` +
        `×${(lane.p99 / pooled.p99).toFixed(2)} at the p99`,
    );
  } finally {
    await withLane.close();
    await without.close();
  }
}
