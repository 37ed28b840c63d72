/**
 * `npm run screenshot:inspector`: writes docs/inspector.png, the README's picture of the
 * memory inspector (see test/support/inspector-screenshot.ts).
 */
import { fileURLToPath } from 'node:url';
import { takeInspectorScreenshot } from '../test/support/inspector-screenshot.js';

const output = fileURLToPath(new URL('../docs/inspector.png', import.meta.url));
await takeInspectorScreenshot(output);
console.log(`wrote ${output}`);
