import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteWriteBatcher } from './sqlite-write-batcher.js';

describe('SqliteWriteBatcher', () => {
  let directory: string;
  let db: Database.Database;
  let batcher: SqliteWriteBatcher;
  const rows = () => db.prepare('SELECT value FROM items ORDER BY rowid').pluck().all();
  const insert = (value: string) => () =>
    Number(db.prepare('INSERT INTO items (value) VALUES (?)').run(value).lastInsertRowid);
  /** Frames written to the write-ahead log since the last call: one per page per commit. */
  const framesSince = (): number => {
    const size = statSync(join(directory, 'batch.db-wal')).size;
    db.pragma('wal_checkpoint(TRUNCATE)');
    return size === 0 ? 0 : (size - 32) / ((db.pragma('page_size', { simple: true }) as number) + 24);
  };

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'harness-memory-batcher-'));
    db = new Database(join(directory, 'batch.db'));
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE items (value TEXT NOT NULL UNIQUE)');
    batcher = new SqliteWriteBatcher(db, (error) => new Error(`wrapped: ${(error as Error).message}`));
  });
  afterEach(() => {
    if (db.open) db.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('commits writes submitted together in one transaction, in submission order', async () => {
    framesSince();
    for (const value of ['a', 'b', 'c', 'd']) await batcher.submit(insert(value));
    const oneByOne = framesSince();
    const results = await Promise.all(['e', 'f', 'g', 'h'].map((value) => batcher.submit(insert(value))));
    const together = framesSince();
    expect(results).toEqual([5, 6, 7, 8]);
    expect(rows()).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']);
    // The table page and its unique index, once per commit.
    expect(oneByOne).toBe(8);
    expect(together).toBe(2);
  });

  it('rolls back only the unit that failed; the others commit and resolve', async () => {
    const outcomes = await Promise.allSettled([
      batcher.submit(insert('a')),
      batcher.submit(() => {
        insert('b')();
        insert('a')();
      }),
      batcher.submit(() => {
        insert('c')();
        throw new Error('refused');
      }),
      batcher.submit(insert('d')),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason.message).toMatch(/^wrapped: UNIQUE constraint failed/);
    expect((outcomes[2] as PromiseRejectedResult).reason.message).toBe('wrapped: refused');
    expect(rows()).toEqual(['a', 'd']);
    expect(db.inTransaction).toBe(false);
  });

  it('a unit alone commits or rolls back by itself', async () => {
    await expect(batcher.submit(insert('x'))).resolves.toBe(1);
    await expect(
      batcher.submit(() => {
        insert('y')();
        throw new Error('no');
      }),
    ).rejects.toThrow('wrapped: no');
    expect(rows()).toEqual(['x']);
    expect(db.inTransaction).toBe(false);
  });

  it('flush() commits what is waiting at once, so a reader sees it', async () => {
    const pending = batcher.submit(insert('early'));
    expect(rows()).toEqual([]);
    batcher.flush();
    expect(rows()).toEqual(['early']);
    await expect(pending).resolves.toBe(1);
    batcher.flush();
  });

  it("inside a transaction the connection's owner opened, units get savepoints and the owner commits", async () => {
    db.exec('BEGIN IMMEDIATE');
    const outcomes = await Promise.allSettled([
      batcher.submit(insert('a')),
      batcher.submit(() => {
        insert('b')();
        throw new Error('undo b');
      }),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected']);
    expect(await batcher.submit(insert('c'))).toBe(2);
    expect(db.inTransaction).toBe(true);
    db.exec('ROLLBACK');
    expect(rows()).toEqual([]);
  });

  it('rejects every unit when the transaction cannot begin, and stores nothing', async () => {
    const other = new Database(join(directory, 'batch.db'), { timeout: 0 });
    db.pragma('busy_timeout = 0');
    other.exec('BEGIN IMMEDIATE');
    try {
      const outcomes = await Promise.allSettled([batcher.submit(insert('a')), batcher.submit(insert('b'))]);
      expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
      expect((outcomes[0] as PromiseRejectedResult).reason.message).toMatch(/^wrapped: database is locked/);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect(rows()).toEqual([]);
    await expect(batcher.submit(insert('c'))).resolves.toBe(1);
  });

  it('waits for a write lock held elsewhere on timers, commits what came meanwhile in the same batch, and lets other scopes read', async () => {
    const other = new Database(join(directory, 'batch.db'), { timeout: 0 });
    db.pragma('busy_timeout = 0');
    let commits = 0;
    const waiting = new SqliteWriteBatcher(
      db,
      (error) => error,
      () => commits++,
      undefined,
      60_000,
    );
    other.exec('BEGIN IMMEDIATE');
    try {
      let settled = false;
      const first = waiting.submit(insert('a'), 'scope-1');
      void first.finally(() => (settled = true));
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(settled).toBe(false);
      expect(waiting.lockedOut('scope-2')).toBeUndefined();
      const turn = waiting.lockedOut('scope-1');
      expect(turn).toBeInstanceOf(Promise);
      expect(waiting.lockedOut()).toBeInstanceOf(Promise);
      const second = waiting.submit(insert('b'), 'scope-2');
      await turn;
      expect(settled).toBe(false);
      other.exec('ROLLBACK');
      expect(await Promise.all([first, second])).toEqual([1, 2]);
      expect(commits).toBe(1);
      expect(waiting.lockedOut()).toBeUndefined();
    } finally {
      if (other.inTransaction) other.exec('ROLLBACK');
      other.close();
    }
    expect(rows()).toEqual(['a', 'b']);
  });
});
