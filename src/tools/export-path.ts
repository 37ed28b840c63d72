/**
 * Where memory exports may be written: inside the workspace only, never through a
 * symlink, and atomically.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import type { Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { HarnessMemoryError } from '../core/errors.js';
import type { ExportFormat } from '../core/memory-export.js';
import type { Scope } from '../core/scope.js';

/** Longest export path accepted, in characters. */
export const MAX_EXPORT_PATH_LENGTH = 1024;

/** What {@link resolveExportPath} takes. */
export interface ResolveExportPathOptions {
  /** The directory exports must stay inside; it may itself be a symlink. */
  workspace: string;
  /** Relative to the workspace, or absolute inside it. @default `.harness/observational-memory/<tenant>/<conversation>/<agent>/memory-<YYYYMMDD-HHMMSS>.<json|md>` */
  requestedPath?: string | undefined;
  scope: Scope;
  format: ExportFormat;
  /** Clock for the default file name (UTC). @default () => new Date() */
  now?: () => Date;
}

/** A checked export destination. */
export interface ResolvedExportPath {
  /** Under the workspace's real path. */
  readonly absolutePath: string;
  /** Relative to the workspace, with forward slashes. */
  readonly relativePath: string;
}

/**
 * Checks an export destination and creates its missing directories (0o755). Throws
 * `EXPORT_INVALID` for empty, over-long or NUL-containing paths, paths outside the
 * workspace, and paths through or onto a symlink.
 */
export async function resolveExportPath(options: ResolveExportPathOptions): Promise<ResolvedExportPath> {
  const { requestedPath } = options;
  const shown = requestedPath ?? '(default)';
  const refuse = (reason: string): HarnessMemoryError => exportPathError(shown, reason);
  if (options.workspace.trim() === '') throw refuse('no workspace is configured');
  const workspace = path.resolve(options.workspace);
  let workspaceReal: string;
  try {
    workspaceReal = await fs.realpath(workspace);
  } catch (error) {
    throw exportPathError(shown, `the workspace ${workspace} cannot be resolved`, error);
  }

  const segments = requestedPath === undefined ? defaultSegments(options, refuse) : requestedSegments(requestedPath, workspace, workspaceReal, refuse);
  const absolutePath = path.join(workspaceReal, ...segments);
  const directory = path.dirname(absolutePath);

  // Every existing component below the workspace must be a real directory, not a symlink.
  let current = workspaceReal;
  for (const segment of segments.slice(0, -1)) {
    current = path.join(current, segment);
    const stats = await lstatOrUndefined(current);
    if (stats === undefined) break;
    if (stats.isSymbolicLink()) throw refuse(`${relative(workspaceReal, current)} is a symlink`);
    if (!stats.isDirectory()) throw refuse(`${relative(workspaceReal, current)} is not a directory`);
  }
  const target = await lstatOrUndefined(absolutePath);
  if (target?.isSymbolicLink()) throw refuse('the target is a symlink');
  if (target !== undefined && !target.isFile()) throw refuse('the target exists and is not a regular file');

  await fs.mkdir(directory, { recursive: true, mode: 0o755 });
  // Re-check after mkdir: a symlink planted meanwhile would change the real path.
  if ((await fs.realpath(directory)) !== directory) throw refuse('a directory on the path was replaced by a symlink');
  return { absolutePath, relativePath: segments.join('/') };
}

/**
 * Writes a file atomically: a temporary file (`wx`, 0o644) in the same directory, fsync,
 * rename over the target, then a best-effort fsync of the directory. The temporary file
 * is removed if anything fails.
 */
export async function writeFileAtomic(absolutePath: string, content: string | Uint8Array): Promise<void> {
  const directory = path.dirname(absolutePath);
  const temporary = path.join(directory, `${path.basename(absolutePath)}.tmp-${randomBytes(6).toString('hex')}`);
  let handle: FileHandle | undefined;
  try {
    handle = await fs.open(temporary, 'wx', 0o644);
    await handle.writeFile(content);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await fs.rename(temporary, absolutePath);
  } catch (error) {
    await handle?.close().catch(() => undefined);
    await fs.rm(temporary, { force: true }).catch(() => undefined);
    throw error;
  }
  await syncDirectory(directory);
}

function defaultSegments(options: ResolveExportPathOptions, refuse: (reason: string) => HarnessMemoryError): string[] {
  const { tenantId, conversationId, agentId } = options.scope;
  for (const part of [tenantId, conversationId, agentId]) {
    if (part === '' || part === '.' || part === '..' || /[/\\\0]/.test(part)) throw refuse(`scope id ${JSON.stringify(part)} cannot be a path part`);
  }
  const extension = options.format === 'markdown' ? 'md' : 'json';
  const stamp = (options.now ?? (() => new Date()))().toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-');
  return ['.harness', 'observational-memory', tenantId, conversationId, agentId, `memory-${stamp}.${extension}`];
}

function requestedSegments(requested: string, workspace: string, workspaceReal: string, refuse: (reason: string) => HarnessMemoryError): string[] {
  if (requested.trim() === '') throw refuse('the path is empty');
  if (requested.length > MAX_EXPORT_PATH_LENGTH) throw refuse(`the path is longer than ${MAX_EXPORT_PATH_LENGTH} characters`);
  if (requested.includes('\0')) throw refuse('the path contains a NUL byte');
  const resolved = path.resolve(workspace, requested);
  // An absolute path may name the workspace by its given path or by its real path.
  const inside = [relative(workspace, resolved), relative(workspaceReal, resolved)].find((candidate) => candidate !== undefined);
  if (inside === undefined) throw refuse('it resolves outside the workspace');
  if (inside === '') throw refuse('it names the workspace itself');
  return inside.split('/');
}

/** The forward-slash path of `target` below `base`, `''` for `base` itself, or undefined when outside. */
function relative(base: string, target: string): string | undefined {
  const result = path.relative(base, target);
  if (result === '') return '';
  if (result === '..' || result.startsWith(`..${path.sep}`) || path.isAbsolute(result)) return undefined;
  return result.split(path.sep).join('/');
}

async function lstatOrUndefined(target: string): Promise<Stats | undefined> {
  try {
    return await fs.lstat(target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

async function syncDirectory(directory: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await fs.open(directory, 'r');
    await handle.sync();
  } catch {
    // Not every platform or filesystem can fsync a directory; the rename already happened.
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

function exportPathError(requested: string, reason: string, cause?: unknown): HarnessMemoryError {
  const shown = requested.length > 200 ? `${requested.slice(0, 200)}…` : requested;
  return new HarnessMemoryError({
    code: 'EXPORT_INVALID',
    component: 'export',
    message: `cannot export to ${JSON.stringify(shown)}: ${reason}. Give a path relative to the workspace, with no symlinks.`,
    data: { path: shown },
    cause,
  });
}
