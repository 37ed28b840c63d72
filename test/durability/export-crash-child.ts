/**
 * Child process of the export crash test. Run with `node --import tsx`.
 *
 * Opens the SQLite file, fills the scope with `OBSERVATIONS` imported observations of 8 KiB
 * each when it has none (so that an export is about 1 MB), renders its JSON export and writes it
 * under the workspace's `.harness/observational-memory/`, as the `observational_memory`
 * tool's `export` action does (`memory.export`, then `writeExport`).
 *
 * `MODE=fault`: writes the export under its default name and SIGKILLs itself at the writer's
 * `mid_export` fault point. `MODE=loop`: prints `exporting`, then writes the export again
 * and again, as `memory-<ITERATION>-<n>.json`, until it is killed (prints `done` after 1,000).
 * `MODE=clean`: writes it once under its default name and prints `{path, sha256, bytes}` as
 * one JSON line.
 *
 * Environment: `DB_PATH`, `WORKSPACE`, `MODE` (all required), `ITERATION`, `OBSERVATIONS`
 * (default 128).
 * @module
 */
import { createHash } from 'node:crypto';
import { createObservationalMemory } from '../../src/memory/observational-memory.js';
import { createSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import { EXPORT_DIRECTORY, writeExport } from '../../src/tools/export-path.js';
import { sigkillSelf } from './durability-support.js';

const EXPORT_SCOPE = { tenantId: 'tenant-a', conversationId: 'conv-export', agentId: 'agent-x' } as const;

const path = process.env['DB_PATH'];
const workspace = process.env['WORKSPACE'];
const mode = process.env['MODE'];
if (!path || !workspace || (mode !== 'fault' && mode !== 'loop' && mode !== 'clean'))
  throw new Error('DB_PATH, WORKSPACE and MODE (fault, loop or clean) are required');
const observations = Number(process.env['OBSERVATIONS'] ?? '128');

const store = createSqliteStore({ path });
const memory = createObservationalMemory({ store, defaultEnabled: true });
if ((await memory.status(EXPORT_SCOPE)).observationCount === 0) {
  await memory.importObservations(
    EXPORT_SCOPE,
    Array.from({ length: observations }, (_, index) => ({
      content: `imported fact ${index + 1}: ${'lorem ipsum '.repeat(680)}`.slice(0, 8192),
    })),
  );
}
const rendered = await memory.export(EXPORT_SCOPE, 'json');
const write = (requestedPath?: string, faultPoint?: () => void) =>
  writeExport({
    workspace,
    scope: EXPORT_SCOPE,
    format: rendered.format,
    content: rendered.content,
    requestedPath,
    ...(faultPoint ? { faultPoint } : {}),
  });

if (mode === 'fault') {
  await write(undefined, sigkillSelf);
  process.stdout.write('done\n');
} else if (mode === 'loop') {
  const folder = [EXPORT_DIRECTORY, EXPORT_SCOPE.tenantId, EXPORT_SCOPE.conversationId, EXPORT_SCOPE.agentId].join('/');
  process.stdout.write('exporting\n');
  for (let index = 1; index <= 1000; index++) {
    await write(`${folder}/memory-${process.env['ITERATION'] ?? '0'}-${index}.json`);
  }
  process.stdout.write('done\n');
} else {
  const destination = await write();
  process.stdout.write(
    `${JSON.stringify({
      path: destination.relativePath,
      sha256: createHash('sha256').update(rendered.content).digest('hex'),
      bytes: Buffer.byteLength(rendered.content),
    })}\n`,
  );
}
await store.dispose();
