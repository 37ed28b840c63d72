import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HarnessMemoryError } from '../core/errors.js';
import type { Scope } from '../core/scope.js';
import { resolveExportPath, writeFileAtomic } from './export-path.js';

const SCOPE: Scope = { tenantId: 'acme', conversationId: 'c:1', agentId: 'bot' };
const NOW = (): Date => new Date('2025-01-02T03:04:05.678Z');
const temporaryDirectories: string[] = [];

function temporaryDirectory(): string {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-export-'));
  temporaryDirectories.push(directory);
  return directory;
}

function resolveIn(workspace: string, requestedPath?: string): ReturnType<typeof resolveExportPath> {
  return resolveExportPath({ workspace, requestedPath, scope: SCOPE, format: 'json', now: NOW });
}

async function refusal(promise: Promise<unknown>): Promise<HarnessMemoryError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!HarnessMemoryError.isInstance(error)) throw new Error(`expected a HarnessMemoryError, got ${String(error)}`);
  expect(error.code).toBe('EXPORT_INVALID');
  return error;
}

afterEach(() => {
  for (const directory of temporaryDirectories.splice(0)) fs.rmSync(directory, { recursive: true, force: true });
});

describe('export path: default destination', () => {
  it('builds the scope path with a UTC timestamp and creates its directories', async () => {
    const workspace = temporaryDirectory();
    const resolved = await resolveIn(workspace);
    expect(resolved.relativePath).toBe('.harness/observational-memory/acme/c:1/bot/memory-20250102-030405.json');
    expect(resolved.absolutePath).toBe(path.join(fs.realpathSync(workspace), ...resolved.relativePath.split('/')));
    expect(fs.statSync(path.dirname(resolved.absolutePath)).isDirectory()).toBe(true);
  });

  it('uses the .md extension for markdown', async () => {
    const workspace = temporaryDirectory();
    const resolved = await resolveExportPath({ workspace, scope: SCOPE, format: 'markdown', now: NOW });
    expect(resolved.relativePath).toMatch(/\/memory-20250102-030405\.md$/);
  });

  it('refuses a scope id that is not a single path part', async () => {
    const workspace = temporaryDirectory();
    for (const tenantId of ['..', '.', 'a/b', '']) {
      await refusal(resolveExportPath({ workspace, scope: { ...SCOPE, tenantId }, format: 'json', now: NOW }));
    }
    expect(fs.readdirSync(workspace)).toEqual([]);
  });
});

describe('export path: requested destination', () => {
  it('accepts a relative path inside the workspace', async () => {
    const workspace = temporaryDirectory();
    const resolved = await resolveIn(workspace, 'exports/deep/memory.json');
    expect(resolved.relativePath).toBe('exports/deep/memory.json');
    expect(fs.statSync(path.join(workspace, 'exports', 'deep')).isDirectory()).toBe(true);
  });

  it('accepts a .. segment that stays inside', async () => {
    const workspace = temporaryDirectory();
    expect((await resolveIn(workspace, 'a/../b.json')).relativePath).toBe('b.json');
  });

  it('accepts an absolute path inside the workspace', async () => {
    const workspace = temporaryDirectory();
    expect((await resolveIn(workspace, path.join(workspace, 'out', 'm.json'))).relativePath).toBe('out/m.json');
  });

  it('accepts a workspace given as a symlink, by either of its paths', async () => {
    const real = temporaryDirectory();
    const link = path.join(temporaryDirectory(), 'workspace-link');
    fs.symlinkSync(real, link);
    const viaLink = await resolveIn(link, path.join(link, 'm.json'));
    expect(viaLink).toEqual({ absolutePath: path.join(fs.realpathSync(real), 'm.json'), relativePath: 'm.json' });
    expect((await resolveIn(link, path.join(fs.realpathSync(real), 'n.json'))).relativePath).toBe('n.json');
    expect((await resolveIn(link)).relativePath).toMatch(/^\.harness\//);
  });

  it('refuses empty, over-long and NUL-containing paths', async () => {
    const workspace = temporaryDirectory();
    await refusal(resolveIn(workspace, ''));
    await refusal(resolveIn(workspace, '   '));
    await refusal(resolveIn(workspace, `${'a/'.repeat(512)}x`));
    await refusal(resolveIn(workspace, 'a\0b.json'));
  });

  it('refuses paths outside the workspace and names the path', async () => {
    const workspace = temporaryDirectory();
    const error = await refusal(resolveIn(workspace, '/etc/passwd'));
    expect(error.message).toContain('"/etc/passwd"');
    expect(error.message).toContain('outside the workspace');
    await refusal(resolveIn(workspace, '../x'));
    await refusal(resolveIn(workspace, 'a/../../x'));
    await refusal(resolveIn(workspace, path.join(temporaryDirectory(), 'x.json')));
    await refusal(resolveIn(workspace, '.'));
    expect(fs.readdirSync(workspace)).toEqual([]);
  });

  it('refuses a symlinked directory that leads outside', async () => {
    const workspace = temporaryDirectory();
    const outside = temporaryDirectory();
    fs.symlinkSync(outside, path.join(workspace, 'link'));
    const error = await refusal(resolveIn(workspace, 'link/sub/m.json'));
    expect(error.message).toContain('link is a symlink');
    expect(fs.readdirSync(outside)).toEqual([]);
  });

  it('refuses a symlinked directory even when it points inside', async () => {
    const workspace = temporaryDirectory();
    fs.mkdirSync(path.join(workspace, 'real'));
    fs.symlinkSync(path.join(workspace, 'real'), path.join(workspace, 'alias'));
    await refusal(resolveIn(workspace, 'alias/m.json'));
  });

  it('refuses an existing target that is a symlink or a directory', async () => {
    const workspace = temporaryDirectory();
    const outsideFile = path.join(temporaryDirectory(), 'secret.txt');
    fs.writeFileSync(outsideFile, 'keep');
    fs.symlinkSync(outsideFile, path.join(workspace, 'm.json'));
    fs.mkdirSync(path.join(workspace, 'dir.json'));
    expect((await refusal(resolveIn(workspace, 'm.json'))).message).toContain('the target is a symlink');
    await refusal(resolveIn(workspace, 'dir.json'));
    expect(fs.readFileSync(outsideFile, 'utf8')).toBe('keep');
  });

  it('refuses a path through an existing file', async () => {
    const workspace = temporaryDirectory();
    fs.writeFileSync(path.join(workspace, 'file'), '');
    await refusal(resolveIn(workspace, 'file/m.json'));
  });

  it('refuses a workspace that does not exist', async () => {
    await refusal(resolveIn(path.join(temporaryDirectory(), 'missing'), 'm.json'));
  });
});

describe('export path: atomic write', () => {
  it('writes and replaces the file without leaving temporary files', async () => {
    const directory = temporaryDirectory();
    const target = path.join(directory, 'm.json');
    await writeFileAtomic(target, 'first');
    await writeFileAtomic(target, 'second');
    expect(fs.readFileSync(target, 'utf8')).toBe('second');
    expect(fs.readdirSync(directory)).toEqual(['m.json']);
  });

  it('replaces a symlink planted at the target instead of following it', async () => {
    const directory = temporaryDirectory();
    const outsideFile = path.join(temporaryDirectory(), 'secret.txt');
    fs.writeFileSync(outsideFile, 'keep');
    fs.symlinkSync(outsideFile, path.join(directory, 'm.json'));
    await writeFileAtomic(path.join(directory, 'm.json'), 'new');
    expect(fs.lstatSync(path.join(directory, 'm.json')).isSymbolicLink()).toBe(false);
    expect(fs.readFileSync(outsideFile, 'utf8')).toBe('keep');
  });

  it('removes the temporary file when the rename fails', async () => {
    const directory = temporaryDirectory();
    fs.mkdirSync(path.join(directory, 'taken'));
    fs.writeFileSync(path.join(directory, 'taken', 'child'), '');
    await expect(writeFileAtomic(path.join(directory, 'taken'), 'x')).rejects.toThrow();
    expect(fs.readdirSync(directory)).toEqual(['taken']);
  });
});
