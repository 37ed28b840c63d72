import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The package as a user gets it: `npm pack` (whose prepack builds), the tarball unpacked into
 * a fresh project's node_modules, and its declared dependencies beside it. There is no
 * registry here, so each dependency is linked from this checkout's node_modules rather than
 * installed; only what package.json declares (dependencies and optional peers) is linked, so an undeclared
 * import fails as it
 * would for a user. Then every subpath is imported by Node and type-checked by tsc.
 */
const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, unknown>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  bin: Record<string, string>;
};
const subpaths = Object.keys(manifest.exports).filter((key) => key !== './package.json');
const specifier = (subpath: string): string =>
  subpath === '.' ? 'harness-memory' : `harness-memory/${subpath.slice(2)}`;

/** What each subpath must offer, by name; the import test also uses a few of them. */
const EXPECTED: Record<string, readonly string[]> = {
  '.': [
    'createObservationalMemory',
    'createWorkingMemory',
    'createInMemoryStore',
    'HarnessMemoryError',
    'redactSecrets',
  ],
  './storage/in-memory': ['createInMemoryStore', 'createInMemoryRunStore'],
  './storage/sqlite': ['createSqliteStore', 'createSqliteRunStore'],
  './storage/postgres': ['createPostgresStore', 'createPostgresRunStore'],
  './config': ['loadConfig'],
  './tools': ['createWorkingMemoryTool', 'createObservationalMemoryTool'],
  './llm': ['createOpenAICompatibleModel', 'withRetries'],
  './server': ['createHarness'],
  './agent': ['createAgentRunner', 'createTurnPreparer', 'createInMemoryRunStore'],
  './ai-sdk': ['createMemoryMiddleware', 'createMemoryTools'],
  './mcp': ['createMemoryMcpServer', 'memoryUri'],
  './testing': ['runMemoryStoreSuite', 'runRunStoreSuite'],
};

let project = '';

beforeAll(async () => {
  project = mkdtempSync(join(tmpdir(), 'harness-packed-'));
  const { stdout } = await run('npm', ['pack', '--json', '--silent', '--pack-destination', project], {
    cwd: root,
    maxBuffer: 64 * 1024 * 1024,
  });
  const [{ filename }] = JSON.parse(stdout.slice(stdout.indexOf('['))) as [{ filename: string }];
  const installed = join(project, 'node_modules', 'harness-memory');
  mkdirSync(installed, { recursive: true });
  await run('tar', ['-xzf', join(project, filename), '-C', installed, '--strip-components=1']);
  // The optional peers (ai, @ai-sdk/provider) are linked as a user of harness-memory/ai-sdk installs them.
  // @ai-sdk/provider's declarations import 'json-schema' types it does not depend on: with
  // skipLibCheck off, its users need @types/json-schema, as this consumer does. The types of
  // better-sqlite3 and pg, which our declarations import, come as our dependencies.
  const types = ['@types/node', '@types/json-schema'];
  for (const name of [...Object.keys(manifest.dependencies), ...Object.keys(manifest.peerDependencies), ...types]) {
    mkdirSync(join(project, 'node_modules', name, '..'), { recursive: true });
    symlinkSync(join(root, 'node_modules', name), join(project, 'node_modules', name), 'dir');
  }
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
}, 180_000);

afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

describe('the packed package', () => {
  it(
    'ships only dist, the inspector page, the README, the CHANGELOG, the LICENSE and package.json (no ' +
      'sources or tests)',
    async () => {
      const { stdout } = await run('tar', ['-tzf', join(project, readdirTarball())]);
      const files = stdout
        .trim()
        .split('\n')
        .map((line) => line.replace(/^package\//, ''));
      expect(files).toContain('dist/index.js');
      // MIT asks for its notice to travel with every copy.
      expect(files).toContain('LICENSE');
      expect(files).toEqual(
        expect.arrayContaining(['inspector/index.html', 'inspector/inspector.css', 'inspector/app.js']),
      );
      const allowed =
        /^(dist\/|inspector\/[a-z0-9-]+\.(html|css|js)$|README\.md$|CHANGELOG\.md$|package\.json$|LICENSE$)/;
      expect(files.filter((file) => !allowed.test(file))).toEqual([]);
      expect(files.filter((file) => /\.test\.(js|d\.ts)$/.test(file))).toEqual([]);
      // The build starts from an empty dist: nothing compiled from a source since deleted or
      // renamed is shipped.
      const orphans = files
        .filter((file) => file.startsWith('dist/'))
        .filter(
          (file) => !existsSync(join(root, file.replace(/^dist\//, 'src/').replace(/(\.d)?\.(js|ts)(\.map)?$/, '.ts'))),
        );
      expect(orphans).toEqual([]);
    },
  );

  it('ships source maps that carry their sources, so debuggers and bundlers need no missing src/', async () => {
    const { stdout } = await run('tar', ['-tzf', join(project, readdirTarball())]);
    const maps = stdout
      .trim()
      .split('\n')
      .map((line) => line.replace(/^package\//, ''))
      .filter((file) => file.endsWith('.js.map'));
    expect(maps.length).toBeGreaterThan(0);
    const installed = join(project, 'node_modules', 'harness-memory');
    const incomplete = maps.filter((file) => {
      const map = JSON.parse(readFileSync(join(installed, file), 'utf8')) as {
        sources: string[];
        sourcesContent?: (string | null)[];
      };
      return map.sources.some((_, index) => typeof map.sourcesContent?.[index] !== 'string');
    });
    expect(incomplete).toEqual([]);
  });

  it('imports the root entry and every subpath from Node, each with what it promises, and uses them', async () => {
    expect(subpaths.sort()).toEqual(Object.keys(EXPECTED).sort());
    const lines = [
      ...subpaths.map((subpath, index) => `import * as m${index} from '${specifier(subpath)}';`),
      `const modules = { ${subpaths.map((subpath, index) => `'${subpath}': m${index}`).join(', ')} };`,
      `const expected = ${JSON.stringify(EXPECTED)};`,
      `for (const [subpath, names] of Object.entries(expected)) for (const name of names) if ` +
        `(modules[subpath][name] === undefined) throw new Error(subpath + ' lacks ' + name);`,
      `const { createObservationalMemory, createWorkingMemory } = m0;`,
      `const { createSqliteStore } = modules['./storage/sqlite'];`,
      `const store = createSqliteStore({ path: 'memory.db' });`,
      `const workingMemory = createWorkingMemory({ store });`,
      `const scope = { tenantId: 'acme', conversationId: 'c1', agentId: 'a1' };`,
      `await workingMemory.set(scope, 'plan', { step: 1 });`,
      `const memory = createObservationalMemory({ store });`,
      `const status = await memory.status(scope);`,
      `const config = modules['./config'].loadConfig({ workspace: '.', env: {} });`,
      `console.log(JSON.stringify({ snippet: await workingMemory.snippet(scope), enabled: status.enabled, ` +
        `port: config.server.port }));`,
      `await memory.dispose?.(); await store.dispose();`,
    ];
    writeFileSync(join(project, 'consumer.mjs'), `${lines.join('\n')}\n`);
    const { stdout } = await run(process.execPath, ['consumer.mjs'], { cwd: project });
    const result = JSON.parse(stdout) as { snippet: string; port: number };
    expect(result.snippet).toContain('plan');
    expect(result.port).toBe(8080);
  }, 60_000);

  it('loads every subpath with require() from CommonJS (Node 20.19 and later load ES modules so)', async () => {
    const lines = [
      `const names = {};`,
      ...subpaths.map(
        (subpath) => `names[${JSON.stringify(subpath)}] = Object.keys(require(${JSON.stringify(specifier(subpath))}));`,
      ),
      `console.log(JSON.stringify(names));`,
    ];
    writeFileSync(join(project, 'consumer.cjs'), `${lines.join('\n')}\n`);
    const { stdout } = await run(process.execPath, ['consumer.cjs'], { cwd: project });
    const names = JSON.parse(stdout) as Record<string, string[]>;
    for (const subpath of subpaths)
      expect(names[subpath], subpath).toEqual(expect.arrayContaining([...EXPECTED[subpath]!]));
  }, 60_000);

  it('type-checks a TypeScript consumer of every subpath against the shipped declarations', async () => {
    const lines = [
      ...subpaths.map((subpath, index) => `import * as m${index} from '${specifier(subpath)}';`),
      `import type { ObservationalMemory, WorkingMemory, MemoryStore } from 'harness-memory';`,
      `import type { RunStore, RunPatch, RunListQuery } from 'harness-memory/agent';`,
      // Every type the ports name, for adapters of a user's own.
      `import type { NewMessage, LeaseHandle, AppendAndClaimResult, PrefetchedObserve, ScopeListQuery, ` +
        `WorkingMemoryLimits, Page, ObservationView, MemoryProgress, PreparedMessage } from 'harness-memory';`,
      `export type PortTypes = [NewMessage, LeaseHandle, AppendAndClaimResult, PrefetchedObserve, ScopeListQuery, ` +
        `WorkingMemoryLimits, Page<ObservationView>, MemoryProgress, PreparedMessage, RunPatch, RunListQuery];`,
      `const store: MemoryStore = m0.createInMemoryStore();`,
      `const memory: ObservationalMemory = m0.createObservationalMemory({ store });`,
      `const workingMemory: WorkingMemory = m0.createWorkingMemory({ store });`,
      `const runs: RunStore = m1.createInMemoryRunStore();`,
      `export const used = [memory, workingMemory, runs, ${subpaths.map((_, index) => `m${index}`).join(', ')}];`,
    ];
    writeFileSync(join(project, 'consumer.ts'), `${lines.join('\n')}\n`);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'node16',
          moduleResolution: 'node16',
          target: 'es2022',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ['node'],
        },
        files: ['consumer.ts'],
      }),
    );
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: project }).then(
      () => '',
      (error: { stdout?: string }) => error.stdout ?? String(error),
    );
    expect(result).toBe('');
  }, 120_000);

  it('runs the shipped conformance suites with vitest against the installed stores', async () => {
    writeFileSync(
      join(project, 'conformance.test.mjs'),
      [
        `import { runMemoryStoreSuite, runRunStoreSuite } from 'harness-memory/testing';`,
        `import { createInMemoryRunStore, createInMemoryStore } from 'harness-memory/storage/in-memory';`,
        `runMemoryStoreSuite({ name: 'installed in-memory', create: () => createInMemoryStore() });`,
        `runRunStoreSuite({ name: 'installed in-memory', create: () => createInMemoryRunStore() });`,
        '',
      ].join('\n'),
    );
    const vitest = join(project, 'node_modules', 'vitest', 'vitest.mjs');
    const { stdout } = await run(process.execPath, [vitest, 'run', 'conformance.test.mjs', '--reporter=json'], {
      cwd: project,
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, NO_COLOR: '1' },
    });
    const report = JSON.parse(stdout.slice(stdout.indexOf('{'))) as {
      numPassedTests: number;
      numFailedTests: number;
    };
    expect(report.numFailedTests).toBe(0);
    expect(report.numPassedTests).toBeGreaterThan(50);
  }, 180_000);

  it('serves the inspector page from the installed package', async () => {
    const lines = [
      `import { inspectorRoutes } from './node_modules/harness-memory/dist/server/routes/inspector.js';`,
      `const app = inspectorRoutes();`,
      `const page = await app.request('/index.html');`,
      `const script = await app.request('/app.js');`,
      `console.log(JSON.stringify({ page: page.status, html: (await page.text()).includes('app.js'), script: ` +
        `script.status }));`,
    ];
    writeFileSync(join(project, 'inspector.mjs'), `${lines.join('\n')}\n`);
    const { stdout } = await run(process.execPath, ['inspector.mjs'], { cwd: project });
    expect(JSON.parse(stdout)).toEqual({ page: 200, html: true, script: 200 });
  });

  it('runs the harness command from the installed bin', async () => {
    const { stdout } = await run(
      process.execPath,
      [join(project, 'node_modules', 'harness-memory', manifest.bin['harness'] ?? ''), '--help'],
      { cwd: project },
    );
    expect(stdout).toContain('Usage: harness');
  });
});

function readdirTarball(): string {
  const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
  return `harness-memory-${version}.tgz`;
}
