#!/usr/bin/env node
// Enforces the house layout rules that a type checker cannot: kebab-case file names, the
// layer order of src/, the edges that order would allow but the house forbids, adapters
// reached only from composition roots, no import circles (type imports included), a pure
// core, and a root entry that never loads a database driver. Run by `npm run lint`.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

// The checked tree: this repository, or the folder given as the first argument (tests use one).
const root = process.argv[2] ? resolve(process.argv[2]) : resolve(dirname(new URL(import.meta.url).pathname), '..');
const THIS_FILE = 'scripts/check-layout.mjs';
const problems = [];

// ---------------------------------------------------------------------------------------
// The rule table. To add a top-level folder of src/, add one row here.
// A file may import files of its own folder and of any folder of the same or a lower rank,
// except the edges in FORBIDDEN_EDGES. Peers of one rank (server and mcp, say) may import
// each other; the circle check still holds between them.
// ---------------------------------------------------------------------------------------
const LAYERS = [
  { folder: 'core', rank: 0, role: 'pure domain: no I/O, no packages' },
  { folder: 'config', rank: 1, role: 'TOML + environment configuration' },
  { folder: 'llm', rank: 2, role: 'the LanguageModel port, its adapter, retries, selection' },
  { folder: 'storage', rank: 3, role: 'the store, run-store and event-hub ports, and their adapters' },
  { folder: 'memory', rank: 4, role: 'the memory services' },
  { folder: 'tools', rank: 5, role: 'the agent tools' },
  { folder: 'agent', rank: 6, role: 'turn preparation and the run loop' },
  { folder: 'ai-sdk', rank: 7, role: 'AI SDK middleware: an integration above the agent' },
  { folder: 'eval', rank: 7, role: 'the eval runner, above the agent' },
  { folder: 'server', rank: 8, role: 'composition root: HTTP API' },
  { folder: 'mcp', rank: 8, role: 'composition root: the MCP server over both memories' },
  { folder: 'cli', rank: 9, role: 'composition root: the harness CLI' },
];

/** Edges the rank order allows that the house still forbids: [from, to, why]. */
const FORBIDDEN_EDGES = [
  [
    'llm',
    'config',
    'the llm layer takes its own plain input (ModelSelectionConfig); pass the loaded config from a composition root',
  ],
  ['storage', 'config', 'ports and adapters depend on core alone; pass plain options'],
  ['storage', 'llm', 'ports depend on core alone; shared transcript types live in core/conversation-message.ts'],
  ['memory', 'config', 'services take plain options; composition roots read the config'],
  ['tools', 'config', 'tools take plain options; composition roots read the config'],
  ['agent', 'config', 'the agent takes plain options; composition roots read the config'],
];

/** Folders that wire adapters together; only they (and the adapter itself) may import an adapter. */
const COMPOSITION_ROOTS = ['server', 'mcp', 'cli'];

/**
 * Adapters: code that loads a driver or SDK. `path` is a folder (ending in `/`) or a file
 * under src/; `alsoFrom` lists further src/ folders allowed to import it.
 */
const ADAPTERS = [
  { path: 'storage/sqlite/', alsoFrom: [] },
  { path: 'storage/postgres/', alsoFrom: [] },
  // The model factories of the llm layer (selection, the public llm entry) build it.
  { path: 'llm/openai-compatible.ts', alsoFrom: ['llm'] },
];

/** Packages the root entry must never load, through any chain of imports. */
const FORBIDDEN_AT_ROOT = [
  'better-sqlite3',
  'pg',
  'hono',
  '@hono/node-server',
  'commander',
  'openai',
  'ai',
  '@ai-sdk/provider',
  '@modelcontextprotocol/server',
];
const CORE_ALLOWED_BUILTINS = new Set(['node:crypto']);

// ---------------------------------------------------------------------------------------

function walk(directory) {
  const files = [];
  for (const name of readdirSync(directory)) {
    const path = join(directory, name);
    if (statSync(path).isDirectory()) files.push(...walk(path));
    else files.push(path);
  }
  return files;
}

const sourceFiles = ['src', 'test', 'bench'].flatMap((folder) =>
  existsSync(join(root, folder)) ? walk(join(root, folder)) : [],
);

const KEBAB = /^_?[a-z0-9]+(-[a-z0-9]+)*(\.(test|suite|test-d|examples))?\.(ts|mjs|js|json|txt|md|pem)$/;
for (const file of sourceFiles) {
  const name = file.split(sep).pop();
  if (!KEBAB.test(name)) problems.push(`${relative(root, file)}: file names are kebab-case`);
}

// Static imports and re-exports (`import type` and `export type … from` included),
// side-effect imports and dynamic `import('…')`.
const importPattern =
  /(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+['"]([^'"]+)['"]|(?:^|\n)\s*import\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;
const importCache = new Map();
function importsOf(file) {
  let found = importCache.get(file);
  if (found === undefined) {
    const text = readFileSync(file, 'utf8');
    found = [...text.matchAll(importPattern)].map((match) => match[1] ?? match[2] ?? match[3]);
    importCache.set(file, found);
  }
  return found;
}

/** The .ts file a relative specifier names (`./a.js` → `a.ts`, `./dir` → `dir/index.ts`). */
function resolveLocal(from, specifier) {
  const target = resolve(dirname(from), specifier);
  for (const candidate of [target.replace(/\.js$/, '.ts'), target, `${target}.ts`, join(target, 'index.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

const SRC = join(root, 'src');
const isTest = (file) => /\.test(-d)?\.ts$/.test(file);
const srcFiles = sourceFiles.filter((file) => file.startsWith(SRC + sep) && /\.(ts|mts)$/.test(file) && !isTest(file));
const layerByFolder = new Map(LAYERS.map((layer) => [layer.folder, layer]));

/** The top-level folder of src/ a file sits in, or '' for files directly in src/. */
function folderOf(file) {
  const parts = relative(SRC, file).split(sep);
  return parts.length > 1 ? parts[0] : '';
}

for (const folder of new Set(srcFiles.map(folderOf))) {
  if (folder !== '' && !layerByFolder.has(folder)) {
    problems.push(
      `src/${folder}/ is not in the layer table: add a row { folder: '${folder}', rank: N, role } to LAYERS ` +
        `in ${THIS_FILE} ` +
        `(ranks: ${LAYERS.map((layer) => `${layer.folder} ${layer.rank}`).join(', ')})`,
    );
  }
}

const forbidden = new Map(FORBIDDEN_EDGES.map(([from, to, why]) => [`${from}>${to}`, why]));
function adapterOf(file) {
  const path = relative(SRC, file).split(sep).join('/');
  return ADAPTERS.find((adapter) =>
    adapter.path.endsWith('/') ? path.startsWith(adapter.path) : path === adapter.path,
  );
}

const graph = new Map();
for (const file of srcFiles) {
  const from = folderOf(file);
  const fromLayer = layerByFolder.get(from);
  const edges = [];
  for (const specifier of importsOf(file)) {
    const name = relative(root, file);
    if (!specifier.startsWith('.')) {
      if (from === 'core' && !CORE_ALLOWED_BUILTINS.has(specifier)) {
        problems.push(`${name}: core imports ${specifier}; core is pure (no I/O, no packages)`);
      }
      continue;
    }
    const target = resolveLocal(file, specifier);
    if (target === undefined) {
      problems.push(`${name}: imports ${specifier}, which is no file`);
      continue;
    }
    if (!target.startsWith(SRC + sep)) {
      if (!isTest(target)) problems.push(`${name}: imports ${relative(root, target)}, outside src/`);
      continue;
    }
    edges.push(target);
    const to = folderOf(target);
    const toLayer = layerByFolder.get(to);
    if (from === to || fromLayer === undefined || toLayer === undefined) {
      // Same folder, the root entry, or an unknown folder (reported above).
    } else if (toLayer.rank > fromLayer.rank) {
      problems.push(
        `${name}: ${from} (rank ${fromLayer.rank}) imports ${relative(root, target)} from ${to} (rank ` +
          `${toLayer.rank}), a higher layer`,
      );
    } else if (forbidden.has(`${from}>${to}`)) {
      problems.push(
        `${name}: ${from} must not import ${to} (${relative(root, target)}): ${forbidden.get(`${from}>${to}`)}`,
      );
    }
    const adapter = adapterOf(target);
    if (
      adapter !== undefined &&
      adapter !== adapterOf(file) &&
      from !== '' &&
      !COMPOSITION_ROOTS.includes(from) &&
      !adapter.alsoFrom.includes(from)
    ) {
      problems.push(
        `${name}: imports the adapter ${relative(root, target)}; adapters are reached only from a ` +
          `composition root (${COMPOSITION_ROOTS.join(', ')}): depend on the port and have it passed in`,
      );
    }
  }
  graph.set(file, edges);
}

// Circles: strongly connected components of the import graph (Tarjan, iterative).
function circles() {
  let counter = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work = [[start, 0]];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const [node, position] = frame;
      const edges = graph.get(node) ?? [];
      if (position < edges.length) {
        frame[1] += 1;
        const next = edges[position];
        if (!index.has(next)) {
          index.set(next, counter);
          low.set(next, counter++);
          stack.push(next);
          onStack.add(next);
          work.push([next, 0]);
        } else if (onStack.has(next)) {
          low.set(node, Math.min(low.get(node), index.get(next)));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1][0];
        low.set(parent, Math.min(low.get(parent), low.get(node)));
      }
      if (low.get(node) === index.get(node)) {
        const component = [];
        let member;
        do {
          member = stack.pop();
          onStack.delete(member);
          component.push(member);
        } while (member !== node);
        const selfLoop = (graph.get(node) ?? []).includes(node);
        if (component.length > 1 || selfLoop) found.push(component);
      }
    }
  }
  return found;
}
for (const component of circles()) {
  const names = component.map((file) => relative(root, file)).sort();
  problems.push(
    `import circle (type imports count): ${names.join(' <-> ')}; move the shared types to a file both can import`,
  );
}

// The root entry never loads a database driver, HTTP framework or model SDK.
const seen = new Set();
function visit(file, chain) {
  if (seen.has(file)) return;
  seen.add(file);
  for (const specifier of importsOf(file)) {
    if (specifier.startsWith('.')) {
      const target = resolveLocal(file, specifier);
      if (target !== undefined) visit(target, [...chain, relative(root, file)]);
    } else if (FORBIDDEN_AT_ROOT.includes(specifier)) {
      problems.push(`the root entry loads ${specifier} via ${[...chain, relative(root, file)].join(' -> ')}`);
    }
  }
}
visit(join(SRC, 'index.ts'), []);

if (problems.length > 0) {
  console.error(`Layout check failed (rules in ${THIS_FILE}):\n- ${problems.join('\n- ')}`);
  process.exit(1);
}
console.log(
  `Layout check passed (${sourceFiles.length} files; ${srcFiles.length} in the layer order ` +
    `${LAYERS.map((layer) => layer.folder).join(' < ')}).`,
);
