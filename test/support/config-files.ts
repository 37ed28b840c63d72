/**
 * Config files in a temporary workspace, and the `ConfigError` a load throws, for the
 * configuration tests.
 * @module
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../src/core/errors.js';

/** Writes `<dir>/.harness/config.toml` and returns its path. */
export function writeConfigFile(dir: string, toml: string): string {
  mkdirSync(join(dir, '.harness'), { recursive: true });
  const path = join(dir, '.harness', 'config.toml');
  writeFileSync(path, toml);
  return path;
}

/** The `ConfigError` that `run` throws; any other outcome fails the test. */
export function configErrorOf(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

/** A fresh temporary folder holding an empty `home` and an empty `workspace`; remove `root` after. */
export function makeConfigDirs(prefix: string): { root: string; home: string; workspace: string } {
  const root = mkdtempSync(join(tmpdir(), prefix));
  const home = join(root, 'home');
  const workspace = join(root, 'workspace');
  mkdirSync(home);
  mkdirSync(workspace);
  return { root, home, workspace };
}
