import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HARNESS_MEMORY_ERROR_CODES, RUN_ERROR_CODES } from './errors.js';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const ERRORS_SOURCE = readFileSync(new URL('./errors.ts', import.meta.url), 'utf8');

/** The README's "Error codes" section, up to the next `## ` heading. */
function errorCodeSection(): string {
  const start = README.indexOf('\n## Error codes\n');
  expect(start, 'README.md has a "## Error codes" section').toBeGreaterThanOrEqual(0);
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end < 0 ? undefined : end);
}

describe('errors: the documented code list (issue 17)', () => {
  it('lists every thrown and every run error code in the README, each as a table row', () => {
    const section = errorCodeSection();
    for (const code of [...HARNESS_MEMORY_ERROR_CODES, ...RUN_ERROR_CODES])
      expect(section).toContain(`| \`${code}\` |`);
  });

  it('documents every thrown code in the JSDoc list of errors.ts', () => {
    for (const code of HARNESS_MEMORY_ERROR_CODES) expect(ERRORS_SOURCE).toContain(` * - \`${code}\`:`);
  });
});
