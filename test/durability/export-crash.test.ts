/**
 * Crash during an export (the reliability catalogue's A4): an export is written to a
 * temporary file that is linked to its `memory-*` name only once it is whole and synced, so
 * a SIGKILL at any moment leaves whole exports and temporary files, never a partial export.
 * Killed at the writer's `mid_export` fault point, and at random moments of a run of exports
 * (about 1 MB each).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { seededRandom } from '../support/seeded-random.js';
import { jsonLine, runChild, startChild } from './durability-support.js';

const OBSERVATIONS = 128;
const SCOPE_FOLDER = '.harness/observational-memory/tenant-a/conv-export/agent-x';
const TEMPORARY = /^memory-[\w-]+\.json\.tmp-[0-9a-f]{12}$/;
const EXPORT = /^memory-[\w-]+\.json$/;
/** Kills at random moments: each costs a child's start (about 1 s) and its run. */
const RANDOM_KILLS = 5;
const SEED = 4242;
/** A kill comes at most this long after the child starts exporting (an export of 1 MB takes about 50 ms). */
const MAX_KILL_DELAY_MS = 300;

describe('durability: SIGKILL during an export', () => {
  let directory: string;
  let env: Record<string, string>;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'harness-memory-export-crash-'));
    mkdirSync(join(directory, 'workspace'));
    env = { DB_PATH: join(directory, 'state.db'), WORKSPACE: join(directory, 'workspace') };
  });
  afterEach(() => {
    rmSync(directory, { recursive: true, force: true });
  });

  /** The scope's export folder: exports (by name) and temporary files, nothing else (no folder: a kill came first). */
  const exportFolder = (): { exports: string[]; temporaries: string[] } => {
    const folder = join(env['WORKSPACE']!, SCOPE_FOLDER);
    const names = existsSync(folder) ? readdirSync(folder).sort() : [];
    const others = names.filter((name) => !EXPORT.test(name) && !TEMPORARY.test(name));
    expect(others, 'files in the export folder that are neither exports nor temporary files').toEqual([]);
    return {
      exports: names.filter((name) => EXPORT.test(name)),
      temporaries: names.filter((name) => TEMPORARY.test(name)),
    };
  };
  const sha256Of = (name: string): string =>
    createHash('sha256')
      .update(readFileSync(join(env['WORKSPACE']!, SCOPE_FOLDER, name)))
      .digest('hex');
  /** An export the clean child writes: whole, and its observations all there. */
  const cleanExport = async (): Promise<{ path: string; sha256: string; bytes: number }> => {
    const clean = await runChild('./export-crash-child.ts', { ...env, MODE: 'clean' });
    expect(clean.code, clean.stderr).toBe(0);
    const written = jsonLine<{ path: string; sha256: string; bytes: number }>(clean.stdout);
    const text = readFileSync(join(env['WORKSPACE']!, written.path), 'utf8');
    expect(Buffer.byteLength(text)).toBe(written.bytes);
    expect((JSON.parse(text) as { observations: unknown[] }).observations).toHaveLength(OBSERVATIONS);
    return written;
  };

  it('leaves no memory-* file, only its temporary file, when killed mid-export; the next export is whole', async () => {
    const crashed = await runChild('./export-crash-child.ts', { ...env, MODE: 'fault' });
    expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
    expect(crashed.stdout).not.toContain('done');
    const left = exportFolder();
    expect(left.exports).toEqual([]);
    expect(left.temporaries).toHaveLength(1);

    const written = await cleanExport();
    expect(exportFolder()).toEqual({ exports: [written.path.split('/').at(-1)], temporaries: left.temporaries });
  }, 60_000);

  it(`leaves only whole exports and temporary files when killed at ${RANDOM_KILLS} random moments`, async () => {
    const random = seededRandom(SEED);
    for (let iteration = 1; iteration <= RANDOM_KILLS; iteration++) {
      const started = startChild('./export-crash-child.ts', { ...env, MODE: 'loop', ITERATION: String(iteration) });
      await started.line('exporting');
      const delay = random.below(MAX_KILL_DELAY_MS);
      const timer = setTimeout(() => started.child.kill('SIGKILL'), delay);
      const ended = await started.ended;
      clearTimeout(timer);
      expect(ended.signal, `seed ${SEED}, iteration ${iteration}, killed after ${delay} ms: ${ended.stderr}`).toBe(
        'SIGKILL',
      );
      exportFolder();
    }
    // Every export any killed child left is the whole export, byte for byte.
    const written = await cleanExport();
    const { exports } = exportFolder();
    for (const name of exports) expect(sha256Of(name), name).toBe(written.sha256);
  }, 120_000);
});
