import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));

describe('examples/ai-sdk.ts (npm run example:ai-sdk)', () => {
  it('answers from what the first call taught, through the AI SDK, against the scripted server', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'harness-example-'));
    try {
      const tsx = join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs');
      const { stdout, stderr } = await run(
        process.execPath,
        [tsx, '--tsconfig', join(root, 'examples', 'tsconfig.json'), join(root, 'examples', 'ai-sdk.ts')],
        { cwd },
      );
      expect(stdout.trim()).toBe('You told me you are allergic to peanuts.');
      expect(stderr).not.toContain('failed');
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 60_000);

  it('is what the README shows', () => {
    const example = readFileSync(join(root, 'examples', 'ai-sdk.ts'), 'utf8');
    const block = example.slice(
      example.indexOf('// quickstart:start\n') + '// quickstart:start\n'.length,
      example.indexOf('// quickstart:end'),
    );
    expect(block.length).toBeGreaterThan(200);
    expect(readFileSync(join(root, 'README.md'), 'utf8')).toContain('```ts\n' + block + '```');
  });
});
