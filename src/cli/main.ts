#!/usr/bin/env node
/**
 * The `harness` executable: the one place that reads `process.env` and `process.argv`.
 * @module
 */
import { runCli } from './run-cli.js';

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
  cwd: process.cwd(),
});
