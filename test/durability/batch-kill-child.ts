/**
 * Child process of the batch-kill tests (the reliability catalogue's A3). Run with
 * `node --import tsx`.
 *
 * Writes two batches of `BATCH` rows, each in one IMMEDIATE transaction, and prints
 * `batch <n> committed` after each. With `KILL_AT`, it SIGKILLs itself as the `KILL_AT`-th row
 * of the table `MODE` writes is inserted: a temporary trigger on its own connection calls a
 * function registered there, so the kill comes from inside SQLite's insert loop, in the middle
 * of the transaction, with no hook in the product's code.
 *
 * `MODE`: `import` (`importObservations` of `BATCH` observations: one operation),
 * `messages` (`observe` of `BATCH` new messages below the observe threshold: they are stored,
 * nothing is observed), `working-memory` (`BATCH` entries, one per scope, submitted to the
 * store in one tick: one group commit of `BATCH` savepoints). `ROUND` names the batches, so a
 * later run adds new ones. Environment: `DB_PATH`, `MODE`, `BATCH`, `ROUND`, `KILL_AT`.
 * @module
 */
import Database from 'better-sqlite3';
import { memoryIdOf, resolveScope } from '../../src/core/scope.js';
import { DEFAULT_WORKING_MEMORY_LIMITS } from '../../src/core/working-memory.js';
import { createObservationalMemory } from '../../src/memory/observational-memory.js';
import { createSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import { scriptedObserver } from '../support/scripted-models.js';
import { sigkillSelf } from './durability-support.js';

const TABLES = { import: 'om_observations', messages: 'om_messages', 'working-memory': 'working_memory_entries' };
type Mode = keyof typeof TABLES;

const path = process.env['DB_PATH'];
if (!path) throw new Error('DB_PATH is required');
const mode = process.env['MODE'] as Mode;
if (!(mode in TABLES)) throw new Error(`unknown MODE ${String(mode)}`);
const batch = Number(process.env['BATCH'] ?? '1000');
const round = process.env['ROUND'] ?? 'a';
const killAt = Number(process.env['KILL_AT'] ?? '0');

const db = new Database(path);
const store = createSqliteStore({ path, database: db });
let inserted = 0;
db.function('count_row_or_die', () => {
  inserted++;
  if (inserted === killAt) sigkillSelf();
  return inserted;
});
db.exec(`CREATE TEMP TRIGGER die_mid_batch AFTER INSERT ON main.${TABLES[mode]} BEGIN SELECT count_row_or_die(); END`);

const scope = { tenantId: 'tenant-a', conversationId: 'conv-batch', agentId: 'agent-x' } as const;
const memory = createObservationalMemory({
  store,
  observer: scriptedObserver(() => 'IMPORTANCE:0.5\nnever asked'),
  defaultEnabled: true,
  defaults: { observeMinTokens: 1_000_000 },
});

async function writeBatch(name: string): Promise<void> {
  const numbers = Array.from({ length: batch }, (_, index) => index);
  if (mode === 'import') {
    await memory.importObservations(
      scope,
      numbers.map((index) => ({ content: `batch ${name} observation ${index}`, importance: 0.5 })),
    );
  } else if (mode === 'messages') {
    const result = await memory.observe({
      scope,
      runId: `run-${name}`,
      messages: numbers.map((index) => ({
        id: `${name}-${index}`,
        role: 'user',
        content: `batch ${name} message ${index}`,
      })),
    });
    if (result.status !== 'skipped')
      throw new Error(`expected the messages stored below the threshold: ${result.status}`);
  } else {
    // Every set submitted before the group commit runs: one transaction for all of them.
    await Promise.all(
      numbers.map((index) => {
        const entryScope = resolveScope({ ...scope, conversationId: `conv-${index}` });
        return store.setWorkingMemoryEntry({
          scope: entryScope,
          memoryId: memoryIdOf(entryScope),
          key: `batch-${name}`,
          valueJson: JSON.stringify({ index }),
          limits: DEFAULT_WORKING_MEMORY_LIMITS,
        });
      }),
    );
  }
  process.stdout.write(`batch ${name} committed\n`);
}

await writeBatch(`${round}1`);
await writeBatch(`${round}2`);
await store.dispose();
process.stdout.write('done\n');
