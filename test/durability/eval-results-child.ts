/**
 * Child process of the results-file crash test. Run with `node --import tsx`.
 * Starts `TOTAL` overlapping appends to `RESULTS_PATH` and SIGKILLs itself as soon as
 * `KILL_AFTER` of them have resolved, while the others are still queued or being written.
 * Each resolved append is printed as `done <question_id>` before the kill.
 * @module
 */
import { writeSync } from 'node:fs';
import { openEvalResultsWriter } from '../../src/eval/eval-results.js';
import { resultLine } from '../support/eval-result-lines.js';

const path = process.env['RESULTS_PATH'];
if (!path) throw new Error('RESULTS_PATH is required');
const total = Number(process.env['TOTAL'] ?? '200');
const killAfter = Number(process.env['KILL_AFTER'] ?? '50');

const writer = await openEvalResultsWriter(path);
let resolved = 0;
await Promise.all(
  Array.from({ length: total }, async (_unused, index) => {
    const questionId = `q${index}`;
    await writer.append(resultLine({ question_id: questionId, hypothesis: `answer ${index} `.repeat(2000) }));
    writeSync(1, `done ${questionId}\n`);
    if (++resolved === killAfter) process.kill(process.pid, 'SIGKILL');
  }),
);
writeSync(1, 'finished\n');
