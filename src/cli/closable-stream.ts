/**
 * stdout and stderr as the executable hands them to the CLI: a reader that goes away
 * (`harness wm list | head -1`) ends the writing quietly instead of an EPIPE stack trace.
 * @module
 */
import type { CliStream } from './context.js';

/** A {@link CliStream} over a process stream that drops what is written once its reader is gone. */
export interface ClosableStream extends CliStream {
  /** True once a write failed with EPIPE: the reader closed its end. */
  readonly closed: boolean;
  /** Resolves once what was written has been handed to the operating system (at once when closed). */
  flushed(): Promise<void>;
}

/** Wraps `stream`; `onClosed` is told once, when its reader goes away. */
export function closableStream(stream: NodeJS.WriteStream, onClosed: () => void = () => {}): ClosableStream {
  let closed = false;
  stream.on('error', (error: NodeJS.ErrnoException) => {
    // Any other error stays as loud as it was without this listener.
    if (error.code !== 'EPIPE') throw error;
    if (closed) return;
    closed = true;
    onClosed();
  });
  return {
    get isTTY() {
      return stream.isTTY;
    },
    get closed() {
      return closed;
    },
    write(chunk: string) {
      return closed ? true : stream.write(chunk);
    },
    flushed() {
      if (closed || stream.writableLength === 0) return Promise.resolve();
      return new Promise<void>((resolve) => stream.write('', () => resolve()));
    },
  };
}
