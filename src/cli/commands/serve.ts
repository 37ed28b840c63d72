/**
 * `harness serve`: the HTTP API until SIGINT or SIGTERM.
 * @module
 */
import { LOOPBACK_HOSTS } from '../../core/loopback-hosts.js';
import { InvalidArgumentError } from 'commander';
import type { Command } from 'commander';
import type { HarnessConfig } from '../../config/schema.js';
import { maskPasswords } from '../../core/mask-passwords.js';
import type { Harness } from '../../server/create-harness.js';
import { startServer } from '../../server/serve.js';
import { dim, printLine, stopRequested } from '../context.js';
import type { CliContext, CommandResult } from '../context.js';
import { EXIT_OK } from '../exit-codes.js';
import { memoryOffReason, openHarness, warnMemoryModelMissing } from '../open-harness.js';

const WAITING = '(waiting for runs and memory work)';

interface ServeOptions {
  readonly host?: string;
  readonly port?: number;
  readonly insecure?: boolean;
}

/** Registers `serve`. */
export function registerServeCommand(program: Command, context: CliContext, result: CommandResult): void {
  program
    .command('serve')
    .description('serve the HTTP API (runs, SSE events, memory) until SIGINT or SIGTERM')
    .option('--host <host>', 'interface to listen on (default: [server] host, 127.0.0.1)', parseHost)
    .option('--port <port>', 'port to listen on; 0 picks a free one (default: [server] port, 8080)', parsePort)
    .option('--insecure', 'allow a non-loopback host without API keys')
    .action(async (options: ServeOptions) => {
      result.exitCode = await serve(context, options);
    });
}

async function serve(context: CliContext, options: ServeOptions): Promise<number> {
  // The server starts without a model so memory and the API can be used and inspected;
  // runs then fail with an error that names the setting to fix.
  const memoryOff = memoryOffReason(context.config());
  let memoryProblem: string | undefined;
  const harness = await openHarness(context, {
    startWorker: true,
    modelsOptional: true,
    onModelMissing: (role, error) => {
      if (role === 'agent')
        context.stderr.write(
          `harness: warning: no model is configured, so runs will fail until it is: ${maskPasswords(error.detail)}\n`,
        );
      // With memory off, its model is never asked.
      else memoryProblem = warnMemoryModelMissing(context, error);
    },
  });
  const server = await startServer(harness, {
    ...(options.host === undefined ? {} : { host: options.host }),
    ...(options.port === undefined ? {} : { port: options.port }),
    insecure: options.insecure === true,
  }).catch(async (error: unknown) => {
    await harness.dispose();
    throw error;
  });
  const stop = stopRequested(context);
  // Every background promise is caught where it is made; this only makes a missed one loud
  // (logged and counted as a fault) instead of stopping the server.
  const onUnhandledRejection = (reason: unknown): void => {
    harness.faults.report({
      component: 'process',
      message:
        'UNHANDLED PROMISE REJECTION: a background promise was not caught where it was made (a bug; please report it)',
      error: reason,
    });
  };
  process.on('unhandledRejection', onUnhandledRejection);
  try {
    printLine(
      context,
      `harness listening on ${server.url} (memory: ${memoryOff ?? describeMemoryModel(harness, memoryProblem)}, ` +
        `store: ${describeStore(harness.config)})`,
    );
    warnIfOpen(context, harness.config, options, server.port);
    printLine(context, `memory inspector: ${reachableUrl(server.url)}/inspector/`);
    const reason = await stop.stopped;
    context.stderr.write(
      `${dim(context, `harness: ${reason === 'abort' ? 'stopping' : `${reason} received, stopping`} ${WAITING}`)}\n`,
    );
  } finally {
    stop.dispose();
    await server.close();
    process.off('unhandledRejection', onUnhandledRejection);
  }
  return EXIT_OK;
}

function describeMemoryModel(harness: Harness, problem: string | undefined): string {
  if (problem !== undefined) return `not configured (${problem})`;
  const { mode, modelId, source } = harness.memoryModel;
  return `${mode} ${modelId} from ${source}`;
}

function describeStore(config: HarnessConfig): string {
  const { memory } = config;
  return memory.dbDriver === 'postgres'
    ? `postgres schema ${memory.schema === '' ? 'public' : memory.schema}`
    : memory.sqlitePath;
}

/**
 * A URL a browser on this machine can open: listening on every interface (`0.0.0.0`, `::`),
 * the server is reached through loopback, not through the unspecified address.
 */
function reachableUrl(url: string): string {
  return url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:');
}

/**
 * `--insecure` on a host other than loopback, without API keys: every host name is then served
 * (the Host check of a loopback-only server does not apply), so say how open that is.
 */
function warnIfOpen(context: CliContext, config: HarnessConfig, options: ServeOptions, port: number): void {
  const host = (options.host ?? config.server.host).trim();
  if (config.server.apiKeys.length > 0 || LOOPBACK_HOSTS.has(host.toLowerCase())) return;
  context.stderr.write(
    `harness: warning: --insecure: listening on ${host} without API keys, so anyone who can reach port ${port} ` +
      'can start runs and read, change and erase the memory of every tenant; set [server] api_keys or ' +
      'HARNESS_API_KEYS\n',
  );
}

// NOTE: a blank host would make Node listen on every interface.
function parseHost(value: string): string {
  const host = value.trim();
  if (host === '') {
    throw new InvalidArgumentError(
      'the host must not be blank: pass an interface such as 127.0.0.1, or leave --host out for [server] host.',
    );
  }
  return host;
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(port) || port > 65_535) {
    throw new InvalidArgumentError('the port must be an integer from 0 to 65535.');
  }
  return port;
}
