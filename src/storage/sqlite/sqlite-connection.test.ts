import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { configureSqliteConnection, openSqliteFile } from './sqlite-connection.js';

const temporaryDirectories: string[] = [];

function temporaryDirectory(): string {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-sqlite-connection-'));
  temporaryDirectories.push(directory);
  return directory;
}

afterEach(() => {
  for (const directory of temporaryDirectories.splice(0)) fs.rmSync(directory, { recursive: true, force: true });
});

const modeOf = (target: string): number => fs.statSync(target).mode & 0o777;

/** Opens `file` as a store does, writes a row (so the log and shared memory exist), and leaves it open. */
function openAndWrite(file: string) {
  const db = openSqliteFile(file, 1000);
  configureSqliteConnection(db, { busyTimeoutMs: 1000, synchronous: 'NORMAL', path: file });
  db.exec('CREATE TABLE IF NOT EXISTS t (x); INSERT INTO t VALUES (1)');
  return db;
}

describe('sqlite connection: opening the file', () => {
  it('opens an in-memory database', () => {
    const db = openSqliteFile(':memory:', 1000);
    expect(db.memory).toBe(true);
    db.close();
  });

  it('creates missing folders for a new file', () => {
    const file = path.join(temporaryDirectory(), 'a', 'b', 'memory.db');
    const db = openAndWrite(file);
    expect(fs.existsSync(file)).toBe(true);
    db.close();
  });
});

// Memories and transcripts are for the user who runs the harness only.
describe.skipIf(process.platform === 'win32')('sqlite connection: permissions (POSIX modes)', () => {
  it('creates a new database, its write-ahead log and its shared memory readable by their owner only', () => {
    const file = path.join(temporaryDirectory(), 'memory.db');
    const db = openAndWrite(file);
    try {
      expect(fs.existsSync(`${file}-wal`)).toBe(true);
      expect(fs.existsSync(`${file}-shm`)).toBe(true);
      for (const each of [file, `${file}-wal`, `${file}-shm`]) expect(modeOf(each), each).toBe(0o600);
    } finally {
      db.close();
    }
    // Opened again, it keeps its mode.
    openAndWrite(file).close();
    expect(modeOf(file)).toBe(0o600);
  });

  it('creates the missing folders of a new file readable by their owner only, leaving the ones that exist as they are', () => {
    const directory = temporaryDirectory();
    fs.chmodSync(directory, 0o755);
    const existing = path.join(directory, 'existing');
    fs.mkdirSync(existing, { mode: 0o751 });
    fs.chmodSync(existing, 0o751);
    const file = path.join(existing, 'a', 'b', 'memory.db');
    // The usual umask, which leaves group and others able to read new folders.
    const umask = process.umask(0o022);
    try {
      openAndWrite(file).close();
    } finally {
      process.umask(umask);
    }
    for (const folder of [path.join(existing, 'a'), path.join(existing, 'a', 'b')])
      expect(modeOf(folder), folder).toBe(0o700);
    expect(modeOf(existing)).toBe(0o751);
    expect(modeOf(directory)).toBe(0o755);
  });

  it('never changes the mode of a database file the user made', () => {
    const directory = temporaryDirectory();
    const empty = path.join(directory, 'empty.db');
    fs.writeFileSync(empty, '');
    fs.chmodSync(empty, 0o640);
    const existing = path.join(directory, 'existing.db');
    openAndWrite(existing).close();
    fs.chmodSync(existing, 0o644);
    for (const file of [empty, existing]) {
      const db = openAndWrite(file);
      db.close();
      expect(modeOf(file), file).toBe(file === empty ? 0o640 : 0o644);
    }
  });

  it('opens a database through a symlink without changing the file it names', () => {
    const directory = temporaryDirectory();
    const real = path.join(directory, 'real.db');
    openAndWrite(real).close();
    fs.chmodSync(real, 0o644);
    const link = path.join(directory, 'link.db');
    fs.symlinkSync(real, link);
    openAndWrite(link).close();
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    expect(modeOf(real)).toBe(0o644);
  });
});
