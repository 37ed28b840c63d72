#!/usr/bin/env node
// Enforces the house layout rules that a type checker cannot:
// kebab-case file names, a pure core, and a root entry that never loads a database driver.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(dirname(new URL(import.meta.url).pathname), '..');
const problems = [];

function walk(directory) {
  const files = [];
  for (const name of readdirSync(directory)) {
    const path = join(directory, name);
    if (statSync(path).isDirectory()) files.push(...walk(path));
    else files.push(path);
  }
  return files;
}

const sourceFiles = ['src', 'test', 'bench'].flatMap((folder) => {
  try {
    return walk(join(root, folder));
  } catch {
    return [];
  }
});

const KEBAB = /^_?[a-z0-9]+(-[a-z0-9]+)*(\.(test|suite|test-d|examples))?\.(ts|mjs|js|json|txt|md)$/;
for (const file of sourceFiles) {
  const name = file.split('/').pop();
  if (!KEBAB.test(name)) problems.push(`${relative(root, file)}: file names are kebab-case`);
}

const importPattern = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;
function importsOf(file) {
  const text = readFileSync(file, 'utf8');
  const found = [];
  for (const match of text.matchAll(importPattern)) found.push(match[1] ?? match[2]);
  return found;
}

const CORE_ALLOWED_BUILTINS = new Set(['node:crypto']);
for (const file of sourceFiles.filter((path) => path.includes('/src/core/') && !path.endsWith('.test.ts'))) {
  for (const specifier of importsOf(file)) {
    if (specifier.startsWith('.')) {
      const target = resolve(dirname(file), specifier);
      if (!target.startsWith(join(root, 'src/core'))) problems.push(`${relative(root, file)}: core imports ${specifier}, outside core`);
    } else if (!CORE_ALLOWED_BUILTINS.has(specifier)) {
      problems.push(`${relative(root, file)}: core imports ${specifier}; core is pure (no I/O, no packages)`);
    }
  }
}

const FORBIDDEN_AT_ROOT = ['better-sqlite3', 'pg', 'hono', '@hono/node-server', 'commander', 'openai', 'ai', '@ai-sdk/provider'];
const seen = new Set();
function visit(file, chain) {
  if (seen.has(file)) return;
  seen.add(file);
  for (const specifier of importsOf(file)) {
    if (specifier.startsWith('.')) {
      visit(resolve(dirname(file), specifier).replace(/\.js$/, '.ts'), [...chain, relative(root, file)]);
    } else if (FORBIDDEN_AT_ROOT.includes(specifier)) {
      problems.push(`the root entry loads ${specifier} via ${[...chain, relative(root, file)].join(' -> ')}`);
    }
  }
}
visit(join(root, 'src/index.ts'), []);

if (problems.length > 0) {
  console.error(`Layout check failed:\n- ${problems.join('\n- ')}`);
  process.exit(1);
}
console.log(`Layout check passed (${sourceFiles.length} files).`);
