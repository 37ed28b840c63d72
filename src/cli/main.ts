#!/usr/bin/env node
/**
 * The `harness` executable: the one place that reads `process.env` and `process.argv`.
 * @module
 */
import { closableStream } from './closable-stream.js';
import { runCli } from './run-cli.js';

// A reader that closes stdout (`| head -1`) stops the command as Ctrl-C would.
const stopped = new AbortController();
const stdout = closableStream(process.stdout, () => stopped.abort());
const stderr = closableStream(process.stderr);

const exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout,
  stderr,
  cwd: process.cwd(),
  signal: stopped.signal,
});
await Promise.all([stdout.flushed(), stderr.flushed()]);
// NOTE: the command is done, but work it abandoned may still hold the event loop (a memory model
// call a Ctrl-C left running): exit now. A closed stdout is no failure, as for tools killed by
// SIGPIPE that a shell does not report (exit 0).
process.exit(stdout.closed ? 0 : exitCode);
