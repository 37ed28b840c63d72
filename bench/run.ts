/**
 * `npm run bench`: every figure the issues ask for, measured side by side in one run.
 * Nothing here asserts timings; it prints medians, percentiles and ratios.
 */
import { benchSnippet } from './snippet.js';

console.log(`harness-memory bench — node ${process.version}, ${new Date().toISOString()}`);
await benchSnippet();
