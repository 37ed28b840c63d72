// @ts-check
// A scope's operation log: observe, reflect and hand corrections, with attempts and errors;
// dead operations can be retried.
import { api, isGoneRow } from './api.js';
import { h, timeOf, whileBusy } from './dom.js';
import { runHref, shortId } from './links.js';
import { pagedTable } from './paged-table.js';

/**
 * @typedef {{
 *   operation_id: string, operation_type: string, status: string, scope_sequence: number,
 *   attempt: number, error: string | null, run_id: string | null, created_at: string, updated_at: string,
 * }} OperationItem
 */

const STATUSES = ['queued', 'processing', 'applied', 'failed', 'dead'];

/** @param {import('./scope-observations.js').PanelOptions} options */
export async function operationsPanel({ base, signal, onError, onChanged }) {
  let status = '';
  const select = h(
    'select',
    { id: 'operation-status' },
    h('option', { value: '' }, 'any'),
    STATUSES.map((name) => h('option', { value: name }, name)),
  );
  select.addEventListener('change', () => {
    status = select.value;
    table.reload().catch(onError);
  });

  /** @param {OperationItem} item */
  const retryButton = (item) => {
    const button = h('button', { type: 'button', 'aria-label': `Retry operation ${item.operation_id}` }, 'Retry');
    button.addEventListener('click', () =>
      whileBusy(button, async () => {
        try {
          await api(`${base}/operations/${encodeURIComponent(item.operation_id)}/retry`, {
            method: 'POST',
            json: {},
            signal,
          });
        } catch (error) {
          onError(error);
          // Retried or gone meanwhile elsewhere: the table is brought up to date.
          if (isGoneRow(error)) onChanged();
          return;
        }
        onChanged();
      }),
    );
    return button;
  };

  const table = await pagedTable({
    caption: 'Operation log',
    testId: 'operations-table',
    columns: ['Seq', 'Type', 'Status', 'Attempt', 'Error', 'Run', 'Created', 'Updated', ''],
    empty: 'No operations.',
    key: (item) => item.operation_id,
    load: (cursor) => api(`${base}/operations`, { query: { status, limit: 50, cursor }, signal }),
    row: (item) =>
      h(
        'tr',
        { 'data-operation': item.operation_id },
        h('td', { class: 'number', title: item.operation_id }, item.scope_sequence),
        h('td', {}, item.operation_type),
        h('td', {}, h('span', { class: `badge op-${item.status}` }, item.status)),
        h('td', { class: 'number' }, item.attempt),
        h('td', { class: 'content' }, item.error ?? ''),
        h('td', {}, item.run_id ? h('a', { href: runHref(item.run_id) }, shortId(item.run_id)) : '–'),
        h('td', {}, timeOf(item.created_at)),
        h('td', {}, timeOf(item.updated_at)),
        h('td', {}, item.status === 'dead' ? retryButton(item) : null),
      ),
    onError,
  });
  return {
    element: h(
      'div',
      {},
      h('div', { class: 'filters' }, h('label', { for: select.id }, 'Status'), select),
      table.element,
    ),
    refresh: table.refresh,
  };
}
