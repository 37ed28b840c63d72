/**
 * `npm run bench`: every figure the issues ask for, measured side by side in one run.
 * Nothing here asserts timings; it prints medians, percentiles and ratios.
 *
 * Flags: `--json` prints the turn figures of issue 16 as one JSON object on the last line;
 * `--summary` runs only those (the quick check).
 */
import { benchAiSdk } from './ai-sdk.js';
import { benchClaimPoll } from './claim-poll.js';
import { benchHarness } from './harness.js';
import { benchListing } from './listing.js';
import { benchPostgres } from './postgres.js';
import { benchSnippet } from './snippet.js';
import { benchStorage } from './storage.js';
import { benchSummary } from './summary.js';
import { benchTenantLimits } from './tenant-limits.js';

const flags = new Set(process.argv.slice(2));
const unknown = [...flags].filter((flag) => flag !== '--json' && flag !== '--summary');
if (unknown.length > 0) {
  console.error(`bench: unknown flag ${unknown.join(', ')}; the flags are --json and --summary`);
  process.exit(2);
}

console.log(`harness-memory bench — node ${process.version}, ${new Date().toISOString()}`);
const summary = await benchSummary();
if (!flags.has('--summary')) {
  await benchSnippet();
  await benchStorage();
  await benchClaimPoll();
  await benchHarness();
  await benchTenantLimits();
  await benchAiSdk();
  await benchListing();
  await benchPostgres();
}
if (flags.has('--json')) console.log(JSON.stringify(summary));
