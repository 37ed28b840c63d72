/**
 * `npm run bench`: every figure the issues ask for, measured side by side in one run.
 * Nothing here asserts timings; it prints medians, percentiles and ratios.
 */
import { benchHarness } from './harness.js';
import { benchPostgres } from './postgres.js';
import { benchSnippet } from './snippet.js';
import { benchStorage } from './storage.js';
import { benchTenantLimits } from './tenant-limits.js';

console.log(`harness-memory bench — node ${process.version}, ${new Date().toISOString()}`);
await benchSnippet();
await benchStorage();
await benchHarness();
await benchTenantLimits();
await benchPostgres();
