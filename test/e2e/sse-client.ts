/**
 * A small Server-Sent Events client for the end-to-end tests: `fetch` plus a `TextDecoder`,
 * parsing `id`, `retry`, `event` and `data` fields as the SSE spec says, with an optional
 * `Last-Event-ID` header.
 * @module
 */

/** One dispatched SSE frame: the fields written in its block. */
export interface SseFrame {
  /** The `id` field of this block, if it had one (the spec's last-event-id is sticky; this is not). */
  readonly id: string | undefined;
  /** The `retry` field of this block, if it had one. */
  readonly retry: number | undefined;
  /** The `event` field; `undefined` means the default type `message`. */
  readonly event: string | undefined;
  /** The `data` lines, joined with `\n`. */
  readonly data: string;
  /** `Date.now()` when the frame was parsed. */
  readonly receivedAt: number;
}

/** Incremental SSE parser: feed it decoded text, get the frames completed so far. */
export interface SseParser {
  push(text: string): SseFrame[];
  /** Comment lines (`: heartbeat`) seen so far. */
  readonly comments: number;
}

/** Creates an {@link SseParser}. Handles `\n`, `\r\n` and `\r` line ends split across chunks. */
export function createSseParser(): SseParser {
  let buffer = '';
  let comments = 0;
  let id: string | undefined;
  let retry: number | undefined;
  let event: string | undefined;
  let data: string[] = [];
  let hasData = false;

  const reset = (): void => {
    id = undefined;
    retry = undefined;
    event = undefined;
    data = [];
    hasData = false;
  };

  const line = (text: string, out: SseFrame[]): void => {
    if (text === '') {
      // A block without data is not dispatched (the spec's rule).
      if (hasData) out.push({ id, retry, event, data: data.join('\n'), receivedAt: Date.now() });
      reset();
      return;
    }
    if (text.startsWith(':')) {
      comments++;
      return;
    }
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'id':
        if (!value.includes('\0')) id = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) retry = Number(value);
        break;
      case 'event':
        event = value;
        break;
      case 'data':
        data.push(value);
        hasData = true;
        break;
      default:
        // Unknown fields are ignored.
        break;
    }
  };

  return {
    get comments() {
      return comments;
    },
    push(text) {
      buffer += text;
      const out: SseFrame[] = [];
      for (;;) {
        const match = /\r\n|\r|\n/.exec(buffer);
        if (!match) break;
        // A lone `\r` at the end may be the first half of `\r\n`: wait for more text.
        if (match[0] === '\r' && match.index === buffer.length - 1) break;
        line(buffer.slice(0, match.index), out);
        buffer = buffer.slice(match.index + match[0].length);
      }
      return out;
    },
  };
}

/** Options of {@link openSse}. */
export interface OpenSseOptions {
  /** Sent as the `Last-Event-ID` header. */
  readonly lastEventId?: string;
  /** Extra request headers, e.g. `authorization`. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** An open event stream. Iterate it for frames; iteration ends when the server closes it. */
export interface SseStream extends AsyncIterable<SseFrame> {
  readonly status: number;
  readonly headers: Headers;
  /** The body of a non-2xx answer (the stream then yields nothing). */
  readonly errorText: string;
  /** `: comment` lines seen so far (heartbeats). */
  readonly comments: number;
  /**
   * Reads frames until the server closes the stream (or `until` returns true for a frame,
   * which is included); rejects after `timeoutMs`.
   */
  collect(options?: { until?: (frame: SseFrame) => boolean; timeoutMs?: number }): Promise<SseFrame[]>;
  /** Whether the server ended the stream (iteration reached its end). */
  readonly ended: boolean;
  /** Drops the connection. */
  close(): void;
}

/** Opens `GET url` as an event stream. */
export async function openSse(url: string, options: OpenSseOptions = {}): Promise<SseStream> {
  const controller = new AbortController();
  const headers: Record<string, string> = { accept: 'text/event-stream', ...options.headers };
  if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
  const response = await fetch(url, { headers, signal: controller.signal });
  const ok = response.ok && (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
  const errorText = ok ? '' : await response.text();
  const parser = createSseParser();
  let ended = !ok;
  let iterating = false;

  async function* frames(): AsyncGenerator<SseFrame> {
    if (!ok || !response.body) return;
    if (iterating) throw new Error('an SSE stream can be read once');
    iterating = true;
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        for (const frame of parser.push(decoder.decode(value, { stream: true }))) yield frame;
      }
      for (const frame of parser.push(`${decoder.decode()}`)) yield frame;
      ended = true;
    } finally {
      if (!ended) await reader.cancel().catch(() => undefined);
    }
  }

  const iterator = frames();
  return {
    status: response.status,
    headers: response.headers,
    errorText,
    get comments() {
      return parser.comments;
    },
    get ended() {
      return ended;
    },
    [Symbol.asyncIterator]: () => iterator,
    async collect(collectOptions = {}) {
      const collected: SseFrame[] = [];
      const timeoutMs = collectOptions.timeoutMs ?? 10_000;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          controller.abort();
          reject(
            new Error(`the event stream ${url} did not end within ${timeoutMs} ms (got ${collected.length} frames)`),
          );
        }, timeoutMs);
      });
      const read = (async () => {
        for (;;) {
          const next = await iterator.next();
          if (next.done) return collected;
          collected.push(next.value);
          if (collectOptions.until?.(next.value)) return collected;
        }
      })();
      // The race below reports a timeout; the aborted read's own rejection is expected then.
      read.catch(() => undefined);
      try {
        return await Promise.race([read, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    close() {
      controller.abort();
    },
  };
}

/** The JSON of a frame's `data`, as the harness writes it. */
export interface RunEventData {
  readonly id: string;
  readonly run_id: string;
  readonly type: string;
  readonly timestamp: string;
  readonly payload: Record<string, unknown>;
}

/** Parses a frame's `data` as a run event. */
export function eventData(frame: SseFrame): RunEventData {
  return JSON.parse(frame.data) as RunEventData;
}
