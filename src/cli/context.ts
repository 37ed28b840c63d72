/**
 * What every command gets: the environment, output streams and the configuration, loaded once.
 * @module
 */
import type { HarnessConfig } from '../config/schema.js';

/** A stream the CLI writes to (process.stdout, or a collector in tests). */
export interface CliStream {
  write(chunk: string): unknown;
  readonly isTTY?: boolean;
}

/** The command-independent state of one CLI invocation. */
export interface CliContext {
  /** The environment, read once by `main.ts` and passed down. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly stdout: CliStream;
  readonly stderr: CliStream;
  /** Aborting it stops a long-running command (`serve`, `run`) as SIGINT would. */
  readonly signal: AbortSignal | undefined;
  /** The configuration; loaded on first use, then reused. Throws `CONFIG_INVALID`. */
  config(): HarnessConfig;
  /** Ansi styles when stderr is a terminal and NO_COLOR is unset. */
  readonly color: boolean;
}

/** Dim text for terminals; plain text otherwise. */
export function dim(context: CliContext, text: string): string {
  return context.color ? `\x1b[2m${text}\x1b[22m` : text;
}

/** Writes a line to stdout. */
export function printLine(context: CliContext, line = ''): void {
  context.stdout.write(`${line}\n`);
}

/**
 * Resolves when the user asks to stop: SIGINT, SIGTERM, or the context's abort signal.
 * Returns the promise and a function that removes the listeners.
 */
export function stopRequested(context: CliContext, onStop?: () => void): { stopped: Promise<string>; dispose(): void } {
  let resolveStop: (reason: string) => void = () => {};
  const stopped = new Promise<string>((resolve) => (resolveStop = resolve));
  const handlers = (['SIGINT', 'SIGTERM'] as const).map((name) => {
    const handler = () => {
      onStop?.();
      resolveStop(name);
    };
    process.once(name, handler);
    return [name, handler] as const;
  });
  const onAbort = () => {
    onStop?.();
    resolveStop('abort');
  };
  context.signal?.addEventListener('abort', onAbort, { once: true });
  if (context.signal?.aborted) onAbort();
  return {
    stopped,
    dispose() {
      for (const [name, handler] of handlers) process.off(name, handler);
      context.signal?.removeEventListener('abort', onAbort);
    },
  };
}

/** Holds the exit code a command chose. */
export interface CommandResult {
  exitCode: number;
}
