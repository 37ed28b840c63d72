import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { takeInspectorScreenshot } from '../support/inspector-screenshot.js';

const directory = mkdtempSync(join(tmpdir(), 'hm-inspector-shot-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('e2e: the README screenshot of the inspector', () => {
  it('is taken in the browser as npm run screenshot:inspector takes it: a 1280×800 PNG of a seeded scope', async () => {
    const output = join(directory, 'inspector.png');
    await takeInspectorScreenshot(output);
    const png = readFileSync(output);
    expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    // The IHDR chunk follows the signature: width and height as big-endian 32-bit integers.
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([1280, 800]);
    expect(png.length).toBeGreaterThan(20_000);
  }, 120_000);
});
