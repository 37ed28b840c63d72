import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  realpathSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { watchDatabaseFile } from './database-file-watch.js';
import type { DatabaseFileWatch } from './database-file-watch.js';

const MIB = 1024 * 1024;
let root: string | undefined;
let watch: DatabaseFileWatch | undefined;

afterEach(() => {
  watch?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

function databaseFile(): string {
  // Real path: the log is named by where the file really is.
  root = realpathSync(mkdtempSync(join(tmpdir(), 'hm-db-watch-')));
  const path = join(root, 'state.db');
  writeFileSync(path, '');
  return path;
}

// The interval never fires during a test: each call of warning() or problem() checks.
const NEVER = 1_000_000;

/** Watches a new database file with a 2 MiB log alert; `warnings` collects what the log gets. */
function watchWal(): { path: string; warnings: string[]; wal: DatabaseFileWatch } {
  const path = databaseFile();
  const warnings: string[] = [];
  const wal = watchDatabaseFile(path, {
    intervalMs: NEVER,
    onProblem: () => undefined,
    walAlertBytes: 2 * MIB,
    onWarning: (warning) => warnings.push(warning),
  });
  watch = wal;
  return { path, warnings, wal };
}

describe('watchDatabaseFile: the write-ahead log', () => {
  it('warns once when the -wal file grows past the alert, and again only after it fell below half', () => {
    const { path, warnings, wal } = watchWal();
    expect(wal.warning()).toBeUndefined();
    writeFileSync(`${path}-wal`, '');
    truncateSync(`${path}-wal`, 3 * MIB);
    expect(wal.warning()).toBeDefined();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`${path}-wal) is 3 MiB, over the 2 MiB alert`);
    truncateSync(`${path}-wal`, 1.5 * MIB);
    expect(wal.warning()).toBeDefined();
    truncateSync(`${path}-wal`, 3 * MIB);
    wal.warning();
    expect(warnings).toHaveLength(1);
    truncateSync(`${path}-wal`, MIB);
    expect(wal.warning()).toBeUndefined();
    truncateSync(`${path}-wal`, 4 * MIB);
    wal.warning();
    expect(warnings[1]).toContain('is 4 MiB');
    expect(warnings).toHaveLength(2);
    expect(wal.problem()).toBeUndefined();
  });

  it('never warns with an alert of 0', () => {
    const path = databaseFile();
    writeFileSync(`${path}-wal`, '');
    truncateSync(`${path}-wal`, 64 * MIB);
    const warnings: string[] = [];
    watch = watchDatabaseFile(path, {
      intervalMs: NEVER,
      onProblem: () => undefined,
      walAlertBytes: 0,
      onWarning: (warning) => warnings.push(warning),
    });
    expect(watch.warning()).toBeUndefined();
    expect(warnings).toEqual([]);
  });
});

describe('watchDatabaseFile: a database path that is a symbolic link', () => {
  it("watches the log SQLite writes beside the link's target", () => {
    const target = databaseFile();
    const link = join(root!, 'link.db');
    symlinkSync(target, link);
    const database = new Database(link);
    try {
      database.pragma('journal_mode = WAL');
      // No checkpoint, so the log keeps every page written.
      database.pragma('wal_autocheckpoint = 0');
      database.exec('CREATE TABLE pages (body BLOB)');
      const warnings: string[] = [];
      watch = watchDatabaseFile(link, {
        intervalMs: NEVER,
        onProblem: () => undefined,
        walAlertBytes: MIB,
        onWarning: (warning) => warnings.push(warning),
      });
      expect(watch.warning()).toBeUndefined();
      const insert = database.prepare('INSERT INTO pages (body) VALUES (?)');
      for (let index = 0; index < 32; index++) insert.run(Buffer.alloc(64 * 1024, index));
      expect(existsSync(`${link}-wal`)).toBe(false);
      expect(watch.warning()).toBeDefined();
      expect(warnings).toEqual([expect.stringContaining(`(${target}-wal) is 2 MiB`)]);
      expect(watch.problem()).toBeUndefined();
    } finally {
      database.close();
    }
  });

  it('finds the target of a link whose file is made after the watch starts', () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), 'hm-db-watch-')));
    mkdirSync(join(root, 'real'));
    const target = join(root, 'real', 'state.db');
    const link = join(root, 'link.db');
    symlinkSync(target, link);
    watch = watchDatabaseFile(link, { intervalMs: NEVER, onProblem: () => undefined, walAlertBytes: MIB });
    expect(watch.warning()).toBeUndefined();
    writeFileSync(target, '');
    writeFileSync(`${target}-wal`, '');
    truncateSync(`${target}-wal`, 3 * MIB);
    expect(watch.warning()).toBeDefined();
  });
});

// /healthz answers anyone, key or not: its texts name no path; the fault log has it.
describe('watchDatabaseFile: what /healthz shows', () => {
  it('gives the warning without the file path, and the log the warning with it', () => {
    const { path, warnings, wal } = watchWal();
    writeFileSync(`${path}-wal`, '');
    truncateSync(`${path}-wal`, 3 * MIB);
    expect(wal.warning()).toBe('the write-ahead log is 3 MiB, past its 2 MiB alert size; see the server log');
    expect(warnings[0]).toContain(`${path}-wal`);
  });

  it.each([
    ['deleted', (path: string) => rmSync(path), 'the database file was deleted under the running server'],
    [
      'replaced',
      (path: string) => {
        rmSync(path);
        writeFileSync(path, 'another file');
      },
      'the database file was replaced under the running server',
    ],
  ])('says the file was %s without its path, and logs the path', (_, change, said) => {
    const path = databaseFile();
    const problems: string[] = [];
    watch = watchDatabaseFile(path, { intervalMs: NEVER, onProblem: (problem) => problems.push(problem) });
    // Holding the old inode open keeps a new file from reusing its number.
    const held = openSync(path, 'r');
    try {
      change(path);
      const problem = watch.problem();
      expect(problem).toContain(said);
      expect(problem).toContain('see the server log');
      expect(problem).not.toContain(root);
      expect(problems).toEqual([expect.stringContaining(path)]);
    } finally {
      closeSync(held);
    }
  });
});
