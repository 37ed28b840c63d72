/**
 * SIGKILL in the middle of a 1,000-row IMMEDIATE batch (the reliability catalogue's A3): all
 * rows or none. The child kills itself from inside SQLite's insert loop, at the 500th row of
 * its second batch (see batch-kill-child.ts), for the three writes that put 1,000 rows in one
 * transaction: an import of observations, an observe storing new messages, and a group commit
 * of working-memory sets on 1,000 scopes. The file is read directly afterwards, as an auditor
 * would; then a new process writes to it again.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { audit, runChild } from './durability-support.js';
import { useSqliteTestFiles } from '../support/sqlite-test-files.js';
import type { ChildResult } from './durability-support.js';

const BATCH = 1_000;
/** The 500th row of the second batch. */
const KILL_AT = BATCH + BATCH / 2;

describe('durability: SIGKILL in the middle of a 1,000-row batch', () => {
  const files = useSqliteTestFiles('harness-memory-batch-kill-');

  const child = (mode: string, round: string, killAt?: number): Promise<ChildResult> =>
    runChild('./batch-kill-child.ts', {
      DB_PATH: files.path,
      MODE: mode,
      BATCH: String(BATCH),
      ROUND: round,
      ...(killAt === undefined ? {} : { KILL_AT: String(killAt) }),
    });

  /** Kills the child mid-way through its second batch and checks it died there. */
  const killMidBatch = async (mode: string): Promise<void> => {
    const killed = await child(mode, 'a', KILL_AT);
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    expect(killed.stdout.split('\n')).toContain('batch a1 committed');
    expect(killed.stdout).not.toContain('batch a2 committed');
  };
  const finishes = async (mode: string): Promise<void> => {
    const after = await child(mode, 'b');
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout.split('\n')).toEqual(['batch b1 committed', 'batch b2 committed', 'done', '']);
  };
  const query = <T>(sql: string): T[] => {
    const db = new Database(files.path, { readonly: true });
    try {
      return db.prepare(sql).all() as T[];
    } finally {
      db.close();
    }
  };
  /** Each scope's working-memory usage row, with the entries it really has. */
  const usageRows = () =>
    query<{ entry_count: number; entries: number }>(
      `SELECT v.entry_count, (SELECT COUNT(*) FROM working_memory_entries e WHERE e.memory_id = v.memory_id) AS entries
       FROM working_memory_versions v`,
    );
  const seqs = (count: number): number[] => Array.from({ length: count }, (_, index) => index + 1);

  it('keeps an import of 1,000 observations whole or not at all', async () => {
    await killMidBatch('import');
    const rows = audit(files.path);
    expect(rows.integrity).toEqual(['ok']);
    expect(rows.observations.map((row) => row.seq)).toEqual(seqs(BATCH));
    expect(rows.observations.every((row) => row.content.startsWith('batch a1 '))).toBe(true);
    expect(rows.operations.map((row) => `${row.operation_type}:${row.status}`)).toEqual(['import:applied']);
    expect(rows.records.map((row) => [row.observation_count, row.last_observation_seq])).toEqual([[BATCH, BATCH]]);

    await finishes('import');
    const after = audit(files.path);
    expect(after.integrity).toEqual(['ok']);
    expect(after.observations.map((row) => row.seq)).toEqual(seqs(3 * BATCH));
    expect(after.observations.map((row) => row.content.split(' ')[1])).toEqual([
      ...Array<string>(BATCH).fill('a1'),
      ...Array<string>(BATCH).fill('b1'),
      ...Array<string>(BATCH).fill('b2'),
    ]);
    expect(after.operations.map((row) => `${row.operation_type}:${row.status}`)).toEqual(
      Array<string>(3).fill('import:applied'),
    );
    expect(after.records.map((row) => [row.observation_count, row.last_observation_seq])).toEqual([
      [3 * BATCH, 3 * BATCH],
    ]);
  }, 60_000);

  it('keeps 1,000 messages stored by one observe whole or not at all', async () => {
    await killMidBatch('messages');
    const rows = audit(files.path);
    expect(rows.integrity).toEqual(['ok']);
    expect(rows.messages.map((row) => row.seq)).toEqual(seqs(BATCH));
    expect(rows.records.map((row) => row.last_message_seq)).toEqual([BATCH]);
    expect(rows.operations).toEqual([]);
    const unobserved = query<{ tokens: number; sum: number }>(
      `SELECT r.unobserved_message_tokens AS tokens, (SELECT SUM(token_count) FROM om_messages) AS sum
       FROM om_memory_records r`,
    );
    expect(unobserved).toHaveLength(1);
    expect(unobserved[0]?.tokens).toBe(unobserved[0]?.sum);

    await finishes('messages');
    const after = audit(files.path);
    expect(after.integrity).toEqual(['ok']);
    expect(after.messages.map((row) => row.seq)).toEqual(seqs(3 * BATCH));
    expect(after.records.map((row) => row.last_message_seq)).toEqual([3 * BATCH]);
  }, 60_000);

  it('keeps a group commit of 1,000 working-memory sets whole or not at all', async () => {
    await killMidBatch('working-memory');
    const rows = audit(files.path);
    expect(rows.integrity).toEqual(['ok']);
    expect(rows.entries).toHaveLength(BATCH);
    expect(new Set(rows.entries.map((row) => row.entry_key))).toEqual(new Set(['batch-a1']));
    expect(new Set(rows.entries.map((row) => row.memory_id)).size).toBe(BATCH);
    // Each scope's usage row agrees with its entries: the kill left no half-counted set.
    const usage = usageRows();
    expect(usage).toHaveLength(BATCH);
    expect(usage.every((row) => row.entry_count === 1 && row.entries === 1)).toBe(true);

    await finishes('working-memory');
    const after = audit(files.path);
    expect(after.integrity).toEqual(['ok']);
    expect(after.entries).toHaveLength(3 * BATCH);
    const counts = usageRows();
    expect(counts.every((row) => row.entry_count === 3 && row.entries === 3)).toBe(true);
  }, 60_000);
});
