/**
 * A one-line progress indicator on stderr, shown only when stderr is a terminal.
 * @module
 */
import type { CliStream } from './context.js';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** A spinner that other output can interleave with: call {@link Spinner.clear} before writing. */
export class Spinner {
  readonly #stream: CliStream;
  readonly #enabled: boolean;
  #label = '';
  #frame = 0;
  #timer: NodeJS.Timeout | undefined;
  #shown = false;

  constructor(stream: CliStream) {
    this.#stream = stream;
    this.#enabled = stream.isTTY === true;
  }

  /** Shows (or relabels) the spinner. */
  update(label: string): void {
    if (!this.#enabled) return;
    this.#label = label;
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#draw(), 80);
      this.#timer.unref();
    }
    this.#draw();
  }

  /** Erases the spinner line so the next write starts on a clean line; it comes back on the next frame. */
  clear(): void {
    if (!this.#shown) return;
    this.#stream.write('\r\x1b[K');
    this.#shown = false;
  }

  /** Erases the spinner and stops it. */
  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.clear();
  }

  #draw(): void {
    this.#frame = (this.#frame + 1) % FRAMES.length;
    this.#stream.write(`\r\x1b[K${FRAMES[this.#frame] ?? ''} ${this.#label}`);
    this.#shown = true;
  }
}
