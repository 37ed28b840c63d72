// @ts-check
// One memory scope: what the next turn's snippets hold, how close the next observe and
// reflection are (polled every 2 s), its observations, reflection, working memory and
// operation log, and the buttons that control it.
import { api, apiBlob, describeError, isAccessError, segment } from './api.js';
import { bar, confirmButton, h, replace, whileBusy } from './dom.js';
import { runsHref } from './links.js';
import { failView, notify } from './notice.js';
import { observationsPanel } from './scope-observations.js';
import { operationsPanel } from './scope-operations.js';
import { workingMemoryPanel } from './scope-working-memory.js';

/** How often the scope is read again while shown. */
const POLL_MS = 2000;

/** @param {import('./app.js').ViewContext} context */
export async function renderScope({ main, signal, params }) {
  const [tenant = '', conversation = '', agent = ''] = params;
  const base = `/memory/${segment(tenant)}/${segment(conversation)}/${segment(agent)}`;
  const title = `Scope ${conversation} / ${agent}`;
  /** @param {unknown} error */
  const fail = (error) => {
    if (signal.aborted) return;
    stopped = true;
    failView(main, title, error);
  };
  /** @param {unknown} error */
  const report = (error) => {
    if (signal.aborted) return;
    if (isAccessError(error)) fail(error);
    else notify(describeError(error), 'error');
  };
  let stopped = false;

  /** @type {any} */
  let detail;
  /** @type {Awaited<ReturnType<typeof observationsPanel>>} */
  let observations;
  /** @type {Awaited<ReturnType<typeof operationsPanel>>} */
  let operations;
  try {
    detail = await api(base, { signal });
    [observations, operations] = await Promise.all([
      observationsPanel({
        base,
        signal,
        onError: report,
        onChanged: () => void refresh(),
        isEnabled: () => detail.status?.enabled === true,
      }),
      operationsPanel({ base, signal, onError: report, onChanged: () => void refresh() }),
    ]);
  } catch (error) {
    fail(error);
    return;
  }
  if (signal.aborted) return;
  const workingMemory = workingMemoryPanel({ base, signal, onError: report, onChanged: () => void refresh() });

  const statusLine = h('p', { class: 'status-line', 'data-testid': 'scope-status' });
  const snippets = h('div', { class: 'snippets' });
  const progress = h('div', { class: 'progress' });
  const liveState = h('p', { class: 'live-state', role: 'status', 'data-testid': 'memory-state' });
  const reflection = h('div', { class: 'reflection', 'data-testid': 'reflection' });

  /** What each part last showed: a part is redrawn only when its data changed, so a poll keeps selections. */
  const drawn = new Map();
  /**
   * @param {string} part
   * @param {unknown} data
   * @param {() => void} draw
   */
  const redraw = (part, data, draw) => {
    const text = JSON.stringify(data) ?? '';
    if (drawn.get(part) === text) return;
    drawn.set(part, text);
    draw();
  };
  const show = () => {
    const status = detail.status ?? {};
    redraw('status', status, () =>
      replace(
        statusLine,
        h('span', { class: status.enabled ? 'badge on' : 'badge off' }, status.enabled ? 'enabled' : 'disabled'),
        ` ${status.observation_count ?? 0} observations · ${status.pending_operations ?? 0} pending · `,
        h('span', { class: status.dead_operations > 0 ? 'warn' : '' }, `${status.dead_operations ?? 0} dead`),
        ' operations',
      ),
    );
    redraw('snippets', [detail.snippets, detail.progress, status.config], () => showSnippets(snippets, detail));
    redraw('progress', [detail.progress, status.pending_operations], () => showProgress(progress, liveState, detail));
    redraw('reflection', [detail.structured_reflection, detail.reflection], () => showReflection(reflection, detail));
    workingMemory.update(detail.working_memory ?? []);
  };

  /** The last state seen, to refresh the tables only after a change. */
  let seen = stateKey(detail);
  const refresh = async () => {
    try {
      detail = await api(base, { signal });
    } catch (error) {
      if (signal.aborted) return;
      if (isAccessError(error)) fail(error);
      else {
        replace(liveState, h('span', { class: 'warn' }, `Not updated: ${describeError(error)}`));
        // The next answer writes the live line again, even when its progress is unchanged.
        liveState.dataset['state'] = 'not updated';
        drawn.delete('progress');
      }
      return;
    }
    if (signal.aborted || stopped) return;
    show();
    const key = stateKey(detail);
    if (key !== seen) {
      seen = key;
      observations.refresh().catch(report);
      operations.refresh().catch(report);
    }
  };

  const actions = scopeActions({ base, conversation, agent, signal, report, refresh });
  main.append(
    h('h1', { tabindex: -1 }, title),
    h(
      'div',
      { class: 'scope-head' },
      h(
        'dl',
        { class: 'scope-ids' },
        h('dt', {}, 'Tenant'),
        h('dd', {}, tenant),
        h('dt', {}, 'Conversation'),
        h('dd', {}, conversation),
        h('dt', {}, 'Agent'),
        h('dd', {}, agent),
      ),
      h(
        'a',
        { href: runsHref({ conversation_id: conversation, agent_id: agent, tenant_id: tenant }) },
        'Runs of this scope',
      ),
    ),
    actions,
    statusLine,
    section('Next turn’s snippets', 'snippets-heading', snippets),
    section('Progress', 'progress-heading', progress, liveState),
    section('Observations', 'observations-heading', observations.element),
    section('Reflection', 'reflection-heading', reflection),
    section('Working memory', 'working-memory-heading', workingMemory.element),
    section('Operation log', 'operations-heading', operations.element),
  );
  show();

  // Poll with a timeout chain (not an interval), so a slow answer never piles requests up.
  const tick = async () => {
    if (signal.aborted || stopped) return;
    // A hidden tab skips its reads; the next visible tick catches up.
    if (!document.hidden) await refresh();
    if (!signal.aborted && !stopped) timer = setTimeout(tick, POLL_MS);
  };
  let timer = setTimeout(tick, POLL_MS);
  signal.addEventListener('abort', () => clearTimeout(timer));
}

/**
 * What changes when the tables may have changed.
 * @param {any} detail
 */
function stateKey(detail) {
  const status = detail.status ?? {};
  return [status.state_version, status.pending_operations, status.dead_operations, status.enabled].join(':');
}

/**
 * @param {string} name
 * @param {string} id
 * @param {...Node} content
 */
function section(name, id, ...content) {
  return h('section', { 'aria-labelledby': id }, h('h2', { id }, name), ...content);
}

/**
 * The snippets exactly as the model will see them, and the budget bar.
 * @param {HTMLElement} into
 * @param {any} detail
 */
function showSnippets(into, detail) {
  const snippets = detail.snippets ?? {};
  const progress = detail.progress;
  const maxTokens = progress?.snippet_max_tokens ?? detail.status?.config?.snippet_max_tokens ?? 0;
  /** @param {string} label @param {string} id @param {unknown} text */
  const block = (label, id, text) =>
    h(
      'figure',
      { class: 'snippet' },
      h('figcaption', {}, label, text === '' ? h('span', { class: 'muted' }, ' (empty: nothing is added)') : null),
      // Focusable so the keyboard can scroll a long snippet; named, since it may be empty.
      h('pre', { 'data-testid': id, tabindex: 0, 'aria-label': label }, typeof text === 'string' ? text : ''),
    );
  replace(
    into,
    progress
      ? bar({ label: 'Snippet budget used', value: progress.snippet_tokens ?? 0, max: maxTokens, id: 'budget-bar' })
      : h('p', { class: 'muted' }, `Snippet budget: ${maxTokens} tokens.`),
    block('Working memory', 'snippet-working-memory', snippets.working_memory ?? ''),
    block('Observational memory', 'snippet-observational-memory', snippets.observational_memory ?? ''),
  );
}

/**
 * The two progress bars and the live state.
 * @param {HTMLElement} into
 * @param {HTMLElement} liveState
 * @param {any} detail
 */
function showProgress(into, liveState, detail) {
  const progress = detail.progress;
  const status = detail.status ?? {};
  if (!progress) {
    replace(into, h('p', { class: 'muted' }, 'This server does not report progress.'));
  } else {
    replace(
      into,
      bar({
        label: 'Unobserved messages until the next observe',
        value: progress.unobserved_tokens ?? 0,
        max: progress.observe_min_tokens ?? 0,
        id: 'observe-bar',
      }),
      bar({
        label: 'Observations since the last reflection',
        value: progress.unreflected_observation_tokens ?? 0,
        max: progress.reflect_threshold_tokens ?? 0,
        id: 'reflect-bar',
      }),
    );
  }
  const state = progress?.observing
    ? 'observing…'
    : progress?.reflecting
      ? 'reflecting…'
      : status.pending_operations > 0
        ? 'operations queued…'
        : 'idle';
  // Only a change is written, so screen readers announce changes and not every poll.
  if (liveState.dataset['state'] !== state) {
    liveState.dataset['state'] = state;
    replace(
      liveState,
      h('span', { class: 'muted' }, 'Memory work: '),
      h('span', { class: state === 'idle' ? 'state idle' : 'state busy' }, state),
    );
  }
}

/**
 * The reflection: its summary, supersessions and contradictions (or the raw text).
 * @param {HTMLElement} into
 * @param {any} detail
 */
function showReflection(into, detail) {
  const structured = detail.structured_reflection;
  if (!structured) {
    const raw = typeof detail.reflection === 'string' ? detail.reflection : '';
    replace(into, raw === '' ? h('p', { class: 'muted' }, 'No reflection yet.') : h('pre', { class: 'wrap' }, raw));
    return;
  }
  /** @type {Array<{ newer_seq: number, older_seq: number, reason: string }>} */
  const supersessions = structured.supersessions ?? [];
  /** @type {Array<{ seq_a: number, seq_b: number, detail: string }>} */
  const contradictions = structured.contradictions ?? [];
  replace(
    into,
    h('h3', {}, 'Summary'),
    h('p', { class: 'wrap', 'data-testid': 'reflection-summary' }, structured.summary ?? ''),
    h('h3', {}, `Supersessions (${supersessions.length})`),
    supersessions.length === 0
      ? h('p', { class: 'muted' }, 'None.')
      : h(
          'ul',
          {},
          supersessions.map((item) =>
            h('li', {}, `#${item.newer_seq} supersedes #${item.older_seq}`, item.reason ? `: ${item.reason}` : ''),
          ),
        ),
    h('h3', {}, `Contradictions (${contradictions.length})`),
    contradictions.length === 0
      ? h('p', { class: 'muted' }, 'None.')
      : h(
          'ul',
          {},
          contradictions.map((item) =>
            h('li', {}, `#${item.seq_a} contradicts #${item.seq_b}`, item.detail ? `: ${item.detail}` : ''),
          ),
        ),
  );
}

/**
 * Enable, disable, reflect now, export and forget.
 * @param {{ base: string, conversation: string, agent: string, signal: AbortSignal,
 *   report: (error: unknown) => void, refresh: () => Promise<void> }} options
 */
function scopeActions({ base, conversation, agent, signal, report, refresh }) {
  /**
   * @param {string} label
   * @param {() => Promise<string>} act returns the notice to show
   */
  const action = (label, act) => {
    const button = h('button', { type: 'button' }, label);
    button.addEventListener('click', () =>
      whileBusy(button, async () => {
        try {
          notify(await act());
          await refresh();
        } catch (error) {
          if (!signal.aborted) report(error);
        }
      }),
    );
    return button;
  };
  /** @param {string} path */
  const post = (path) => api(`${base}${path}`, { method: 'POST', json: {}, signal });
  /** @param {'json' | 'markdown'} format */
  const exportAs = async (format) => {
    const blob = await apiBlob(`${base}/observational/export`, { query: { format }, signal });
    const url = URL.createObjectURL(blob);
    const name = `memory-${conversation}-${agent}.${format === 'json' ? 'json' : 'md'}`.replace(/[^\w.-]+/g, '_');
    const link = h('a', { href: url, download: name, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    return `Exported ${name}.`;
  };
  return h(
    'div',
    { class: 'actions', role: 'group', 'aria-label': 'Scope actions' },
    action('Enable', async () => (await post('/observational/enable'), 'Observational memory enabled.')),
    action('Disable', async () => (await post('/observational/disable'), 'Observational memory disabled.')),
    action('Reflect now', async () => reflectNotice(await post('/observational/reflect'))),
    action('Export JSON', () => exportAs('json')),
    action('Export Markdown', () => exportAs('markdown')),
    confirmButton({
      label: 'Forget…',
      question: 'Forget this scope? Its observations, reflection, working memory and messages are deleted.',
      confirmLabel: 'Forget permanently',
      onConfirm: async () => {
        try {
          await api(base, { method: 'DELETE', signal });
        } catch (error) {
          report(error);
          return;
        }
        notify(`Forgot ${conversation} / ${agent}.`, 'info', { keepAcrossNavigation: true });
        location.hash = '#/scopes';
      },
    }),
  );
}

/**
 * What a `Reflect now` answer says: done, queued behind the scope's other work, or why not.
 * @param {{ reflected?: boolean, queued?: boolean, status?: { enabled?: boolean } }} answer
 */
function reflectNotice(answer) {
  if (answer.reflected) return 'Reflection done.';
  if (answer.queued) return 'Reflection queued: it runs after the scope’s other memory work.';
  if (answer.status?.enabled === false) return 'Observational memory is off for this scope: enable it to reflect.';
  return 'Nothing to reflect on yet.';
}
