import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), '..', 'scripts', 'check-layout.mjs');
const trees: string[] = [];
afterEach(() => {
  for (const tree of trees.splice(0)) rmSync(tree, { recursive: true, force: true });
});

/** A throwaway tree of `files` (path → content), checked by the layout script. */
function check(files: Record<string, string>): { status: number | null; output: string } {
  const tree = mkdtempSync(join(tmpdir(), 'hm-layout-'));
  trees.push(tree);
  for (const [path, content] of Object.entries({
    'src/index.ts': "export { a } from './core/a.js';\n",
    'src/core/a.ts': 'export const a = 1;\n',
    ...files,
  })) {
    mkdirSync(dirname(join(tree, path)), { recursive: true });
    writeFileSync(join(tree, path), content);
  }
  const result = spawnSync(process.execPath, [SCRIPT, tree], { encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

describe('check-layout: the layer rules (issue 17)', () => {
  it('passes a tree that keeps the layer order', () => {
    const result = check({
      'src/storage/store.ts': "import type { A } from '../core/a.js';\nexport type S = A;\n",
      'src/core/a.ts': 'export type A = 1;\nexport const a = 1;\n',
    });
    expect(result.output).toContain('Layout check passed');
    expect(result.status).toBe(0);
  });

  it('refuses an upward import, naming both layers', () => {
    const result = check({
      'src/llm/model.ts': "import type { Tool } from '../tools/tool.js';\nexport type M = Tool;\n",
      'src/tools/tool.ts': 'export type Tool = 1;\n',
    });
    expect(result.status).toBe(1);
    expect(result.output).toContain(
      'src/llm/model.ts: llm (rank 2) imports src/tools/tool.ts from tools (rank 5), a higher layer',
    );
  });

  it('refuses the forbidden edges the order would allow', () => {
    const result = check({
      'src/config/schema.ts': 'export type HarnessConfig = 1;\n',
      'src/llm/select.ts':
        "import type { HarnessConfig } from '../config/schema.js';\nexport type C = HarnessConfig;\n",
      'src/llm/port.ts': 'export type ToolCall = 1;\n',
      'src/storage/run-store.ts': "import type { ToolCall } from '../llm/port.js';\nexport type R = ToolCall;\n",
    });
    expect(result.status).toBe(1);
    expect(result.output).toContain('src/llm/select.ts: llm must not import config');
    expect(result.output).toContain('src/storage/run-store.ts: storage must not import llm');
  });

  it('refuses an adapter imported from outside a composition root', () => {
    const result = check({
      'src/storage/sqlite/sqlite-store.ts': 'export const createSqliteStore = 1;\n',
      'src/agent/runner.ts':
        "import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';\nexport const r = createSqliteStore;\n",
      'src/server/harness.ts':
        "import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';\nexport const h = createSqliteStore;\n",
    });
    expect(result.status).toBe(1);
    expect(result.output).toContain('src/agent/runner.ts: imports the adapter src/storage/sqlite/sqlite-store.ts');
    expect(result.output).not.toContain('src/server/harness.ts: imports the adapter');
  });

  it('refuses an import circle made of type imports only', () => {
    const result = check({
      'src/cli/run-cli.ts': "import type { C } from './commands/run.js';\nexport type R = C | 1;\n",
      'src/cli/commands/run.ts': "import type { R } from '../run-cli.js';\nexport type C = R | 2;\n",
    });
    expect(result.status).toBe(1);
    expect(result.output).toContain(
      'import circle (type imports count): src/cli/commands/run.ts <-> src/cli/run-cli.ts',
    );
  });

  it('names the file to edit for a top-level folder the table does not know', () => {
    const result = check({ 'src/widgets/widget.ts': 'export const widget = 1;\n' });
    expect(result.status).toBe(1);
    expect(result.output).toContain(
      "src/widgets/ is not in the layer table: add a row { folder: 'widgets', rank: N, role } to LAYERS in " +
        'scripts/check-layout.mjs',
    );
  });
});
