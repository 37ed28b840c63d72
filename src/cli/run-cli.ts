/**
 * The `harness` command line, runnable in-process: `main.ts` calls {@link runCli} with the
 * process's argv, environment and streams; tests call it with their own.
 * @module
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { loadConfig } from '../config/load-config.js';
import { maskPasswords } from '../core/mask-passwords.js';
import type { HarnessConfig } from '../config/schema.js';
import { redactSecrets } from '../core/redact-secrets.js';
import { registerConfigCommand } from './commands/config.js';
import { registerEvalCommand } from './commands/eval.js';
import { registerMcpCommand } from './commands/mcp.js';
import { registerMemoryCommand } from './commands/memory.js';
import { registerRunCommand } from './commands/run.js';
import { registerServeCommand } from './commands/serve.js';
import { registerWmCommand } from './commands/wm.js';
import { checkWorkspace } from './check-workspace.js';
import type { CliContext, CliStream, CommandResult } from './context.js';
import { EXIT_OK, errorMessageOf, exitCodeOf } from './exit-codes.js';

/** Options of {@link runCli}. */
export interface RunCliOptions {
  /** The environment; the only place variables come from. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdout: CliStream;
  readonly stderr: CliStream;
  /** @default process.cwd() */
  readonly cwd?: string;
  /** Where `~/.harness/config.toml` is looked for. @default os.homedir() */
  readonly homeDir?: string;
  /** Stops `serve` (and cancels `run`) when aborted, as SIGINT does. */
  readonly signal?: AbortSignal;
}

/**
 * Runs the CLI with `argv` (the arguments after the program name) and resolves with the
 * exit code: 0 success, 1 runtime failure, 2 bad usage, 78 configuration error. Errors are
 * one line on stderr (`harness: <message>`); `--verbose` adds the stack and causes. Passwords
 * in URLs and DSNs are masked in both, and secrets redacted from the stack.
 * @example
 * const { env, stdout, stderr } = process;
 * process.exitCode = await runCli(process.argv.slice(2), { env, stdout, stderr });
 */
export async function runCli(argv: readonly string[], options: RunCliOptions): Promise<number> {
  let config: HarnessConfig | undefined;
  const cwd = options.cwd ?? process.cwd();
  const context: CliContext = {
    env: options.env,
    cwd,
    stdout: options.stdout,
    stderr: options.stderr,
    signal: options.signal,
    color: options.stderr.isTTY === true && (options.env['NO_COLOR'] ?? '') === '' && options.env['TERM'] !== 'dumb',
    config() {
      const onWarning = (message: string): void => void options.stderr.write(`harness: warning: ${message}\n`);
      if (config === undefined) {
        const loaded = loadConfig({
          env: options.env,
          cwd,
          onWarning,
          ...(options.homeDir === undefined ? {} : { homeDir: options.homeDir }),
        });
        checkWorkspace(loaded);
        config = loaded;
      }
      return config;
    },
  };
  const result: CommandResult = { exitCode: EXIT_OK };
  const program = buildProgram(context, result);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return result.exitCode;
  } catch (error) {
    const code = exitCodeOf(error);
    // Commander has already printed help (or the version) for these.
    const printed =
      typeof error === 'object' &&
      error !== null &&
      'code' in error &&
      /^commander\.(help|helpDisplayed|version)$/.test(String(error.code));
    if (!printed) {
      options.stderr.write(`harness: ${maskPasswords(errorMessageOf(error))}\n`);
      // A cause can quote the config file, DSN line and all.
      if (argv.includes('--verbose') && error instanceof Error)
        options.stderr.write(`${redactSecrets(maskPasswords(stackOf(error))).text}\n`);
    }
    return code;
  }
}

function buildProgram(context: CliContext, result: CommandResult): Command {
  const program = new Command('harness');
  program
    .description('An agent harness with observational and working memory in every turn.')
    .version(packageVersion(), '-V, --version')
    .option('--verbose', 'show stack traces on errors')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => void context.stdout.write(text),
      writeErr: (text) => void context.stderr.write(text),
      // runCli prints the one-line error itself.
      outputError: () => {},
    })
    .showHelpAfterError(false)
    .addHelpText(
      'after',
      '\nExit codes: 0 success, 1 runtime failure, 2 bad usage (including invalid scope ids), 78 ' +
        'configuration error.\nConfiguration: ~/.harness/config.toml, <workspace>/.harness/config.toml, then ' +
        'HARNESS_* and OPENAI_* variables (see `harness config`).',
    );
  registerServeCommand(program, context, result);
  registerRunCommand(program, context, result);
  registerMemoryCommand(program, context, result);
  registerWmCommand(program, context, result);
  registerMcpCommand(program, context, result);
  registerConfigCommand(program, context, result);
  registerEvalCommand(program, context, result);
  return program;
}

function packageVersion(): string {
  try {
    const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
    return String((JSON.parse(text) as { version?: unknown }).version ?? '0.0.0');
  } catch {
    return '0.0.0';
  }
}

function stackOf(error: Error): string {
  const parts = [error.stack ?? String(error)];
  let cause: unknown = error.cause;
  for (let depth = 0; cause instanceof Error && depth < 5; depth++) {
    parts.push(`Caused by: ${cause.stack ?? String(cause)}`);
    cause = cause.cause;
  }
  return parts.join('\n');
}
