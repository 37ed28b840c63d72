// @ts-check
// One run: its record, and its events as they arrive (SSE, resumed after a drop).
import { api, apiUrl, describeError, isAccessError, segment } from './api.js';
import { h, replace, timeOf } from './dom.js';
import { scopeHref } from './links.js';
import { failView } from './notice.js';
import { followEvents, TERMINAL_EVENTS } from './sse.js';
import { isolatedText, visibleText } from './visible-text.js';

const STATE_TEXT = {
  connecting: 'connecting…',
  live: 'live',
  reconnecting: 'connection lost, reconnecting…',
  ended: 'ended: the run is over',
};

/**
 * What the stream's state line says: while reconnecting, how many tries failed and the
 * server's error answer (a 500 or a 429 is not a lost connection); once back, how often it
 * came back.
 * @param {import('./sse.js').StreamState} state
 * @param {import('./sse.js').StreamProgress} progress
 */
function stateText(state, { reconnects, failures, error }) {
  if (state !== 'reconnecting') {
    return `${STATE_TEXT[state]}${reconnects > 0 ? ` (reconnected ${reconnects}×)` : ''}`;
  }
  const tries = failures > 1 ? ` (${failures} tries failed)` : '';
  if (error === undefined) return `${STATE_TEXT[state]}${tries}`;
  return `the server answered with an error, retrying…${tries} ${describeError(error)}`;
}

/** @param {import('./app.js').ViewContext} context */
export async function renderRun({ main, signal, params }) {
  const [runId = ''] = params;
  const path = `/runs/${segment(runId)}`;
  const title = `Run ${runId}`;
  /** @type {any} */
  let run;
  try {
    run = await api(path, { signal });
  } catch (error) {
    if (!signal.aborted) failView(main, title, error);
    return;
  }
  if (signal.aborted) return;

  const summary = h('dl', { class: 'run-summary', 'data-testid': 'run-summary' });
  const showRun = () =>
    replace(
      summary,
      h('dt', {}, 'Status'),
      h('dd', {}, h('span', { class: `badge run-${run.status}`, 'data-testid': 'run-status' }, run.status)),
      h('dt', {}, 'Scope'),
      h(
        'dd',
        {},
        h(
          'a',
          { href: scopeHref(run.tenant_id, run.conversation_id, run.agent_id) },
          isolatedText(run.conversation_id),
          ' / ',
          isolatedText(run.agent_id),
        ),
      ),
      h('dt', {}, 'Prompt'),
      h('dd', { class: 'wrap', 'data-testid': 'run-prompt' }, isolatedText(run.prompt ?? '')),
      h('dt', {}, 'Output'),
      h('dd', { class: 'wrap', 'data-testid': 'run-output' }, isolatedText(run.output ?? '–')),
      run.error
        ? [h('dt', {}, 'Error'), h('dd', { class: 'wrap warn' }, isolatedText(JSON.stringify(run.error)))]
        : null,
      h('dt', {}, 'Steps'),
      h('dd', {}, `${run.steps ?? 0} of at most ${run.max_steps ?? '?'}`),
      h('dt', {}, 'Tokens'),
      h('dd', {}, `${run.usage?.input_tokens ?? 0} in, ${run.usage?.output_tokens ?? 0} out`),
      h('dt', {}, 'Started'),
      h('dd', {}, timeOf(run.created_at)),
    );
  showRun();

  const state = h('p', { class: 'live-state', role: 'status', 'data-testid': 'stream-state' });
  const count = h('p', { class: 'muted', 'data-testid': 'event-count' }, '0 events');
  const list = h('ol', { class: 'events', 'data-testid': 'events', 'aria-label': 'Events' });
  main.append(
    h('h1', { tabindex: -1 }, title),
    summary,
    h(
      'section',
      { 'aria-labelledby': 'events-heading' },
      h('h2', { id: 'events-heading' }, 'Events'),
      state,
      count,
      list,
    ),
  );

  let shown = 0;
  const reload = async () => {
    try {
      run = await api(path, { signal });
      showRun();
    } catch (error) {
      if (!signal.aborted && isAccessError(error)) failView(main, title, error);
    }
  };
  try {
    await followEvents({
      url: apiUrl(`${path}/events`),
      signal,
      onState: (next, progress) => {
        state.dataset['state'] = next;
        state.dataset['reconnects'] = String(progress.reconnects);
        replace(state, stateText(next, progress));
      },
      onFrame: (frame) => {
        list.appendChild(eventItem(frame));
        shown += 1;
        count.textContent = `${shown} event${shown === 1 ? '' : 's'}`;
        if (TERMINAL_EVENTS.has(frame.event) || frame.event === 'run.step.completed') void reload();
      },
      isFinished: async () => {
        run = await api(path, { signal });
        return ['completed', 'failed', 'cancelled'].includes(run.status);
      },
    });
  } catch (error) {
    if (signal.aborted) return;
    if (isAccessError(error)) failView(main, title, error);
    else replace(state, h('span', { class: 'warn' }, describeError(error)));
  }
}

/**
 * One event: its sequence number, type and time, and its payload on demand.
 * @param {import('./sse.js').SseFrame} frame
 */
function eventItem(frame) {
  /** @type {{ type?: string, timestamp?: string, payload?: unknown }} */
  let data = {};
  try {
    data = JSON.parse(frame.data);
  } catch {
    data = { payload: frame.data };
  }
  const seq = frame.id.slice(frame.id.lastIndexOf(':') + 1);
  return h(
    'li',
    { 'data-event-id': frame.id, 'data-type': frame.event },
    h(
      'details',
      {},
      h(
        'summary',
        {},
        h('span', { class: 'event-seq' }, `#${seq}`),
        ' ',
        h('span', { class: 'event-type' }, frame.event),
        ' ',
        timeOf(data.timestamp),
      ),
      // JSON reads left to right, whatever the strings in it hold.
      h('pre', { class: 'wrap', dir: 'ltr' }, visibleText(JSON.stringify(data.payload ?? {}, null, 2))),
    ),
  );
}
