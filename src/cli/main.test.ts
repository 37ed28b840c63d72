import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('src/cli/main.ts', () => {
  it('runs as a child process: --help exits 0', async () => {
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', 'src/cli/main.ts', '--help'],
        { cwd: root, timeout: 20_000 },
        (error, stdout, stderr) => {
          resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
        },
      );
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Usage: harness');
  });

  it('runs with HARNESS_MEMORY_DIR set in the shell: a warning naming it, and the command still works', async () => {
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const env = { ...process.env, HARNESS_MEMORY_DIR: '/tmp/somewhere-else' };
      execFile(
        process.execPath,
        ['--import', 'tsx', 'src/cli/main.ts', 'config'],
        { cwd: root, env, timeout: 20_000 },
        (error, stdout, stderr) => {
          resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
        },
      );
    });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(
      /^harness: warning: HARNESS_MEMORY_DIR is not a harness variable and is ignored; did you mean HARNESS_MEMORY_\w+\?\n$/,
    );
    expect(result.stdout).toContain('memory.sqlite_path');
  });
});
