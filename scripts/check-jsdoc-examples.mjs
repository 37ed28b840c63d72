#!/usr/bin/env node
// Type-checks the JSDoc examples of src/: every ```ts block inside a /** … */ comment is
// written to its own module under node_modules/.cache/jsdoc-examples/, with imports of
// `harness-memory` and its subpaths pointed at the sources, and checked by tsc with the
// project's compiler options. Run by `npm run test:types`. Examples without a fence are
// prose and are not checked: fence an example to have it checked.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(dirname(new URL(import.meta.url).pathname), '..');
const outDir = join(root, 'node_modules', '.cache', 'jsdoc-examples');
const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

function walk(directory) {
  return readdirSync(directory).flatMap((name) => {
    const path = join(directory, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

/** `harness-memory[/subpath]` → the source file its exports entry builds from. */
function sourceOfSubpath(specifier) {
  const subpath = specifier === packageJson.name ? '.' : `.${specifier.slice(packageJson.name.length)}`;
  const entry = packageJson.exports[subpath];
  const built = typeof entry === 'string' ? entry : entry?.import;
  if (typeof built !== 'string') return undefined;
  return join(root, built.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts'));
}

function examplesOf(file) {
  const text = readFileSync(file, 'utf8');
  const examples = [];
  for (const comment of text.matchAll(/\/\*\*[\s\S]*?\*\//g)) {
    const lines = comment[0].split('\n').map((line) => line.replace(/^\s*\*\s?/, ''));
    let block;
    let startLine = 0;
    lines.forEach((line, index) => {
      if (block === undefined && /^```(ts|typescript)\s*$/.test(line.trim())) {
        block = [];
        startLine = text.slice(0, comment.index).split('\n').length + index + 1;
      } else if (block !== undefined && line.trim() === '```') {
        examples.push({ file, line: startLine, code: block.join('\n') });
        block = undefined;
      } else if (block !== undefined) block.push(line);
    });
  }
  return examples;
}

const examples = walk(join(root, 'src'))
  .filter((file) => file.endsWith('.ts') && !/\.test(-d)?\.ts$/.test(file))
  .flatMap(examplesOf);

rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });
const problems = [];
const written = examples.map((example, index) => {
  const name = `example-${index}.ts`;
  const code = example.code.replace(/from\s+'(harness-memory(?:\/[^']*)?)'/g, (match, specifier) => {
    const source = sourceOfSubpath(specifier);
    if (source === undefined) {
      problems.push(
        `${relative(root, example.file)}:${example.line}: imports ${specifier}, which package.json does not export`,
      );
      return match;
    }
    return `from '${relative(outDir, source).replace(/\.ts$/, '.js')}'`;
  });
  const header = `// ${relative(root, example.file)}:${example.line}\n`;
  writeFileSync(join(outDir, name), `${header}${code}\nexport {};\n`);
  return name;
});

if (problems.length === 0 && written.length > 0) {
  writeFileSync(
    join(outDir, 'tsconfig.json'),
    JSON.stringify(
      {
        extends: relative(outDir, join(root, 'tsconfig.json')),
        compilerOptions: { noEmit: true, rootDir: relative(outDir, root), noUnusedLocals: false },
        include: written,
      },
      null,
      2,
    ),
  );
  try {
    execFileSync(
      process.execPath,
      [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(outDir, 'tsconfig.json')],
      { cwd: root, stdio: 'pipe' },
    );
  } catch (error) {
    const output = `${error.stdout ?? ''}${error.stderr ?? ''}`;
    // Name the source line of each example an error is in.
    const mapped = output.replace(
      /(?:node_modules\/\.cache\/jsdoc-examples\/)?(example-\d+\.ts)\((\d+),(\d+)\)/g,
      (match, name, line) => {
        const example = examples[Number(/\d+/.exec(name)[0])];
        return `${relative(root, example.file)}:${example.line + Number(line) - 2} (${name} line ${line})`;
      },
    );
    problems.push(mapped.trim());
  }
}

if (problems.length > 0) {
  console.error(`JSDoc examples do not type-check:\n${problems.join('\n')}`);
  process.exit(1);
}
console.log(`JSDoc examples type-check (${examples.length} fenced examples).`);
