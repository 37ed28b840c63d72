/**
 * Reading the JSON export `harness memory import --file` names (`-`: standard input), bounded.
 * @module
 */
import { open } from 'node:fs/promises';
import { resolve } from 'node:path';
import { HarnessMemoryError } from '../core/errors.js';
import { MAX_IMPORTED_EXPORT_BYTES } from '../memory/export-reader.js';

/**
 * The text of the file at `path` (relative to `cwd`), or of `input` when `path` is `-`, without
 * a leading byte-order mark. A file larger than `maxBytes`, or one that cannot be read, is
 * `EXPORT_INVALID` naming the path (exit code 2); no more than `maxBytes` + 1 bytes are read.
 */
export async function readExportFile(
  path: string,
  options: { cwd: string; input?: AsyncIterable<Buffer | string>; maxBytes?: number },
): Promise<string> {
  const maxBytes = options.maxBytes ?? MAX_IMPORTED_EXPORT_BYTES;
  const shown = path === '-' ? 'standard input' : path;
  const chunks: Buffer[] = [];
  let total = 0;
  const take = (chunk: Buffer | string): boolean => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    total += bytes.length;
    if (total > maxBytes) return false;
    chunks.push(bytes);
    return true;
  };
  try {
    if (path === '-') {
      for await (const chunk of options.input ?? process.stdin) if (!take(chunk)) break;
    } else {
      const file = await open(resolve(options.cwd, path), 'r');
      try {
        for await (const chunk of file.createReadStream({ end: maxBytes, autoClose: false })) if (!take(chunk)) break;
      } finally {
        await file.close();
      }
    }
  } catch (error) {
    throw new HarnessMemoryError({
      code: 'EXPORT_INVALID',
      component: 'cli',
      message: `--file: cannot read ${shown}: ${(error as Error).message}`,
      data: { path },
      cause: error,
    });
  }
  if (total > maxBytes) {
    throw new HarnessMemoryError({
      code: 'EXPORT_INVALID',
      component: 'cli',
      message:
        `--file: ${shown} is larger than ${maxBytes} bytes, the most an import reads; ` +
        'import a smaller export (memory export writes one scope).',
      data: { path },
    });
  }
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/^\uFEFF/, '');
}
