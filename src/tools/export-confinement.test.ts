/**
 * A model (or a prompt injection through it) asks the `observational_memory` tool to export
 * over the workspace's own files. Every hostile path is refused with `EXPORT_INVALID` naming
 * the reason, no file changes, and the database still opens and answers.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { scriptedObserver } from '../../test/support/scripted-models.js';
import { HarnessMemoryError } from '../core/errors.js';
import { createObservationalMemory } from '../memory/observational-memory.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import { createObservationalMemoryTool } from './observational-memory-tool.js';

const IN = '.harness/observational-memory';
// The scope's own folder (scope acme/conv/agent below).
const OWN = `${IN}/acme/conv/agent`;
const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) fs.rmSync(directory, { recursive: true, force: true });
});

/** Every file below `root` (symlinks as their target path), with a hash of its bytes. */
function snapshot(root: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const entry of fs.readdirSync(root, { recursive: true, withFileTypes: true }) as fs.Dirent[]) {
    const full = path.join(entry.parentPath, entry.name);
    const key = path.relative(root, full);
    if (entry.isSymbolicLink()) files[key] = `-> ${fs.readlinkSync(full)}`;
    else if (entry.isFile()) files[key] = createHash('sha256').update(fs.readFileSync(full)).digest('hex');
  }
  return files;
}

describe('export confinement: hostile paths', () => {
  it('refuses every hostile path, changes no file, and the database still opens and answers', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-confine-'));
    directories.push(root);
    const workspace = path.join(root, 'workspace');
    const outside = path.join(root, 'outside');
    fs.mkdirSync(path.join(workspace, OWN), { recursive: true });
    fs.mkdirSync(outside);
    const dbPath = path.join(workspace, '.harness', 'state.db');
    const configPath = path.join(workspace, '.harness', 'config.toml');
    fs.writeFileSync(path.join(workspace, 'package.json'), '{"name":"victim"}');
    fs.writeFileSync(configPath, '[memory]\ndefault_enabled = true\n');
    fs.writeFileSync(path.join(workspace, OWN, 'existing.json'), '{"kept":true}');
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'keep');
    fs.symlinkSync(path.join(workspace, '.harness'), path.join(workspace, OWN, 'up'));
    fs.symlinkSync(dbPath, path.join(workspace, OWN, 'alias.json'));
    fs.symlinkSync(outside, path.join(workspace, OWN, 'out'));

    const store = createSqliteStore({ path: dbPath });
    const scope = { tenantId: 'acme', conversationId: 'conv', agentId: 'agent' };
    const memory = createObservationalMemory({
      store,
      observer: scriptedObserver('IMPORTANCE:0.9\nUser prefers tabs'),
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    await memory.observe({ scope, runId: 'run-1', messages: [{ id: 'm1', role: 'user', content: 'I prefer tabs' }] });
    const tool = createObservationalMemoryTool({ memory, protectedPaths: [dbPath, configPath] });
    const context = { ...scope, runId: 'run-1', workspace };
    const before = snapshot(root);

    const hostile: Array<[string, RegExp]> = [
      ['.harness/state.db', /only under this scope.s folder, \.harness\/observational-memory\/acme\/conv\/agent\//],
      [dbPath, /only under this scope.s folder, \.harness\/observational-memory\/acme\/conv\/agent\//],
      ['.harness/state.db-wal', /only under this scope.s folder, \.harness\/observational-memory\/acme\/conv\/agent\//],
      ['.harness/state.db-shm', /only under this scope.s folder, \.harness\/observational-memory\/acme\/conv\/agent\//],
      ['.harness/config.toml', /only under this scope.s folder, \.harness\/observational-memory\/acme\/conv\/agent\//],
      ['package.json', /only under this scope.s folder, \.harness\/observational-memory\/acme\/conv\/agent\//],
      [`${IN}/../state.db`, /only under this scope.s folder, \.harness\/observational-memory\/acme\/conv\/agent\//],
      [
        `${IN}/../../package.json`,
        /only under this scope.s folder, \.harness\/observational-memory\/acme\/conv\/agent\//,
      ],
      ['../outside/x.json', /outside the workspace/],
      [path.join(outside, 'secret.txt'), /outside the workspace/],
      ['/etc/passwd', /outside the workspace/],
      [`${OWN}/existing.json`, /names an existing file/],
      [`${OWN}/alias.json`, /the target is a symlink/],
      [`${OWN}/up/state.db-wal`, /name of a database, journal or configuration file/],
      [`${OWN}/up/new.json`, /up is a symlink/],
      [`${OWN}/out/secret.txt`, /out is a symlink/],
      [`${OWN}/evil.db`, /name of a database, journal or configuration file/],
      [`${OWN}/evil.sqlite`, /name of a database, journal or configuration file/],
      [`${OWN}/x-wal`, /name of a database, journal or configuration file/],
      [`${OWN}/x-shm`, /name of a database, journal or configuration file/],
      [`${OWN}/config.toml`, /name of a database, journal or configuration file/],
      [`${OWN}/a\0b.json`, /NUL byte/],
      [`${OWN}/${'n'.repeat(300)}.json`, /a file or folder name in it is longer than 255 bytes/],
      [`${OWN}/${'é'.repeat(128)}/x.json`, /longer than 255 bytes/],
      // Fits 255 bytes, but not with the temporary name's `.tmp-<12 hex>` after it.
      [`${OWN}/${'a'.repeat(245)}.json`, /its file name is longer than 238 bytes/],
      [IN, /only under this scope.s folder, \.harness\/observational-memory\/acme\/conv\/agent\//],
      // Another tenant's, conversation's or agent's folder, and the names above this scope's.
      [
        `${IN}/other/conv/agent/x.json`,
        /only under this scope.s folder, \.harness\/observational-memory\/acme\/conv\/agent\//,
      ],
      [
        `${IN}/acme/other/agent/x.json`,
        /only under this scope.s folder, \.harness\/observational-memory\/acme\/conv\/agent\//,
      ],
      [
        `${IN}/acme/conv/other/x.json`,
        /only under this scope.s folder, \.harness\/observational-memory\/acme\/conv\/agent\//,
      ],
      [`${IN}/other`, /only under this scope.s folder, \.harness\/observational-memory\/acme\/conv\/agent\//],
      [
        `${OWN}/../../other/agent/x.json`,
        /only under this scope.s folder, \.harness\/observational-memory\/acme\/conv\/agent\//,
      ],
    ];
    for (const [requested, reason] of hostile) {
      const error = await tool.execute({ action: 'export', path: requested }, context).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(HarnessMemoryError.isInstance(error) && error.code, requested).toBe('EXPORT_INVALID');
      expect((error as HarnessMemoryError).message, requested).toMatch(reason);
      if (!requested.includes(workspace))
        expect((error as HarnessMemoryError).message, requested).not.toContain(workspace);
    }
    // Nothing was written anywhere, and what was there is as it was. (The database's own
    // files change as SQLite checkpoints; they are checked by opening it below.)
    const withoutDatabase = (files: Record<string, string>) =>
      Object.fromEntries(Object.entries(files).filter(([key]) => !key.includes('state.db')));
    expect(withoutDatabase(snapshot(root))).toEqual(withoutDatabase(before));
    await store.dispose();

    const reopened = createSqliteStore({ path: dbPath });
    try {
      const again = createObservationalMemory({ store: reopened, defaultEnabled: true });
      expect((await again.status(scope)).observationCount).toBe(1);
      // A blank path is no path: the default name, as the reference reads it.
      const exported = (await createObservationalMemoryTool({ memory: again }).execute(
        { action: 'export', path: ' ' },
        context,
      )) as { export: { path: string } };
      expect(exported.export.path).toMatch(
        /^\.harness\/observational-memory\/acme\/conv\/agent\/memory-\d{8}-\d{6}\.json$/,
      );
    } finally {
      await reopened.dispose();
    }
    const check = new Database(dbPath, { readonly: true });
    expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
    check.close();
  });
});
