/**
 * Where memory exports may be written: new files under the workspace's
 * `.harness/observational-memory/` only, never through a symlink, never over an existing
 * file, never a database or configuration file, and atomically.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { constants as fsConstants, promises as fs } from 'node:fs';
import type { Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { HarnessMemoryError } from '../core/errors.js';
import type { ExportFormat } from '../core/memory-export.js';
import type { Scope } from '../core/scope.js';

/** Longest export path accepted, in characters. */
export const MAX_EXPORT_PATH_LENGTH = 1024;
/** The longest file or folder name an export path may hold, in UTF-8 bytes (most file systems allow no more). */
export const MAX_NAME_BYTES = 255;
/** The longest export file name, in UTF-8 bytes: room is left for the temporary name's `.tmp-<12 hex>`. */
export const MAX_FILE_NAME_BYTES: number = MAX_NAME_BYTES - '.tmp-'.length - 12;

/** The folder of the workspace that exports are written to, and only to. */
export const EXPORT_DIRECTORY = '.harness/observational-memory';

/** What {@link resolveExportPath} takes. */
export interface ResolveExportPathOptions {
  /** The workspace; exports go under its `.harness/observational-memory/`. It may itself be a symlink. */
  workspace: string;
  /**
   * Relative to the workspace, or absolute inside it, and under `.harness/observational-memory/`.
   * @default `.harness/observational-memory/<tenant>/<conversation>/<agent>/memory-<YYYYMMDD-HHMMSS>.<json|md>`
   */
  requestedPath?: string | undefined;
  scope: Scope;
  format: ExportFormat;
  /** Clock for the default file name (UTC). @default () => new Date() */
  now?: () => Date;
  /**
   * Files an export must never be, whatever their names: the store's database and the
   * configuration files. Names always refused besides: `*.db`, `*.sqlite`, `*.sqlite3`, `*-wal`,
   * `*-shm`, `*-journal` (the database's own companions) and `config.toml`.
   * @default []
   */
  protectedPaths?: readonly string[];
}

/** A checked export destination. */
export interface ResolvedExportPath {
  /** Under the workspace's real path. */
  readonly absolutePath: string;
  /** Relative to the workspace, with forward slashes. */
  readonly relativePath: string;
}

// Memories and transcripts must not be readable by other local users (the umask can only
// take bits away from these).
const PRIVATE_FILE_MODE = 0o600;
const PRIVATE_DIRECTORY_MODE = 0o700;

// Names an export can never take: database files and their journals, and configuration.
const PROTECTED_NAME = /(?:\.db|\.sqlite3?|-wal|-shm|-journal)$|^config\.toml$/i;

/**
 * Checks an export destination and creates its missing directories (0o700: memory is its
 * owner's only; folders that exist keep their mode). The destination is a new file in the
 * scope's folder of `.harness/observational-memory/` (`<tenant>/<conversation>/<agent>/`) in
 * the workspace, never a database or configuration file; with no path, the default name
 * (with `-2`, `-3`, … for `attempt` 2, 3, … when that name is taken). Throws
 * `EXPORT_INVALID` naming the reason for empty, over-long or NUL-containing paths, paths
 * outside that folder (after `..`), paths through or onto a symlink, existing files, and
 * protected files.
 */
export async function resolveExportPath(options: ResolveExportPathOptions, attempt = 1): Promise<ResolvedExportPath> {
  // A blank path is no path (models fill optional strings with ""): the default name.
  const requestedPath = options.requestedPath?.trim() === '' ? undefined : options.requestedPath;
  const shown = requestedPath ?? '(default)';
  const refuse = (reason: string): HarnessMemoryError => exportPathError(shown, reason, undefined, options.scope);
  if (options.workspace.trim() === '') throw refuse('no workspace is configured');
  const workspace = path.resolve(options.workspace);
  let workspaceReal: string;
  try {
    workspaceReal = await fs.realpath(workspace);
  } catch (error) {
    throw exportPathError(shown, `the workspace ${workspace} cannot be resolved`, error);
  }

  const segments =
    requestedPath === undefined
      ? defaultSegments(options, refuse, attempt)
      : requestedSegments(requestedPath, workspace, workspaceReal, options.scope, refuse);
  const absolutePath = path.join(workspaceReal, ...segments);
  const directory = path.dirname(absolutePath);
  await refuseProtected(absolutePath, options.protectedPaths ?? [], refuse);

  // Every existing component below the workspace must be a real directory, not a symlink.
  let current = workspaceReal;
  for (const segment of segments.slice(0, -1)) {
    current = path.join(current, segment);
    const stats = await lstatOrUndefined(current, refuse);
    if (stats === undefined) break;
    if (stats.isSymbolicLink()) throw refuse(`${relative(workspaceReal, current)} is a symlink`);
    if (!stats.isDirectory()) throw refuse(`${relative(workspaceReal, current)} is not a directory`);
  }
  const target = await lstatOrUndefined(absolutePath, refuse);
  if (target?.isSymbolicLink()) throw refuse('the target is a symlink');
  // A default name taken by an export of the same second: the next suffix.
  if (target !== undefined && requestedPath === undefined && attempt < MAX_DEFAULT_ATTEMPTS)
    return resolveExportPath(options, attempt + 1);
  if (target !== undefined) throw refuse('it names an existing file, and exports only create new files');

  await fs.mkdir(directory, { recursive: true, mode: PRIVATE_DIRECTORY_MODE }).catch((error: unknown) => {
    throw unusable(error, refuse);
  });
  // Re-check after mkdir: a symlink planted meanwhile would change the real path.
  if ((await fs.realpath(directory)) !== directory) throw refuse('a directory on the path was replaced by a symlink');
  return { absolutePath, relativePath: segments.join('/') };
}

/**
 * Resolves the destination and writes `content` to it as a new file ({@link writeNewFile}).
 * With no requested path, a default name taken meanwhile (two exports in one second) moves
 * on to the next suffix. Then removes the temporary files that killed exports left in that
 * folder, once they are {@link STALE_TEMPORARY_MS} old.
 */
export async function writeExport(
  options: ResolveExportPathOptions & {
    content: string | Uint8Array;
    /** Testing hook, passed to {@link writeNewFile}: crash tests kill the process there. */
    faultPoint?: ExportFaultPoint;
  },
): Promise<ResolvedExportPath> {
  for (let attempt = 1; ; attempt++) {
    const destination = await resolveExportPath(options, attempt);
    try {
      await writeNewFile(destination.absolutePath, options.content, options.faultPoint);
      await removeStaleTemporaries(path.dirname(destination.absolutePath));
      return destination;
    } catch (error) {
      const taken = (error as NodeJS.ErrnoException).code === 'EEXIST';
      if (!taken)
        throw unusable(error, (reason) =>
          exportPathError(options.requestedPath ?? '(default)', reason, error, options.scope),
        );
      if (options.requestedPath?.trim() || attempt >= MAX_DEFAULT_ATTEMPTS)
        throw exportPathError(
          options.requestedPath ?? destination.relativePath,
          'it names an existing file, and exports only create new files',
          error,
          options.scope,
        );
    }
  }
}

/**
 * Testing hook of {@link writeNewFile}: called with `mid_export` once the temporary file
 * holds the content, before it is synced and linked to the target. Crash tests kill the
 * process there (test/durability/export-crash.test.ts).
 */
export type ExportFaultPoint = (point: 'mid_export') => void;

/**
 * Writes a new file, never replacing one: the content goes to a temporary file opened
 * exclusively (`wx`, 0o600: readable by its owner only) in the same directory and synced,
 * then is linked to the target, which fails with `EEXIST` if the target exists (where links
 * are not supported, an exclusive copy does the same, with the same mode). Where links work a
 * crash leaves at most the temporary file, never a partial target; during the copy that
 * stands in for a link it can leave a partial one. The temporary file is removed whenever the
 * process lives to do it. `faultPoint` is a testing hook ({@link ExportFaultPoint}).
 */
export async function writeNewFile(
  absolutePath: string,
  content: string | Uint8Array,
  faultPoint?: ExportFaultPoint,
): Promise<void> {
  const directory = path.dirname(absolutePath);
  const temporary = path.join(directory, `${path.basename(absolutePath)}.tmp-${randomBytes(6).toString('hex')}`);
  let handle: FileHandle | undefined;
  try {
    handle = await fs.open(temporary, 'wx', PRIVATE_FILE_MODE);
    await handle.writeFile(content);
    faultPoint?.('mid_export');
    await handle.sync();
    await handle.close();
    handle = undefined;
    try {
      await fs.link(temporary, absolutePath);
    } catch (error) {
      if (!LINK_UNSUPPORTED.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
      await fs.copyFile(temporary, absolutePath, fsConstants.COPYFILE_EXCL);
    }
  } finally {
    await handle?.close().catch(() => undefined);
    await fs.rm(temporary, { force: true }).catch(() => undefined);
  }
  await syncDirectory(directory);
}

/** How old a temporary file must be before an export removes it: no export writes for that long. */
export const STALE_TEMPORARY_MS: number = 60 * 60 * 1000;
const TEMPORARY_NAME = /\.tmp-[0-9a-f]{12}$/;

/**
 * Removes what exports killed mid-write left in `directory`: regular files named as
 * {@link writeNewFile} names its temporary files, untouched for {@link STALE_TEMPORARY_MS}
 * (a live export's file is younger). Best effort: a file it cannot read or remove stays.
 */
async function removeStaleTemporaries(directory: string): Promise<void> {
  const names = await fs.readdir(directory).catch(() => [] as string[]);
  const cutoff = Date.now() - STALE_TEMPORARY_MS;
  for (const name of names) {
    if (!TEMPORARY_NAME.test(name)) continue;
    const file = path.join(directory, name);
    const stats = await fs.lstat(file).catch(() => undefined);
    if (stats?.isFile() && stats.mtimeMs < cutoff) await fs.rm(file, { force: true }).catch(() => undefined);
  }
}

const MAX_DEFAULT_ATTEMPTS = 100;
const LINK_UNSUPPORTED: ReadonlySet<string> = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV']);

/**
 * Writes a file atomically: a temporary file (`wx`, 0o600: readable by its owner only, which
 * the target then is too) in the same directory, fsync, rename over the target, then a
 * best-effort fsync of the directory. The temporary file is removed if anything fails.
 */
export async function writeFileAtomic(absolutePath: string, content: string | Uint8Array): Promise<void> {
  const directory = path.dirname(absolutePath);
  const temporary = path.join(directory, `${path.basename(absolutePath)}.tmp-${randomBytes(6).toString('hex')}`);
  let handle: FileHandle | undefined;
  try {
    handle = await fs.open(temporary, 'wx', PRIVATE_FILE_MODE);
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

function defaultSegments(
  options: ResolveExportPathOptions,
  refuse: (reason: string) => HarnessMemoryError,
  attempt: number,
): string[] {
  const { tenantId, conversationId, agentId } = options.scope;
  for (const part of [tenantId, conversationId, agentId]) {
    if (part === '' || part === '.' || part === '..' || /[/\\\0]/.test(part))
      throw refuse(`scope id ${JSON.stringify(part)} cannot be a path part`);
  }
  const extension = options.format === 'markdown' ? 'md' : 'json';
  const stamp = (options.now ?? (() => new Date()))().toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-');
  return [
    ...EXPORT_DIRECTORY.split('/'),
    tenantId,
    conversationId,
    agentId,
    `memory-${stamp}${attempt > 1 ? `-${attempt}` : ''}.${extension}`,
  ];
}

function requestedSegments(
  requested: string,
  workspace: string,
  workspaceReal: string,
  scope: ResolveExportPathOptions['scope'],
  refuse: (reason: string) => HarnessMemoryError,
): string[] {
  if (requested.length > MAX_EXPORT_PATH_LENGTH)
    throw refuse(`the path is longer than ${MAX_EXPORT_PATH_LENGTH} characters`);
  if (requested.includes('\0')) throw refuse('the path contains a NUL byte');
  const names = requested.split(/[\\/]/);
  if (names.some((name) => Buffer.byteLength(name) > MAX_NAME_BYTES))
    throw refuse(`a file or folder name in it is longer than ${MAX_NAME_BYTES} bytes`);
  // The file is written as `<name>.tmp-<12 hex>` first, which must fit as well.
  if (Buffer.byteLength(names.at(-1) ?? '') > MAX_FILE_NAME_BYTES)
    throw refuse(`its file name is longer than ${MAX_FILE_NAME_BYTES} bytes`);
  const resolved = path.resolve(workspace, requested);
  // An absolute path may name the workspace by its given path or by its real path.
  const inside = [relative(workspace, resolved), relative(workspaceReal, resolved)].find(
    (candidate) => candidate !== undefined,
  );
  if (inside === undefined)
    throw refuse(`it resolves outside the workspace; exports are written only under ${EXPORT_DIRECTORY}/`);
  const segments = inside === '' ? [] : inside.split('/');
  // The calling scope's own folder: another tenant's or conversation's is neither written nor
  // probed (whether a file exists there is never looked at).
  const own = [...EXPORT_DIRECTORY.split('/'), scope.tenantId, scope.conversationId, scope.agentId];
  if (segments.length <= own.length || own.some((name, index) => segments[index] !== name)) {
    throw refuse(`exports are written only under this scope's folder, ${own.join('/')}/`);
  }
  return segments;
}

/** Refuses database files, their journals and configuration files, by name and by path. */
async function refuseProtected(
  absolutePath: string,
  protectedPaths: readonly string[],
  refuse: (reason: string) => HarnessMemoryError,
): Promise<void> {
  const name = path.basename(absolutePath);
  if (PROTECTED_NAME.test(name))
    throw refuse(`${name} is the name of a database, journal or configuration file, which an export never writes`);
  for (const given of protectedPaths) {
    if (given.trim() === '' || given === ':memory:') continue;
    const resolved = path.resolve(given);
    // The protected file may be reached through a symlinked folder; compare real folders too.
    const directory = await fs.realpath(path.dirname(resolved)).catch(() => path.dirname(resolved));
    if (absolutePath === resolved || absolutePath === path.join(directory, path.basename(resolved))) {
      throw refuse('it is a file the harness keeps its state or configuration in');
    }
  }
}

/** The forward-slash path of `target` below `base`, `''` for `base` itself, or undefined when outside. */
function relative(base: string, target: string): string | undefined {
  const result = path.relative(base, target);
  if (result === '') return '';
  if (result === '..' || result.startsWith(`..${path.sep}`) || path.isAbsolute(result)) return undefined;
  return result.split(path.sep).join('/');
}

/** The entry at `target`, undefined when there is none; a path the file system refuses is refused. */
async function lstatOrUndefined(
  target: string,
  refuse: (reason: string) => HarnessMemoryError,
): Promise<Stats | undefined> {
  try {
    return await fs.lstat(target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw unusable(error, refuse);
  }
}

// File-system answers about a path a caller gave: said as a refusal, without the server's paths.
const UNUSABLE_PATH: Readonly<Record<string, string>> = {
  ENAMETOOLONG: 'the path is too long for the file system',
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is used up',
  EROFS: 'the file system is read-only',
  ENOTDIR: 'a part of the path is a file, not a directory',
  EACCES: 'the path cannot be reached (permission denied)',
  EPERM: 'the path cannot be reached (operation not permitted)',
  ELOOP: 'the path has too many symlinks',
};

/** A file-system error as an `EXPORT_INVALID` refusal without the server's paths; anything else as it is. */
function unusable(error: unknown, refuse: (reason: string) => HarnessMemoryError): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  const reason = code === undefined ? undefined : UNUSABLE_PATH[code];
  return reason === undefined ? error : refuse(reason);
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

/** `scope`, when known, names the folder the hint points to: the scope's own. */
function exportPathError(
  requested: string,
  reason: string,
  cause?: unknown,
  scope?: ResolveExportPathOptions['scope'],
): HarnessMemoryError {
  const shown = requested.length > 200 ? `${requested.slice(0, 200)}…` : requested;
  const folder = scope
    ? [EXPORT_DIRECTORY, scope.tenantId, scope.conversationId, scope.agentId].join('/')
    : EXPORT_DIRECTORY;
  return new HarnessMemoryError({
    code: 'EXPORT_INVALID',
    component: 'export',
    message:
      `cannot export to ${JSON.stringify(shown)}: ${reason}. Give a new file name under ` +
      `${folder}/ (relative to the workspace, no symlinks), or no path for the default name.`,
    data: { path: shown },
    cause,
  });
}
