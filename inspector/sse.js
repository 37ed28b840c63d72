// @ts-check
// Server-sent events over fetch. EventSource cannot send an Authorization header, so the
// stream is read with a ReadableStream reader and parsed here; a dropped connection is
// resumed with Last-Event-ID, so no event is lost or shown twice.
import { ApiError, authHeaders, errorOf } from './api.js';

/** @typedef {{ id: string, event: string, data: string }} SseFrame */

/** Event types after which the server closes a run's stream. */
export const TERMINAL_EVENTS = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/**
 * An incremental parser of the SSE wire format (lines ended by CRLF, LF or CR, split
 * anywhere across chunks; `id` is sticky, as the spec says).
 */
export function createSseParser() {
  let buffer = '';
  let carriageReturn = false;
  let lastEventId = '';
  let event = '';
  /** @type {string[]} */
  let data = [];
  /** @type {number | undefined} */
  let retry;

  /**
   * @param {string} line
   * @param {SseFrame[]} frames
   */
  const take = (line, frames) => {
    if (line === '') {
      if (data.length > 0) frames.push({ id: lastEventId, event: event || 'message', data: data.join('\n') });
      event = '';
      data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id' && !value.includes('\0')) lastEventId = value;
    else if (field === 'retry' && /^\d+$/.test(value)) retry = Number(value);
  };

  return {
    /**
     * Feeds decoded text; returns the frames it completed.
     * @param {string} chunk
     */
    push(chunk) {
      /** @type {SseFrame[]} */
      const frames = [];
      let text = chunk;
      // A CR that ended the previous chunk and an LF starting this one are one line end.
      if (carriageReturn && text.startsWith('\n')) text = text.slice(1);
      carriageReturn = false;
      buffer += text;
      let start = 0;
      for (let index = 0; index < buffer.length; index++) {
        const character = buffer[index];
        if (character !== '\n' && character !== '\r') continue;
        take(buffer.slice(start, index), frames);
        if (character === '\r') {
          if (index + 1 === buffer.length) carriageReturn = true;
          else if (buffer[index + 1] === '\n') index++;
        }
        start = index + 1;
      }
      buffer = buffer.slice(start);
      return frames;
    },
    /** The reconnection delay the server asked for, if it did. */
    get retry() {
      return retry;
    },
  };
}

/**
 * @typedef {'connecting' | 'live' | 'reconnecting' | 'ended'} StreamState
 * @typedef {{ reconnects: number, failures: number, error?: unknown }} StreamProgress `reconnects`:
 *   how often the stream came back after a loss; `failures`: the connections lost or refused
 *   in a row; `error`: the server's error answer to the last attempt (a 500, a 429), if it was one
 */

/**
 * Follows an event stream until its terminal event (or until `signal` aborts). Reconnects
 * after a dropped connection, sending the last event id seen. A refusal (4xx) is thrown as
 * an `ApiError`; server errors and network failures are retried.
 * @param {{
 *   url: URL,
 *   signal: AbortSignal,
 *   onFrame: (frame: SseFrame) => void,
 *   onState: (state: StreamState, progress: StreamProgress) => void,
 *   isFinished: () => Promise<boolean>,
 * }} options `isFinished` is asked when a stream ends cleanly with no event in it, which
 *   the server does when resumed after the run's last event (a proxy may do it too)
 */
export async function followEvents({ url, signal, onFrame, onState, isFinished }) {
  let lastEventId = '';
  let reconnects = 0;
  let failures = 0;
  let wasLive = false;
  let lost = false;
  /** @type {unknown} */
  let refusal;
  /** @type {number | undefined} */
  let serverRetry;
  const progress = () => ({ reconnects, failures, ...(refusal === undefined ? {} : { error: refusal }) });
  while (!signal.aborted) {
    onState(lost ? 'reconnecting' : 'connecting', progress());
    const headers = authHeaders({ accept: 'text/event-stream' });
    if (lastEventId !== '') headers['last-event-id'] = lastEventId;
    let received = 0;
    let ended = false;
    let closedByServer = false;
    try {
      const response = await fetch(url, { headers, signal, cache: 'no-store' });
      if (!response.ok) {
        const error = await errorOf(response);
        if (isRefusal(error)) throw error;
        refusal = error;
      } else if (response.body) {
        if (wasLive) reconnects += 1;
        wasLive = true;
        refusal = undefined;
        onState('live', progress());
        const parser = createSseParser();
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        try {
          while (!ended) {
            const { value, done } = await reader.read();
            if (done) {
              closedByServer = true;
              break;
            }
            for (const frame of parser.push(value)) {
              if (frame.id !== '') lastEventId = frame.id;
              received += 1;
              onFrame(frame);
              if (TERMINAL_EVENTS.has(frame.event)) ended = true;
            }
          }
        } finally {
          serverRetry = parser.retry ?? serverRetry;
          reader.cancel().catch(() => {});
        }
      }
    } catch (error) {
      if (signal.aborted) return;
      if (isRefusal(error)) throw error;
      // A dropped connection or an unreachable server: reconnect below.
    }
    if (!ended && closedByServer && received === 0) {
      try {
        ended = await isFinished();
      } catch (error) {
        if (signal.aborted) return;
        if (isRefusal(error)) throw error;
      }
    }
    if (ended) {
      onState('ended', progress());
      return;
    }
    failures = received > 0 ? 1 : failures + 1;
    lost = true;
    // Quick first retry, then doubling up to the server's `retry` (3 s).
    const delay = Math.min(serverRetry ?? 3000, 250 * 2 ** (failures - 1));
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, delay);
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve(undefined)), { once: true });
    });
  }
}

/**
 * A 4xx answer other than 429: retrying would get the same.
 * @param {unknown} error
 */
function isRefusal(error) {
  return error instanceof ApiError && error.status >= 400 && error.status < 500 && error.status !== 429;
}
