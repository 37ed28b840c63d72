import type { Context } from 'hono';
import { stream } from 'hono/streaming';
import { TERMINAL_EVENT_TYPES } from '../storage/event-hub.js';
import type { EventHub } from '../storage/event-hub.js';
import type { RunEvent, RunStore } from '../storage/run-store.js';
import type { FaultReporter } from '../core/fault.js';
import { isRunOpen } from '../storage/run-store.js';

/** Options of {@link streamRunEvents}. */
export interface StreamRunEventsOptions {
  readonly runId: string;
  readonly runStore: RunStore;
  readonly hub: EventHub;
  /** Interval of `: heartbeat` comments while idle. @default 15000 */
  readonly heartbeatMs?: number;
  /** Told when the stream fails (the store cannot be read, say); the stream then sends an `error` event and ends. */
  readonly onFault?: FaultReporter;
  /** Called once when the stream ends, however it ends. */
  readonly onClose?: () => void;
  /**
   * How long one frame may wait for the client to take it: a client that stopped reading
   * (its socket buffers full) is dropped then, freeing its stream slot. @default 30000
   */
  readonly writeTimeoutMs?: number;
}

/** The run each request answered with a run's event stream streams; see {@link runStreamedTo}. */
const streamedRuns = new WeakMap<Request, string>();

/**
 * The run whose events `request` was answered with, if it was answered with a run's event
 * stream: a shutting-down server lets the streams of ended runs write their last event.
 */
export function runStreamedTo(request: Request): string | undefined {
  return streamedRuns.get(request);
}

/** The Content-Type of a run's event stream. */
export const EVENT_STREAM_CONTENT_TYPE = 'text/event-stream; charset=utf-8';

/** One SSE frame as the reference writes it: id, retry, event, data. */
export function formatFrame(event: RunEvent): string {
  const data = JSON.stringify({
    id: event.id,
    run_id: event.runId,
    type: event.type,
    timestamp: event.timestamp,
    payload: event.payload,
  });
  return `id: ${event.id}\nretry: 3000\nevent: ${event.type}\ndata: ${data}\n\n`;
}

/**
 * The seq to resume after, from a `Last-Event-ID` of `<run_id>:<seq>` (or a bare seq) in
 * decimal digits; anything else replays from the start (-1).
 */
export function resumeAfter(header: string | undefined, runId: string): number {
  if (!header) return -1;
  const value = header.trim();
  const seqText = value.startsWith(`${runId}:`) ? value.slice(runId.length + 1) : value;
  if (!/^\d{1,15}$/.test(seqText)) return -1;
  return Number(seqText);
}

/**
 * Streams a run's events: the stored history after `Last-Event-ID`, then live events,
 * heartbeats while idle, and the end after a terminal event. The store is the source of
 * truth: a live event only wakes the writer, so a slow client never holds events in
 * memory or stalls the run.
 */
export function streamRunEvents(context: Context, options: StreamRunEventsOptions): Response {
  context.header('Content-Type', EVENT_STREAM_CONTENT_TYPE);
  context.header('Cache-Control', 'no-cache');
  context.header('Connection', 'keep-alive');
  context.header('X-Accel-Buffering', 'no');
  let last = resumeAfter(context.req.header('Last-Event-ID'), options.runId);
  streamedRuns.set(context.req.raw, options.runId);
  return stream(
    context,
    async (output) => {
      let wake: (() => void) | undefined;
      let pending = false;
      const unsubscribe = options.hub.subscribe(options.runId, () => {
        pending = true;
        wake?.();
      });
      let closed = false;
      // Whether the last heartbeat found the run ended without its terminal event in the stream.
      let endedWithoutEvent = false;
      output.onAbort(() => {
        closed = true;
        wake?.();
      });
      const writeTimeoutMs = options.writeTimeoutMs ?? 30_000;
      // Whether `text` was taken by the client in time; a stalled client ends the stream.
      const sent = async (text: string): Promise<boolean> => {
        let timer: NodeJS.Timeout | undefined;
        const stalled = new Promise<true>((resolve) => {
          timer = setTimeout(() => resolve(true), writeTimeoutMs);
        });
        const late = await Promise.race([output.write(text).then(() => false), stalled]);
        clearTimeout(timer);
        if (late) {
          closed = true;
          output.abort();
        }
        return !late && !closed;
      };
      try {
        while (!closed) {
          pending = false;
          const events = await options.runStore.listEvents(options.runId, last);
          for (const event of events) {
            if (!(await sent(formatFrame(event)))) return;
            last = event.seq;
            if (TERMINAL_EVENT_TYPES.has(event.type)) return;
          }
          if (pending) continue;
          // A run deleted with its conversation (memory forget) sends nothing more: say so and end.
          if (events.length === 0 && (await options.runStore.getRun(options.runId)) === undefined) {
            const message = 'the run no longer exists: its conversation was forgotten, or it passed the run retention';
            await sent(`event: error\ndata: ${JSON.stringify({ error: { code: 'run_not_found', message } })}\n\n`);
            return;
          }
          // Resumed after the terminal event (EventSource reconnects so after every close):
          // there is nothing more to send, so end instead of heartbeating forever.
          if (events.length === 0 && last >= 0) {
            const [current] = await options.runStore.listEvents(options.runId, last - 1);
            if (current && TERMINAL_EVENT_TYPES.has(current.type)) return;
            // Only Last-Event-ID can name an event that is not stored (past the run's end): that
            // replays the run from the start, as an id that does not parse does, instead of
            // waiting for events that never come.
            if (current?.seq !== last) {
              last = -1;
              continue;
            }
          }
          const timedOut = await new Promise<boolean>((resolve) => {
            // An event published while this pass awaited the store found no `wake` to call.
            if (pending || closed) {
              resolve(false);
              return;
            }
            const timer = setTimeout(() => resolve(true), options.heartbeatMs ?? 15_000);
            wake = () => {
              clearTimeout(timer);
              resolve(false);
            };
          });
          wake = undefined;
          if (timedOut && !closed) {
            // A run whose terminal event could not be stored (the store failed every time) has
            // ended all the same: seen so at two heartbeats in a row (its end and its event come
            // milliseconds apart), the stream says so and ends instead of heartbeating forever.
            const run = await options.runStore.getRun(options.runId);
            if (run && !isRunOpen(run.status)) {
              if (endedWithoutEvent) {
                const message = `the run ended (${run.status}) but its last event could not be stored; read the run for its result`;
                await sent(`event: error\ndata: ${JSON.stringify({ error: { code: 'run_ended', message } })}\n\n`);
                return;
              }
              endedWithoutEvent = true;
            }
            if (!(await sent(': heartbeat\n\n'))) return;
          }
        }
      } finally {
        unsubscribe();
        options.onClose?.();
      }
    },
    async (error, output) => {
      options.onFault?.({
        component: 'sse',
        message: 'a run event stream failed and was ended',
        error,
        runId: options.runId,
      });
      const message = 'the event stream failed; reconnect with Last-Event-ID to resume';
      await output.write(`event: error\ndata: ${JSON.stringify({ error: { code: 'internal', message } })}\n\n`);
    },
  );
}
