// @ts-check
// The runs list, newest first, with filters, and a form to start a run.
import { api, describeError, isAccessError } from './api.js';
import { h, timeOf, whileBusy } from './dom.js';
import { runHref, runsHref, scopeHref, shortId } from './links.js';
import { errorPanel, failView, formError, notify } from './notice.js';
import { pagedTable } from './paged-table.js';
import { isolatedText } from './visible-text.js';

const STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled'];

/**
 * @typedef {{
 *   run_id: string, status: string, tenant_id: string, conversation_id: string, agent_id: string,
 *   prompt: string, steps: number, created_at: string, updated_at: string,
 * }} RunItem
 */

/** @param {import('./app.js').ViewContext} context */
export async function renderRuns({ main, signal, query }) {
  const title = 'Runs';
  const filters = {
    conversation_id: query.get('conversation_id') ?? '',
    agent_id: query.get('agent_id') ?? '',
    status: query.get('status') ?? '',
    // With API keys the key names the tenant; a server without keys lists the one asked for.
    tenant_id: query.get('tenant_id') ?? '',
  };

  /** @type {HTMLElement} */
  let listing;
  try {
    const table = await pagedTable({
      caption: 'Runs',
      testId: 'runs-table',
      columns: ['Run', 'Status', 'Conversation', 'Agent', 'Prompt', 'Steps', 'Started'],
      empty: 'No runs.',
      load: (cursor) => api('/runs', { query: { ...filters, limit: 50, cursor }, signal }),
      row: (run) =>
        h(
          'tr',
          { 'data-run': run.run_id },
          h('td', {}, h('a', { href: runHref(run.run_id), title: run.run_id }, shortId(run.run_id))),
          h('td', {}, h('span', { class: `badge run-${run.status}` }, run.status)),
          h(
            'td',
            {},
            h(
              'a',
              { href: scopeHref(run.tenant_id, run.conversation_id, run.agent_id) },
              isolatedText(run.conversation_id),
            ),
          ),
          h('td', {}, isolatedText(run.agent_id)),
          h('td', { class: 'content clip' }, isolatedText(run.prompt)),
          h('td', { class: 'number' }, run.steps),
          h('td', {}, timeOf(run.created_at)),
        ),
      onError: (error) => (isAccessError(error) ? failView(main, title, error) : notify(describeError(error), 'error')),
    });
    listing = table.element;
  } catch (error) {
    if (signal.aborted) return;
    if (isAccessError(error)) {
      failView(main, title, error);
      return;
    }
    listing = errorPanel(error);
  }
  if (signal.aborted) return;
  main.append(h('h1', { tabindex: -1 }, title), filterForm(filters), listing, startForm(filters, signal));
}

/**
 * @param {{ conversation_id: string, agent_id: string, status: string, tenant_id: string }} filters
 */
function filterForm(filters) {
  const conversation = h('input', { id: 'runs-conversation', value: filters.conversation_id });
  const agent = h('input', { id: 'runs-agent', value: filters.agent_id });
  const tenant = h('input', { id: 'runs-tenant', value: filters.tenant_id, placeholder: 'default' });
  const status = h(
    'select',
    { id: 'runs-status' },
    h('option', { value: '' }, 'any'),
    STATUSES.map((name) => h('option', { value: name, selected: filters.status === name }, name)),
  );
  const form = h(
    'form',
    { class: 'filters', role: 'search' },
    h('label', { for: conversation.id }, 'Conversation'),
    conversation,
    h('label', { for: agent.id }, 'Agent'),
    agent,
    h('label', { for: status.id }, 'Status'),
    status,
    h('label', { for: tenant.id }, 'Tenant (servers without keys)'),
    tenant,
    h('button', { type: 'submit' }, 'Filter'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    location.hash = runsHref({
      conversation_id: conversation.value.trim(),
      agent_id: agent.value.trim(),
      status: status.value,
      tenant_id: tenant.value.trim(),
    });
  });
  return form;
}

/**
 * A form that starts a run (in the filtered scope, when there is one) and opens it.
 * @param {{ conversation_id: string, agent_id: string, tenant_id: string }} filters
 * @param {AbortSignal} signal
 */
function startForm(filters, signal) {
  const prompt = h('textarea', { id: 'run-prompt', rows: 3, required: true });
  const conversation = h('input', { id: 'run-conversation', value: filters.conversation_id });
  const agent = h('input', { id: 'run-agent', value: filters.agent_id });
  const problem = formError();
  const start = h('button', { type: 'submit' }, 'Start run');
  const form = h(
    'form',
    { class: 'edit-form', 'aria-labelledby': 'start-run-heading' },
    h('h2', { id: 'start-run-heading' }, 'Start a run'),
    h('label', { for: prompt.id }, 'Prompt'),
    prompt,
    h('label', { for: conversation.id }, 'Conversation (empty: a new one)'),
    conversation,
    h('label', { for: agent.id }, 'Agent (empty: the default)'),
    agent,
    problem.element,
    start,
  );
  problem.clearWhenBlocked(form);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    // A second press while the first is on its way would start a second run.
    if (start.disabled) return;
    problem.clear();
    const body = /** @type {Record<string, string>} */ ({ prompt: prompt.value });
    if (conversation.value.trim() !== '') body['conversation_id'] = conversation.value.trim();
    if (agent.value.trim() !== '') body['agent_id'] = agent.value.trim();
    if (filters.tenant_id !== '') body['tenant_id'] = filters.tenant_id;
    void whileBusy(start, async () => {
      try {
        const started = await api('/runs', { method: 'POST', json: body, signal });
        location.hash = runHref(started.run_id);
      } catch (error) {
        problem.show(error);
      }
    });
  });
  return form;
}
