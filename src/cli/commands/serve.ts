/**
 * `harness serve`: the HTTP API until SIGINT or SIGTERM.
 * @module
 */
import { InvalidArgumentError } from 'commander';
import type { Command } from 'commander';
import { startServer } from '../../server/serve.js';
import { dim, printLine, stopRequested } from '../context.js';
import type { CliContext, CommandResult } from '../context.js';
import { EXIT_OK } from '../exit-codes.js';
import { openHarness } from '../open-harness.js';

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
  const harness = await openHarness(context, {
    startWorker: true,
    modelsOptional: true,
    onModelMissing: (error) => {
      context.stderr.write(
        `harness: warning: no model is configured, so runs will fail until it is: ${error.detail}\n`,
      );
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
  const { mode, modelId, source } = harness.memoryModel;
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
    const { memory } = harness.config;
    const store =
      memory.dbDriver === 'postgres'
        ? `postgres schema ${memory.schema === '' ? 'public' : memory.schema}`
        : memory.sqlitePath;
    printLine(
      context,
      `harness listening on ${server.url} (memory: ${mode} ${modelId} from ${source}, store: ${store})`,
    );
    printLine(context, `memory inspector: ${server.url}/inspector/`);
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
