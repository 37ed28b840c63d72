import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  root = mkdtempSync(join(tmpdir(), 'hm-db-watch-'));
  const path = join(root, 'state.db');
  writeFileSync(path, '');
  return path;
}

// The interval never fires during a test: each call of warning() or problem() checks.
const NEVER = 1_000_000;

describe('watchDatabaseFile: the write-ahead log', () => {
  it('warns once when the -wal file grows past the alert, and again only after it fell below half', () => {
    const path = databaseFile();
    const warnings: string[] = [];
    watch = watchDatabaseFile(path, {
      intervalMs: NEVER,
      onProblem: () => undefined,
      walAlertBytes: 2 * MIB,
      onWarning: (warning) => warnings.push(warning),
    });
    expect(watch.warning()).toBeUndefined();
    writeFileSync(`${path}-wal`, '');
    truncateSync(`${path}-wal`, 3 * MIB);
    expect(watch.warning()).toBe(warnings[0]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`${path}-wal) is 3 MiB, over the 2 MiB alert`);
    truncateSync(`${path}-wal`, 1.5 * MIB);
    expect(watch.warning()).toBeDefined();
    truncateSync(`${path}-wal`, 3 * MIB);
    watch.warning();
    expect(warnings).toHaveLength(1);
    truncateSync(`${path}-wal`, MIB);
    expect(watch.warning()).toBeUndefined();
    truncateSync(`${path}-wal`, 4 * MIB);
    expect(watch.warning()).toContain('is 4 MiB');
    expect(warnings).toHaveLength(2);
    expect(watch.problem()).toBeUndefined();
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
