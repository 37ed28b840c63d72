/**
 * The CLI's check that the workspace is an existing folder: a mistyped `HARNESS_WORKSPACE`
 * would otherwise get its folders and an empty database made by the SQLite store.
 * @module
 */
import { statSync } from 'node:fs';
import type { HarnessConfig } from '../config/schema.js';
import { ConfigError } from '../core/errors.js';

/** Throws `CONFIG_INVALID` naming the workspace's source when it is missing or not a folder. */
export function checkWorkspace(config: HarnessConfig): void {
  const { workspace } = config;
  const source = config.sources['workspace'] ?? 'default';
  const fromVariable = source === 'env:HARNESS_WORKSPACE';
  let isDirectory: boolean;
  try {
    isDirectory = statSync(workspace).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const missing = code === 'ENOENT' || code === 'ENOTDIR';
    throw new ConfigError({
      key: 'workspace',
      source,
      message: missing
        ? `${workspace} does not exist; create the folder, or ` +
          (fromVariable ? 'set HARNESS_WORKSPACE to an existing one' : 'run harness from an existing folder')
        : `${workspace} cannot be read (${code ?? String(error)})`,
      cause: error,
    });
  }
  if (!isDirectory) {
    throw new ConfigError({
      key: 'workspace',
      source,
      message:
        `${workspace} is a file, not a folder; ` +
        (fromVariable ? 'set HARNESS_WORKSPACE to a folder' : 'run harness from a folder'),
    });
  }
}
