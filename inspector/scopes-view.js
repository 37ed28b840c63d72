// @ts-check
// The list of the tenant's memory scopes: search, enabled filter, pages.
import { api, describeError, isAccessError } from './api.js';
import { h, numberText, timeOf } from './dom.js';
import { scopeHref } from './links.js';
import { errorPanel, failView, notify } from './notice.js';
import { pagedTable } from './paged-table.js';

/**
 * @typedef {{
 *   tenant_id: string, conversation_id: string, agent_id: string, enabled: boolean,
 *   observations: number, working_memory_entries: number, pending_operations: number,
 *   dead_operations: number, last_activity_at: string | null,
 * }} ListedScope
 */

/** @param {import('./app.js').ViewContext} context */
export async function renderScopes({ main, signal, query }) {
  const title = 'Memory scopes';
  const search = query.get('q') ?? '';
  const enabled = query.get('enabled') ?? '';
  // With API keys the key names the tenant; a server without keys lists the one asked for.
  const tenant = query.get('tenant_id') ?? '';

  const searchInput = h('input', { id: 'scope-search', name: 'q', type: 'search', value: search });
  const tenantInput = h('input', { id: 'scope-tenant', name: 'tenant_id', value: tenant, placeholder: 'default' });
  const enabledSelect = h(
    'select',
    { id: 'scope-enabled', name: 'enabled' },
    h('option', { value: '', selected: enabled === '' }, 'any'),
    h('option', { value: 'true', selected: enabled === 'true' }, 'enabled'),
    h('option', { value: 'false', selected: enabled === 'false' }, 'disabled'),
  );
  const filters = h(
    'form',
    { class: 'filters', role: 'search' },
    h('label', { for: 'scope-search' }, 'Search conversation or agent'),
    searchInput,
    h('label', { for: 'scope-enabled' }, 'Observational memory'),
    enabledSelect,
    h('label', { for: 'scope-tenant' }, 'Tenant (servers without keys)'),
    tenantInput,
    h('button', { type: 'submit' }, 'Search'),
  );
  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    if (searchInput.value.trim() !== '') next.set('q', searchInput.value.trim());
    if (enabledSelect.value !== '') next.set('enabled', enabledSelect.value);
    if (tenantInput.value.trim() !== '') next.set('tenant_id', tenantInput.value.trim());
    const text = next.toString();
    location.hash = `#/scopes${text === '' ? '' : `?${text}`}`;
  });

  /** @type {HTMLElement} */
  let listing;
  try {
    const table = await pagedTable({
      caption: 'Memory scopes',
      testId: 'scope-table',
      columns: [
        'Conversation',
        'Agent',
        'Tenant',
        'Memory',
        'Observations',
        'Working memory',
        'Pending',
        'Dead',
        'Last activity',
      ],
      empty: search === '' && enabled === '' ? 'No memory scopes yet.' : 'No scope matches.',
      load: (cursor) => api('/memory', { query: { q: search, enabled, tenant_id: tenant, limit: 50, cursor }, signal }),
      row: (scope) =>
        h(
          'tr',
          {},
          h(
            'td',
            {},
            h('a', { href: scopeHref(scope.tenant_id, scope.conversation_id, scope.agent_id) }, scope.conversation_id),
          ),
          h('td', {}, scope.agent_id),
          h('td', {}, scope.tenant_id),
          h('td', {}, h('span', { class: scope.enabled ? 'badge on' : 'badge off' }, scope.enabled ? 'on' : 'off')),
          h('td', { class: 'number' }, numberText(scope.observations)),
          h('td', { class: 'number' }, numberText(scope.working_memory_entries)),
          h('td', { class: 'number' }, numberText(scope.pending_operations)),
          h('td', { class: `number${scope.dead_operations > 0 ? ' warn' : ''}` }, numberText(scope.dead_operations)),
          h('td', {}, timeOf(scope.last_activity_at)),
        ),
      onError: (error) => {
        if (isAccessError(error)) failView(main, title, error);
        else notify(describeError(error), 'error');
      },
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
  main.append(h('h1', { tabindex: -1 }, title), filters, listing);
}
