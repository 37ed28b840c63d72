import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HarnessMemoryError } from '../core/errors.js';
import type { Scope } from '../core/scope.js';
import { resolveExportPath, STALE_TEMPORARY_MS, writeExport, writeFileAtomic, writeNewFile } from './export-path.js';

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

const IN = '.harness/observational-memory';
// The scope's own folder: the only place a requested path may name.
const OWN = `${IN}/acme/c:1/bot`;

describe('export path: requested destination', () => {
  it('accepts a new file under .harness/observational-memory, relative or absolute', async () => {
    const workspace = temporaryDirectory();
    const resolved = await resolveIn(workspace, `${OWN}/exports/deep/memory.json`);
    expect(resolved.relativePath).toBe(`${OWN}/exports/deep/memory.json`);
    expect(fs.statSync(path.join(workspace, OWN, 'exports', 'deep')).isDirectory()).toBe(true);
    expect((await resolveIn(workspace, path.join(workspace, OWN, 'abs.json'))).relativePath).toBe(`${OWN}/abs.json`);
  });

  it('accepts a .. segment that stays inside the folder', async () => {
    const workspace = temporaryDirectory();
    expect((await resolveIn(workspace, `${OWN}/a/../b.json`)).relativePath).toBe(`${OWN}/b.json`);
  });

  it('accepts a workspace given as a symlink, by either of its paths', async () => {
    const real = temporaryDirectory();
    const link = path.join(temporaryDirectory(), 'workspace-link');
    fs.symlinkSync(real, link);
    const viaLink = await resolveIn(link, path.join(link, OWN, 'm.json'));
    expect(viaLink).toEqual({
      absolutePath: path.join(fs.realpathSync(real), OWN, 'm.json'),
      relativePath: `${OWN}/m.json`,
    });
    expect((await resolveIn(link, path.join(fs.realpathSync(real), OWN, 'n.json'))).relativePath).toBe(`${OWN}/n.json`);
    expect((await resolveIn(link)).relativePath).toMatch(/^\.harness\/observational-memory\//);
  });

  it('takes a blank path for the default, and refuses over-long and NUL-containing paths', async () => {
    const workspace = temporaryDirectory();
    for (const blank of ['', '   '])
      expect((await resolveIn(workspace, blank)).relativePath).toMatch(/\/memory-\d{8}-\d{6}\.json$/);
    await refusal(resolveIn(workspace, `${OWN}/${'a/'.repeat(512)}x`));
    await refusal(resolveIn(workspace, `${OWN}/a\0b.json`));
  });

  it('refuses paths outside the workspace and names the path', async () => {
    const workspace = temporaryDirectory();
    const error = await refusal(resolveIn(workspace, '/etc/passwd'));
    expect(error.message).toContain('"/etc/passwd"');
    expect(error.message).toContain('outside the workspace');
    await refusal(resolveIn(workspace, '../x'));
    await refusal(resolveIn(workspace, `${OWN}/../../../x`));
    await refusal(resolveIn(workspace, path.join(temporaryDirectory(), 'x.json')));
    expect(fs.readdirSync(workspace)).toEqual([]);
  });

  it('refuses paths inside the workspace but outside .harness/observational-memory', async () => {
    const workspace = temporaryDirectory();
    for (const requested of [
      '.',
      'package.json',
      'notes/m.json',
      '.harness/state.json',
      IN,
      `${OWN}/..`,
      `${OWN}/../x.json`,
      '.harness/observational-memoryx/m.json',
      // Other scopes' folders, and names above the scope's own.
      `${IN}/m.json`,
      `${IN}/acme`,
      `${IN}/acme/c:1/m.json`,
      `${IN}/other/c:1/bot/m.json`,
      `${IN}/acme/c:2/bot/m.json`,
      `${IN}/acme/c:1/bot2/m.json`,
      OWN,
      `${OWN}/../../c:2/bot/m.json`,
    ]) {
      const error = await refusal(resolveIn(workspace, requested));
      // The reason and the hint name the same folder: the scope's own.
      expect(error.message, requested).toContain(
        `exports are written only under this scope's folder, ${OWN}/. Give a new file name under ${OWN}/ `,
      );
    }
    expect(fs.readdirSync(workspace)).toEqual([]);
  });

  it("answers alike whether or not a file exists in another scope's folder", async () => {
    const workspace = temporaryDirectory();
    fs.mkdirSync(path.join(workspace, IN, 'other', 'c', 'bot'), { recursive: true });
    fs.writeFileSync(path.join(workspace, IN, 'other', 'c', 'bot', 'taken.json'), 'keep');
    const existing = await refusal(resolveIn(workspace, `${IN}/other/c/bot/taken.json`));
    const missing = await refusal(resolveIn(workspace, `${IN}/other/c/bot/free.json`));
    expect(existing.message.replace('taken', 'free')).toBe(missing.message);
    expect(fs.readFileSync(path.join(workspace, IN, 'other', 'c', 'bot', 'taken.json'), 'utf8')).toBe('keep');
  });

  it('refuses an existing file, and leaves it as it was', async () => {
    const workspace = temporaryDirectory();
    fs.mkdirSync(path.join(workspace, OWN), { recursive: true });
    fs.writeFileSync(path.join(workspace, OWN, 'taken.json'), 'keep');
    const error = await refusal(resolveIn(workspace, `${OWN}/taken.json`));
    expect(error.message).toContain('it names an existing file, and exports only create new files');
    expect(fs.readFileSync(path.join(workspace, OWN, 'taken.json'), 'utf8')).toBe('keep');
  });

  it(
    'refuses database, journal and configuration file names, and the protected paths whatever their ' + 'names',
    async () => {
      const workspace = temporaryDirectory();
      for (const name of [
        'state.db',
        'state.db-wal',
        'state.db-shm',
        'x.sqlite',
        'x.SQLITE3',
        'x-journal',
        'config.toml',
      ]) {
        const error = await refusal(resolveIn(workspace, `${OWN}/${name}`));
        expect(error.message, name).toContain('the name of a database, journal or configuration file');
      }
      const store = path.join(workspace, OWN, 'store.data');
      const options = {
        workspace,
        scope: SCOPE,
        format: 'json' as const,
        now: NOW,
        protectedPaths: [store, path.join(workspace, 'settings.txt')],
      };
      expect((await refusal(resolveExportPath({ ...options, requestedPath: `${OWN}/store.data` }))).message).toContain(
        'a file the harness keeps its state or configuration in',
      );
      expect(
        (await refusal(resolveExportPath({ ...options, requestedPath: path.join(workspace, 'settings.txt') }))).message,
      ).toContain('exports are written only under');
      expect((await resolveExportPath({ ...options, requestedPath: `${OWN}/store.json` })).relativePath).toBe(
        `${OWN}/store.json`,
      );
    },
  );

  it('refuses a symlinked directory on the way: the export folder, .harness, or one below', async () => {
    for (const planted of ['.harness', IN, `${OWN}/link`]) {
      const workspace = temporaryDirectory();
      const outside = temporaryDirectory();
      fs.mkdirSync(path.dirname(path.join(workspace, planted)), { recursive: true });
      fs.symlinkSync(outside, path.join(workspace, planted));
      const error = await refusal(resolveIn(workspace, `${OWN}/link/sub/m.json`));
      expect(error.message, planted).toContain(`${planted} is a symlink`);
      expect(fs.readdirSync(outside)).toEqual([]);
    }
  });

  it('refuses an existing target that is a symlink or a directory', async () => {
    const workspace = temporaryDirectory();
    const outsideFile = path.join(temporaryDirectory(), 'secret.txt');
    fs.writeFileSync(outsideFile, 'keep');
    fs.mkdirSync(path.join(workspace, OWN), { recursive: true });
    fs.symlinkSync(outsideFile, path.join(workspace, OWN, 'm.json'));
    fs.mkdirSync(path.join(workspace, OWN, 'dir.json'));
    expect((await refusal(resolveIn(workspace, `${OWN}/m.json`))).message).toContain('the target is a symlink');
    await refusal(resolveIn(workspace, `${OWN}/dir.json`));
    expect(fs.readFileSync(outsideFile, 'utf8')).toBe('keep');
  });

  it('refuses a path through an existing file', async () => {
    const workspace = temporaryDirectory();
    fs.mkdirSync(path.join(workspace, OWN), { recursive: true });
    fs.writeFileSync(path.join(workspace, OWN, 'file'), '');
    await refusal(resolveIn(workspace, `${OWN}/file/m.json`));
  });

  it('refuses a workspace that does not exist', async () => {
    await refusal(resolveIn(path.join(temporaryDirectory(), 'missing'), `${OWN}/m.json`));
  });
});

describe('export path: new files only', () => {
  it('writes a new file and never replaces one, leaving no temporary file', async () => {
    const directory = temporaryDirectory();
    const target = path.join(directory, 'm.json');
    await writeNewFile(target, 'first');
    await expect(writeNewFile(target, 'second')).rejects.toMatchObject({ code: 'EEXIST' });
    expect(fs.readFileSync(target, 'utf8')).toBe('first');
    expect(fs.readdirSync(directory)).toEqual(['m.json']);
  });

  it('never follows a symlink planted at the target', async () => {
    const directory = temporaryDirectory();
    const outsideFile = path.join(temporaryDirectory(), 'secret.txt');
    fs.writeFileSync(outsideFile, 'keep');
    fs.symlinkSync(outsideFile, path.join(directory, 'm.json'));
    await expect(writeNewFile(path.join(directory, 'm.json'), 'new')).rejects.toMatchObject({ code: 'EEXIST' });
    expect(fs.readFileSync(outsideFile, 'utf8')).toBe('keep');
    expect(fs.readdirSync(directory)).toEqual(['m.json']);
  });

  it('moves on to the next default name when one is taken, and refuses a taken requested name', async () => {
    const workspace = temporaryDirectory();
    const options = { workspace, scope: SCOPE, format: 'json' as const, now: NOW };
    const first = await writeExport({ ...options, content: '1' });
    const second = await writeExport({ ...options, content: '2' });
    expect([first.relativePath, second.relativePath]).toEqual([
      '.harness/observational-memory/acme/c:1/bot/memory-20250102-030405.json',
      '.harness/observational-memory/acme/c:1/bot/memory-20250102-030405-2.json',
    ]);
    expect(fs.readFileSync(first.absolutePath, 'utf8')).toBe('1');
    await refusal(writeExport({ ...options, requestedPath: first.relativePath, content: '3' }));
    expect(fs.readFileSync(first.absolutePath, 'utf8')).toBe('1');
  });
});

describe('export path: what killed exports left', () => {
  it("removes another export's temporary files once they are an hour old, and nothing else", async () => {
    const workspace = temporaryDirectory();
    const options = { workspace, scope: SCOPE, format: 'json' as const, now: NOW };
    const folder = path.dirname((await writeExport({ ...options, content: '1' })).absolutePath);
    const aged = (name: string, ageMs: number, content = 'partial'): string => {
      const file = path.join(folder, name);
      fs.writeFileSync(file, content);
      const time = new Date(Date.now() - ageMs);
      fs.utimesSync(file, time, time);
      return name;
    };
    const stale = aged('memory-20250101-000000.json.tmp-0123456789ab', STALE_TEMPORARY_MS + 60_000);
    const live = aged('memory-20250102-030405-9.json.tmp-ba9876543210', 60_000);
    const user = aged('notes.json.tmp-not-ours', STALE_TEMPORARY_MS * 2);
    const outside = path.join(temporaryDirectory(), 'keep.txt');
    fs.writeFileSync(outside, 'keep');
    const link = 'memory-20250101-000001.json.tmp-cafecafecafe';
    fs.symlinkSync(outside, path.join(folder, link));
    const before = fs.readdirSync(folder);
    expect(before).toContain(stale);

    const second = await writeExport({ ...options, content: '2' });
    expect(fs.readdirSync(folder).sort()).toEqual(
      [...before.filter((name) => name !== stale), path.basename(second.absolutePath)].sort(),
    );
    expect([live, user, link].every((name) => fs.readdirSync(folder).includes(name))).toBe(true);
    expect(fs.readFileSync(outside, 'utf8')).toBe('keep');
  });
});

// Memories and transcripts are for the user who runs the harness only.
describe.skipIf(process.platform === 'win32')('export path: permissions (POSIX modes)', () => {
  const modeOf = (target: string): number => fs.statSync(target).mode & 0o777;

  it('writes an export readable by its owner only, in folders it creates for its owner only', async () => {
    const workspace = temporaryDirectory();
    const written = await writeExport({ workspace, scope: SCOPE, format: 'json', now: NOW, content: '{}' });
    expect(modeOf(written.absolutePath)).toBe(0o600);
    for (const folder of ['.harness', '.harness/observational-memory', '.harness/observational-memory/acme/c:1/bot'])
      expect(modeOf(path.join(workspace, folder)), folder).toBe(0o700);
  });

  it('leaves the mode of folders that were there before', async () => {
    const workspace = temporaryDirectory();
    fs.mkdirSync(path.join(workspace, '.harness'), { mode: 0o755 });
    fs.chmodSync(path.join(workspace, '.harness'), 0o755);
    await writeExport({ workspace, scope: SCOPE, format: 'json', now: NOW, content: '{}' });
    expect(modeOf(path.join(workspace, '.harness'))).toBe(0o755);
    expect(modeOf(path.join(workspace, '.harness/observational-memory'))).toBe(0o700);
  });

  it('writes new and atomically replaced files with mode 0600', async () => {
    const directory = temporaryDirectory();
    await writeNewFile(path.join(directory, 'new.json'), 'x');
    expect(modeOf(path.join(directory, 'new.json'))).toBe(0o600);
    fs.writeFileSync(path.join(directory, 'm.json'), 'old', { mode: 0o644 });
    await writeFileAtomic(path.join(directory, 'm.json'), 'new');
    expect(modeOf(path.join(directory, 'm.json'))).toBe(0o600);
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
