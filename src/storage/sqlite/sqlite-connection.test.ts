import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { StoreError } from '../../core/errors.js';
import { openSqliteFile } from './sqlite-connection.js';

const require = createRequire(import.meta.url);
const folder = mkdtempSync(join(tmpdir(), 'harness-sqlite-driver-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/**
 * better-sqlite3 as an install whose script never ran leaves it (pnpm's default, `npm ci
 * --ignore-scripts`): its JavaScript without the compiled addon.
 */
function unbuiltDriver(): typeof BetterSqlite3 {
  const modules = join(folder, 'node_modules');
  const copy = join(modules, 'better-sqlite3');
  const real = dirname(require.resolve('better-sqlite3/package.json'));
  mkdirSync(copy, { recursive: true });
  cpSync(join(real, 'package.json'), join(copy, 'package.json'));
  cpSync(join(real, 'lib'), join(copy, 'lib'), { recursive: true });
  for (const name of ['bindings', 'file-uri-to-path']) {
    const target = dirname(createRequire(join(real, 'package.json')).resolve(`${name}/package.json`));
    symlinkSync(target, join(modules, name));
  }
  return createRequire(join(copy, 'package.json'))(copy) as typeof BetterSqlite3;
}

describe('openSqliteFile', () => {
  it('says the native module is not built, how to rebuild it, and leaves no database file', () => {
    const path = join(folder, 'data', 'state.db');
    let thrown: unknown;
    try {
      openSqliteFile(path, 5000, unbuiltDriver());
    } catch (error) {
      thrown = error;
    }
    expect(StoreError.isInstance(thrown)).toBe(true);
    const error = thrown as StoreError;
    expect(error.message).toContain('better-sqlite3 native module could not be loaded');
    expect(error.message).toContain('npm rebuild better-sqlite3');
    expect(error.message).not.toContain(path);
    expect(error.data).toMatchObject({ reason: 'driver_not_loaded' });
    expect(existsSync(path)).toBe(false);
  });

  it('opens a file with the real driver', () => {
    const db = openSqliteFile(join(folder, 'ok', 'state.db'), 5000);
    expect(db.prepare('SELECT 1 AS one').get()).toEqual({ one: 1 });
    db.close();
  });
});
