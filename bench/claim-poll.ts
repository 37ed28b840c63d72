/**
 * The background worker's claim poll on SQLite (`claimOperation` of any scope) with a deep
 * backlog: queues behind scopes whose first operation waits out a retry delay (a failing
 * batch, an open circuit), where nothing is claimable; and the usual case, one operation
 * ready. Side by side with the statement used before (one pass over every queued row).
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createSqliteStore } from '../src/storage/sqlite/sqlite-store.js';
import { measure, report } from './measure.js';

const PENDING = `status IN ('queued', 'processing')`;
const BEFORE = `
  SELECT q.memory_id, q.scope_sequence FROM om_operation_log AS q
  WHERE q.status = 'queued' AND q.available_at <= @now
    AND NOT EXISTS (SELECT 1 FROM om_operation_log AS p WHERE p.memory_id = q.memory_id AND p.${PENDING}
      AND p.status = 'processing')
    AND NOT EXISTS (SELECT 1 FROM om_operation_log AS o WHERE o.memory_id = q.memory_id AND o.${PENDING}
      AND o.status = 'queued' AND o.scope_sequence < q.scope_sequence)
  ORDER BY q.available_at, q.created_at LIMIT 1`;
const PAST = '2000-01-01T00:00:00.000Z';
const FUTURE = '2999-01-01T00:00:00.000Z';

/** Prints the claim poll's median and p99, now and with the statement used before. */
export async function benchClaimPoll(): Promise<void> {
  console.log('\n# Claim poll of the background worker, SQLite (soak review: cost followed the backlog)');
  const folder = mkdtempSync(join(tmpdir(), 'hm-bench-claim-'));
  const path = join(folder, 'claim.db');
  const database = new Database(path);
  const store = createSqliteStore({ path, database });
  try {
    await store.getRecord('warm');
    const insert = database.prepare(`
      INSERT INTO om_operation_log (memory_id, scope_sequence, operation_id, tenant_id, conversation_id, agent_id,
        run_id, tool_call_id, operation_type, status, payload_json, error_text, attempt, available_at, created_at,
        updated_at)
      VALUES (?, ?, ?, 't', 'c', 'a', 'r', 's', 'observe', 'queued', '{}', '', 0, ?, ?, ?)`);
    const before = database.prepare(BEFORE);
    let id = 0;
    const fill = (scopes: number, perScope: number, headAt: string) =>
      database.transaction(() => {
        for (let scope = 0; scope < scopes; scope++)
          for (let sequence = 1; sequence <= perScope; sequence++)
            insert.run(`scope-${scope}`, sequence, `op-${id++}`, sequence === 1 ? headAt : PAST, PAST, PAST);
      })();
    const cases: Array<[label: string, scopes: number, perScope: number, headAt: string]> = [
      ['one operation ready', 1, 1, PAST],
      ['1,000 scopes, one ready operation each', 1000, 1, PAST],
      ['20 scopes x 5,000 queued, first ones waiting', 20, 5000, FUTURE],
    ];
    for (const [label, scopes, perScope, headAt] of cases) {
      database.exec('DELETE FROM om_operation_log');
      fill(scopes, perScope, headAt);
      // Claimed and put back untimed, so every sample claims the same operation.
      const now = await measure(
        `claim poll, ${label}`,
        async () => {
          const claimed = await store.claimOperation({ leaseOwner: 'bench', leaseMs: 60_000 });
          if (claimed)
            database
              .prepare(`UPDATE om_operation_log SET status = 'queued', lease_owner = NULL WHERE operation_id = ?`)
              .run(claimed.operationId);
        },
        { samples: 200, warmup: 10 },
      );
      const then = await measure(
        `  the statement before (candidate only)`,
        () => before.get({ now: new Date().toISOString() }),
        {
          samples: 50,
          warmup: 3,
        },
      );
      report(now);
      report(then);
      // Nothing to claim: the poll is the candidate statements alone, as the statement before is.
      if (headAt === FUTURE) console.log(`  before / now, medians: ${(then.medianMs / now.medianMs).toFixed(0)}×`);
    }
  } finally {
    await store.dispose();
    database.close();
    rmSync(folder, { recursive: true, force: true });
  }
}
