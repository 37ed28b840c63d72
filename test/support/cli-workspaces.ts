/**
 * Temporary workspaces for in-process CLI tests, removed after the file's tests.
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/** Returns `workspaceWith(toml?)`: a fresh workspace, with `.harness/config.toml` holding `toml` when given. */
export function useCliWorkspaces(prefix: string): (toml?: string) => string {
  const directories: string[] = [];
  afterAll(() => {
    for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  });
  return (toml) => {
    const workspace = mkdtempSync(join(tmpdir(), prefix));
    directories.push(workspace);
    if (toml !== undefined) {
      mkdirSync(join(workspace, '.harness'));
      writeFileSync(join(workspace, '.harness', 'config.toml'), toml);
    }
    return workspace;
  };
}
